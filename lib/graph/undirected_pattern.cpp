#include "undirected_pattern.hpp"

#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::detail {

Graph undirected_pattern(const Graph& graph) {
  const int64_t n = graph.num_dst();
  const auto row_ptr = graph.row_ptr();
  std::vector<int32_t> src(graph.col_idx().begin(), graph.col_idx().end());
  std::vector<int32_t> dst(src.size());
  parallel_for(0, n, 2048, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      for (int64_t p = row_ptr[static_cast<size_t>(i)]; p < row_ptr[static_cast<size_t>(i) + 1]; ++p)
        dst[static_cast<size_t>(p)] = static_cast<int32_t>(i);
  });
  return build_graph(n, n, std::span<const int32_t>(src), std::span<const int32_t>(dst),
                     {.self_loops = SelfLoops::remove, .duplicates = Duplicates::merge, .symmetrize = true});
}

}  // namespace edgeattn::detail
