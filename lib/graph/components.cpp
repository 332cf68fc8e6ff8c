// Weakly connected components via Boost.Graph on the symmetrized pattern. Boost's
// connected_components runs a depth-first search from each unvisited vertex in vertex order, so
// component ids ascend with each component's smallest vertex; the search keeps its own explicit
// stack, so long paths (roads, grids) do not overflow the call stack.
#include "edgeattn/graph/components.hpp"

#include <boost/graph/connected_components.hpp>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/boost_interop.hpp"
#include "undirected_pattern.hpp"

namespace edgeattn {

Components connected_components(const Graph& graph) {
  if (graph.num_dst() != graph.num_src())
    raise<GraphError>("connected_components: needs a square graph, got num_dst=", graph.num_dst(),
                      ", num_src=", graph.num_src());
  const Graph sym = detail::undirected_pattern(graph);
  // The symmetrized pattern seen as a directed Boost graph: every edge has its reverse, so the
  // depth-first search along out-edges reaches exactly the undirected component.
  const auto bg = to_boost_csr<boost::directedS>(sym);
  Components out;
  out.component.resize(static_cast<size_t>(graph.num_dst()));
  std::vector<std::size_t> comp(static_cast<size_t>(graph.num_dst()));
  out.count = static_cast<int64_t>(boost::connected_components(
      bg, boost::make_iterator_property_map(comp.begin(), boost::get(boost::vertex_index, bg))));
  out.size.assign(static_cast<size_t>(out.count), 0);
  for (size_t v = 0; v < comp.size(); ++v) {
    out.component[v] = static_cast<int32_t>(comp[v]);
    ++out.size[comp[v]];
  }
  return out;
}

std::vector<int64_t> largest_connected_component(const Graph& graph) {
  const Components cc = connected_components(graph);
  if (cc.count == 0) return {};
  // Ids ascend with the smallest node, so the first maximum is the tie-break the header promises.
  int64_t best = 0;
  for (int64_t c = 1; c < cc.count; ++c)
    if (cc.size[static_cast<size_t>(c)] > cc.size[static_cast<size_t>(best)]) best = c;
  std::vector<int64_t> nodes;
  nodes.reserve(static_cast<size_t>(cc.size[static_cast<size_t>(best)]));
  for (size_t v = 0; v < cc.component.size(); ++v)
    if (cc.component[v] == best) nodes.push_back(static_cast<int64_t>(v));
  return nodes;
}

}  // namespace edgeattn
