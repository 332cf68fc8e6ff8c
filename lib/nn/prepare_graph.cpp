#include "edgeattn/nn/prepare_graph.hpp"

#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::nn {

Graph prepare_graph(const Graph& graph, bool add_self_loops) {
  Graph out = graph;
  if (add_self_loops) {
    if (graph.num_dst() != graph.num_src())
      raise<GraphError>("prepare_graph: add_self_loops needs a square graph, got num_dst=", graph.num_dst(),
                        ", num_src=", graph.num_src());
    const auto row_ptr = graph.row_ptr();
    const auto col = graph.col_idx();
    std::vector<int32_t> src(col.begin(), col.end()), dst(col.size());
    for (int64_t i = 0; i < graph.num_dst(); ++i)
      for (int64_t e = row_ptr[static_cast<size_t>(i)]; e < row_ptr[static_cast<size_t>(i) + 1]; ++e)
        dst[static_cast<size_t>(e)] = static_cast<int32_t>(i);
    out = build_graph(graph.num_dst(), graph.num_src(), std::span<const int32_t>(src),
                      std::span<const int32_t>(dst),
                      {.self_loops = SelfLoops::add, .duplicates = Duplicates::keep});
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
