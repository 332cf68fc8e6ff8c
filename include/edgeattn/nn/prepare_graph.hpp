// Graph preparation for the attention layers, done ONCE per graph (plan once, run many).
//
// PyG's GATConv and GATv2Conv (add_self_loops=True) remove every existing self-loop and add one
// per node on each forward call. edgeattn does that transform once: a model calls
// `prepare_graph(graph, add_self_loops)` when it first sees a graph and reuses the result for
// every step (Model::prepare_graph; the lead's training loop caches it). The layers then assume
// the prepared graph: with add_self_loops set they check (cheaply, from the graph's cached
// degree statistics) that the graph has one self-loop per node, and throw InvalidArgument
// pointing here otherwise.
//
// The prepared graph also has its row partition and degree statistics computed, so the first
// step does not pay for them. Its transpose is built by the first backward that walks it (with
// the edge ids in the same sort when that backward reads per-edge data), never for a graph that
// only runs forward.
//
// Example:
//   Graph g = edgeattn::nn::prepare_graph(dataset.graph, /*add_self_loops=*/true);  // once
//   for (...) model.forward(tape, g, dataset.features, step);                        // every step
#pragma once

#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::nn {

/// The edge attributes a self-loop added by prepare_graph gets (PyG's `fill_value` of GATConv,
/// GATv2Conv and torch_geometric.utils.add_self_loops): a reduction of the attributes of the
/// node's other in-edges (given self-loops excluded; a node without any gets 0, or 1 for mul),
/// or a constant.
struct FillValue {
  enum class Kind { mean, sum, max, min, mul, constant };
  Kind kind = Kind::mean;  ///< PyG's default for GATConv / GATv2Conv
  /// constant: one value for every attribute, or one per attribute [edge_dim].
  std::vector<float> value;

  /// "mean", "add" or "sum", "max", "min", "mul", or a number ("0.5"). InvalidArgument otherwise.
  static FillValue parse(const std::string& text);
  static FillValue constant(float v) { return {Kind::constant, {v}}; }
};

/// A prepared graph with edge attributes in its CSR order.
struct PreparedGraph {
  Graph graph;
  Tensor edge_attr;  ///< [graph.num_edges(), edge_dim]
};

/// Whether the prepared graph carries input-order maps (Graph::input_edge_of_csr and
/// csr_edge_of_input, 16 bytes an edge), which to_input_edge_order reads to put per-edge values
/// (attention weights) in the order of the edge list the graph was built from. A model's
/// training and inference read none: Model::prepare_graph and the sampled blocks drop them.
/// With add_self_loops the list they refer to is the input's non-loop edges in CSR order, then
/// the added loops.
enum class InputOrder { keep, drop };

/// add_self_loops: the graph with existing self-loops removed and exactly one added per node
/// (other edges, duplicates included, kept in order: PyG semantics); for a bipartite graph
/// (num_dst != num_src) one loop i -> i for each i < min(num_dst, num_src), as PyG does for
/// (x_src, x_dst) input. Otherwise the graph as is.
Graph prepare_graph(const Graph& graph, bool add_self_loops, InputOrder order = InputOrder::keep);

/// As above, carrying per-edge attributes along: `edge_attr` [graph.num_edges(), edge_dim] in
/// the CSR order of `graph` (Dataset::edge_attr is) becomes [prepared.num_edges(), edge_dim] in
/// the prepared graph's CSR order; with add_self_loops the given self-loops' rows are dropped
/// and each added loop i -> i gets `fill` of node i's remaining in-edges. ShapeError when
/// edge_attr's rows differ from graph.num_edges(); InvalidArgument for a constant fill whose
/// length is neither 1 nor edge_dim.
///
/// Example (GAT with edge features; conv built with .edge_dim = ds.edge_attr.dim(1)):
///   PreparedGraph p = prepare_graph(ds.graph, true, ds.edge_attr);           // fill: mean
///   Var out = conv.forward(tape, p.graph, x, EdgeFeatures{tape.constant_ref(p.edge_attr)}, seed);
PreparedGraph prepare_graph(const Graph& graph, bool add_self_loops, ConstView edge_attr,
                            const FillValue& fill = {}, InputOrder order = InputOrder::keep);

/// Edge attributes for a layer built with edge_dim (GATConv, GATv2Conv): [num_edges, edge_dim] in
/// the CSR order of the (prepared) graph passed with them. A Var, so a learned edge embedding
/// gets gradients.
struct EdgeFeatures {
  autograd::Var attr{};
};

/// Checks edge attributes for a layer `who` built with `edge_dim` (0: none):
/// InvalidArgument when the layer has no edge_dim (naming `option`, e.g. "GATConvOptions::edge_dim"),
/// ShapeError unless they are [graph.num_edges(), edge_dim].
void check_edge_features(const autograd::Tape& tape, const std::string& who, const Graph& graph,
                         const EdgeFeatures& edges, int64_t edge_dim, const char* option);

/// True when every node has exactly one self-loop (what prepare_graph(g, true) produces).
bool has_one_self_loop_per_node(const Graph& graph);

}  // namespace edgeattn::nn
