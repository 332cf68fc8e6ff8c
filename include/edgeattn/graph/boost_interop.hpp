// Boost.Graph interop: hand an edgeattn Graph to Boost's algorithms, or build one from any Boost
// graph.
//
// Direction: a Boost edge u -> v means "v attends to u" (Boost source = our src, Boost target =
// our dst), the same convention as build_graph's (src, dst) pairs. Boost graphs have one vertex
// set, so only square graphs (num_dst == num_src == num_vertices) convert; a bipartite Graph
// throws GraphError.
//
// Example:
//   edgeattn::Graph g = edgeattn::build_graph(n, n, src, dst);
//   auto bg = edgeattn::to_boost_csr(g);           // compressed_sparse_row_graph<bidirectionalS>
//   std::size_t v = 1;                               // Boost's vertex type (std::size_t)
//   for (auto e : boost::make_iterator_range(boost::in_edges(v, bg)))
//     boost::source(e, bg);                          // the sources v attends to, i.e. g.row(v)
//
//   boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS> ug(3);
//   boost::add_edge(0, 1, ug);
//   edgeattn::Graph h = edgeattn::from_boost(ug);        // edges 0 -> 1 and 1 -> 0
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/graph_traits.hpp>
#include <boost/property_map/property_map.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

namespace detail {

inline void require_square_for_boost(const Graph& g, const char* what) {
  if (g.num_dst() != g.num_src())
    raise<GraphError>(what, ": Boost graphs have one vertex set, expected num_dst == num_src, got num_dst=",
                      g.num_dst(), ", num_src=", g.num_src());
}

/// The edges of `g` as (src, dst) pairs grouped by source, destinations ascending within a source
/// (the transpose order), which is the out-edge order of a Boost CSR graph.
inline std::vector<std::pair<std::size_t, std::size_t>> edges_by_source(const Graph& g) {
  const Transpose& t = g.transpose();
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  edges.reserve(static_cast<std::size_t>(g.num_edges()));
  for (int64_t j = 0; j < g.num_src(); ++j)
    for (int64_t p = t.col_ptr[static_cast<std::size_t>(j)]; p < t.col_ptr[static_cast<std::size_t>(j) + 1];
         ++p)
      edges.emplace_back(static_cast<std::size_t>(j),
                         static_cast<std::size_t>(t.row_idx[static_cast<std::size_t>(p)]));
  return edges;
}

}  // namespace detail

/// `g` as a Boost CSR graph (out-edges of u: the destinations that attend to u, ascending).
/// `Directed` is boost::bidirectionalS (default; in_edges(v) then gives v's sources) or
/// boost::directedS. Throws GraphError when g is not square.
template <class Directed = boost::bidirectionalS>
boost::compressed_sparse_row_graph<Directed> to_boost_csr(const Graph& g) {
  static_assert(std::is_same_v<Directed, boost::bidirectionalS> || std::is_same_v<Directed, boost::directedS>,
                "to_boost_csr: Directed must be boost::bidirectionalS or boost::directedS");
  detail::require_square_for_boost(g, "to_boost_csr");
  const auto edges = detail::edges_by_source(g);
  const auto n = static_cast<std::size_t>(g.num_dst());
  if constexpr (std::is_same_v<Directed, boost::directedS>) {
    return boost::compressed_sparse_row_graph<Directed>(boost::edges_are_sorted, edges.begin(), edges.end(),
                                                        n);
  } else {
    return boost::compressed_sparse_row_graph<Directed>(boost::edges_are_unsorted_multi_pass, edges.begin(),
                                                        edges.end(), n);
  }
}

/// `g` as a mutable Boost adjacency list; edges are added in CSR order. Throws GraphError when g
/// is not square.
inline boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> to_boost_adjacency_list(
    const Graph& g) {
  detail::require_square_for_boost(g, "to_boost_adjacency_list");
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> out(
      static_cast<std::size_t>(g.num_dst()));
  const auto row_ptr = g.row_ptr();
  const auto col_idx = g.col_idx();
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t e = row_ptr[static_cast<std::size_t>(i)]; e < row_ptr[static_cast<std::size_t>(i) + 1]; ++e)
      boost::add_edge(static_cast<std::size_t>(col_idx[static_cast<std::size_t>(e)]),
                      static_cast<std::size_t>(i), out);
  return out;
}

/// Builds a square Graph from any Boost graph modelling VertexListGraph and EdgeListGraph with a
/// vertex_index property (num_vertices, edges, source, target, get(vertex_index, g)). Each edge
/// u -> v becomes "v attends to u". An undirected Boost graph gives both directions (a self-loop
/// once). The result's input-order maps count the directed pairs in edges(g) order, an undirected
/// edge contributing (source -> target, then target -> source). `options` are build_graph's.
template <class BoostGraph>
Graph from_boost(const BoostGraph& g, const BuildOptions& options = {}) {
  using Traits = boost::graph_traits<BoostGraph>;
  constexpr bool undirected =
      std::is_convertible_v<typename Traits::directed_category, boost::undirected_tag>;
  const auto n = static_cast<int64_t>(num_vertices(g));
  const auto index = get(boost::vertex_index, g);
  std::vector<int64_t> src, dst;
  for (auto [it, end] = edges(g); it != end; ++it) {
    const auto u = static_cast<int64_t>(get(index, source(*it, g)));
    const auto v = static_cast<int64_t>(get(index, target(*it, g)));
    src.push_back(u);
    dst.push_back(v);
    if (undirected && u != v) {
      src.push_back(v);
      dst.push_back(u);
    }
  }
  return build_graph(n, n, std::span<const int64_t>(src), std::span<const int64_t>(dst), options);
}

}  // namespace edgeattn
