// The one parallel idiom of edgeattn: oneTBB loops over precomputed chunks.
//
// Kernels never create arenas or global controls; they call `parallel_for_chunks` over a fixed
// list of chunk boundaries (rows balanced by edge count, see graph/partition.hpp). Because chunks
// depend only on the data, never on the thread count, any per-chunk partial result combined in
// chunk order is bit-identical for 1 and N threads.
//
// Applications limit threads with `ThreadLimit` (a scoped oneTBB global_control):
//   edgeattn::ThreadLimit limit(2);   // in main(), not in library code
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace edgeattn {

/// Runs `body(chunk_index, begin, end)` for every chunk [bounds[c], bounds[c+1]), in parallel.
/// `bounds` must be non-decreasing; empty chunks are skipped.
template <class Body>
void parallel_for_chunks(std::span<const int64_t> bounds, Body&& body) {
  if (bounds.size() < 2) return;
  const size_t chunks = bounds.size() - 1;
  tbb::parallel_for(
      tbb::blocked_range<size_t>(0, chunks, 1),
      [&](const tbb::blocked_range<size_t>& r) {
        for (size_t c = r.begin(); c != r.end(); ++c)
          if (bounds[c] < bounds[c + 1]) body(c, bounds[c], bounds[c + 1]);
      },
      tbb::simple_partitioner());
}

/// Runs `body(begin, end)` over [begin, end) split into pieces of at most `grain` items.
/// The split is fixed by `grain` alone, so per-piece results are thread-count independent.
template <class Body>
void parallel_for(int64_t begin, int64_t end, int64_t grain, Body&& body) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  const int64_t pieces = (end - begin + grain - 1) / grain;
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, pieces, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t p = r.begin(); p != r.end(); ++p) {
          const int64_t b = begin + p * grain;
          const int64_t e = b + grain < end ? b + grain : end;
          body(b, e);
        }
      },
      tbb::simple_partitioner());
}

/// The smallest i in [begin, end) with pred(i), or `end` if there is none, searched in parallel
/// pieces of `grain`. The answer does not depend on the thread count. `pred` should be cheap and
/// side-effect free: each piece tests blocks of 256 items without branching (so the test
/// vectorises) and looks for the first hit only in a block that has one.
///   const int64_t bad = parallel_find_first(0, n, 1 << 16, [&](int64_t k) { return ids[k] >= n; });
template <class Pred>
int64_t parallel_find_first(int64_t begin, int64_t end, int64_t grain, Pred&& pred) {
  constexpr int64_t kBlock = 256;
  std::atomic<int64_t> first{end};
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    for (int64_t block = b; block < e; block += kBlock) {
      if (block >= first.load(std::memory_order_relaxed)) return;  // an earlier hit is known
      const int64_t block_end = block + kBlock < e ? block + kBlock : e;
      bool any = false;
      for (int64_t i = block; i < block_end; ++i) any |= static_cast<bool>(pred(i));
      if (!any) continue;
      int64_t i = block;
      while (!pred(i)) ++i;
      int64_t seen = first.load(std::memory_order_relaxed);
      while (i < seen && !first.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
      }
      return;
    }
  });
  return first.load(std::memory_order_relaxed);
}

/// Number of threads oneTBB will use for loops started now.
int max_threads();

/// Scoped limit on the number of worker threads, for applications (CLI, benchmarks, tests).
/// Library code never creates one.
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgeattn
