// Preprocessing of a Dataset that keeps every part aligned with the graph: features, labels,
// splits, node names and per-edge weights and attributes (Dataset::edge_attr) move (or are
// dropped) together with their nodes and edges. Each operation appends one line to Dataset::notes saying what
// it did.
//
//   normalize_features   row-normalise (GCN/GAT preprocessing of bag-of-words features)
//   with_self_loops      one self-loop per node (GATConv's add_self_loops); new loops weigh 1 and
//                        have attributes 0 (nn/prepare_graph.hpp fills them as PyG's fill_value)
//   without_self_loops   drop self-loops
//   to_undirected        add missing reverse edges (a reverse edge copies its mirror's weight and
//                        attributes)
//   largest_component    keep the largest weakly connected component (gnn-benchmark's
//                        "standardize"); splits lose the dropped nodes, ids are renumbered
//   reorder              relabel nodes by new_of_old, e.g. an ordering from graph/ordering.hpp
//
// Example:
//   auto ds = edgeattn::data::sbm_dataset({});
//   ds = edgeattn::data::largest_component(ds);
//   ds = edgeattn::data::reorder(ds, edgeattn::rcm_ordering(ds.graph));
//   edgeattn::data::normalize_features(ds.features);
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

/// Divides each row by the sum of its absolute values (for non-negative features, the row then
/// sums to 1, as Kipf & Welling's preprocess_features does). Rows of zeros stay zero. Dense and
/// sparse features alike; the sparsity pattern does not change. InvalidArgument for mapped
/// features (Features::is_mapped): writing every row would copy the file into memory.
void normalize_features(Features& features);

/// Dense features with at most `max_density` non-zeros (a share of rows * cols) as CSR, so that
/// a linear layer over them does nnz * out multiply-adds instead of rows * cols * out (Cora's
/// bag-of-words features are 1.3% non-zero); any other features are returned unchanged. Dense
/// features returned unchanged share the input's storage (Tensor::share_reshaped) instead of
/// being copied: for the features of a large graph a copy is the size of the whole input.
/// Mapped features (Features::is_mapped) are returned as they are, without reading them.
Features sparsify_features(const Features& features, double max_density = 0.1);

/// The dataset with exactly one self-loop per node. Existing edges keep their weights and
/// attributes; added loops get weight 1 and attributes 0. Throws InvalidArgument when the dataset is
/// inconsistent (validate()).
Dataset with_self_loops(const Dataset& dataset);

/// The dataset without self-loops (weights of the remaining edges follow them).
Dataset without_self_loops(const Dataset& dataset);

/// The dataset with the reverse of every edge (duplicates merged). Weights: an edge that was in
/// the input keeps its (first) weight and attributes; an added reverse edge j <- i takes those of
/// i <- j.
Dataset to_undirected(const Dataset& dataset);

/// The dataset restricted to its largest weakly connected component (graph/components.hpp).
/// Kept nodes keep their relative order; features, labels, names, weights and splits follow, and
/// split entries of dropped nodes are removed.
Dataset largest_component(const Dataset& dataset);

/// The dataset with node i renamed new_of_old[i] everywhere (splits stay sorted). Throws
/// GraphError unless new_of_old is a permutation of [0, num_nodes).
Dataset reorder(const Dataset& dataset, std::span<const int64_t> new_of_old);

}  // namespace edgeattn::data
