#include "edgeattn/core/parallel.hpp"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include "edgeattn/core/error.hpp"

namespace edgeattn {

int max_threads() {
  return static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

struct ThreadLimit::Impl {
  explicit Impl(int threads)
      : control(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads)) {}
  tbb::global_control control;
};

ThreadLimit::ThreadLimit(int threads) {
  if (threads < 1) raise<InvalidArgument>("ThreadLimit: threads is ", threads, ", expected >= 1");
  impl_ = std::make_unique<Impl>(threads);
}

ThreadLimit::~ThreadLimit() = default;

}  // namespace edgeattn
