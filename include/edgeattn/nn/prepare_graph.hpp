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
// The prepared graph also has its transpose and row partition computed, so the first training
// step does not pay for them.
//
// Example:
//   Graph g = edgeattn::nn::prepare_graph(dataset.graph, /*add_self_loops=*/true);  // once
//   for (...) model.forward(tape, g, dataset.features, step);                        // every step
#pragma once

#include "edgeattn/graph/graph.hpp"

namespace edgeattn::nn {

/// add_self_loops: the graph with existing self-loops removed and exactly one added per node
/// (other edges, duplicates included, kept in order: PyG semantics); for a bipartite graph
/// (num_dst != num_src) one loop i -> i for each i < min(num_dst, num_src), as PyG does for
/// (x_src, x_dst) input. Otherwise the graph as is.
Graph prepare_graph(const Graph& graph, bool add_self_loops);

/// True when every node has exactly one self-loop (what prepare_graph(g, true) produces).
bool has_one_self_loop_per_node(const Graph& graph);

}  // namespace edgeattn::nn
