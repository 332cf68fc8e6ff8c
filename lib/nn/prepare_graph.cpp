#include "edgeattn/nn/prepare_graph.hpp"

#include <algorithm>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::nn {

Graph prepare_graph(const Graph& graph, bool add_self_loops) {
  Graph out = graph;
  if (add_self_loops) {
    const auto row_ptr = graph.row_ptr();
    const auto col = graph.col_idx();
    std::vector<int32_t> src(col.begin(), col.end()), dst(col.size());
    for (int64_t i = 0; i < graph.num_dst(); ++i)
      for (int64_t e = row_ptr[static_cast<size_t>(i)]; e < row_ptr[static_cast<size_t>(i) + 1]; ++e)
        dst[static_cast<size_t>(e)] = static_cast<int32_t>(i);
    if (graph.num_dst() == graph.num_src()) {
      out = build_graph(graph.num_dst(), graph.num_src(), std::span<const int32_t>(src),
                        std::span<const int32_t>(dst),
                        {.self_loops = SelfLoops::add, .duplicates = Duplicates::keep});
    } else {
      // Bipartite (PyG): node i of the destinations is node i of the sources for i < min(N_dst, N_src),
      // as in a sampled block whose destinations come first among its sources.
      for (int32_t i = 0; i < static_cast<int32_t>(std::min(graph.num_dst(), graph.num_src())); ++i) {
        src.push_back(i);
        dst.push_back(i);
      }
      std::vector<int32_t> keep_src, keep_dst;
      const size_t given = col.size();
      for (size_t e = 0; e < src.size(); ++e)
        if (e >= given || src[e] != dst[e]) {
          keep_src.push_back(src[e]);
          keep_dst.push_back(dst[e]);
        }
      out = build_graph(graph.num_dst(), graph.num_src(), std::span<const int32_t>(keep_src),
                        std::span<const int32_t>(keep_dst),
                        {.self_loops = SelfLoops::keep, .duplicates = Duplicates::keep});
    }
  }
  (void)out.transpose();
  (void)out.partition();
  (void)out.degree_stats();
  return out;
}

bool has_one_self_loop_per_node(const Graph& graph) {
  if (graph.num_dst() != graph.num_src()) return false;
  for (int64_t i = 0; i < graph.num_dst(); ++i) {
    int loops = 0;
    for (int32_t j : graph.row(i)) loops += j == i;
    if (loops != 1) return false;
  }
  return true;
}

}  // namespace edgeattn::nn
