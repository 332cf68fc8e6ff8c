// Neighbour sampling for mini-batch training: the seeds' sampled multi-hop neighbourhood as one
// bipartite block per layer (Hamilton et al., "Inductive Representation Learning on Large Graphs",
// NeurIPS 2017; PyG's NeighborLoader, DGL's MultiLayerNeighborSampler / NeighborSampler).
//
// Hop h (h = 0 at the seeds) takes the hop's destination nodes (the seeds for h = 0, else every
// node hop h - 1 reached) and, for each destination v with in-degree d and fanout k = fanouts[h]:
//   k == -1, or !replace and d <= k   all d in-edges of v;
//   !replace and d > k                k distinct in-edges, uniform over the k-subsets (Floyd's
//                                     algorithm);
//   replace                           k in-edges drawn uniformly and independently (repeats are
//                                     kept as parallel edges, as PyG does; none when d == 0).
// With edge weights (NeighborSamplerOptions::weights; DGL's `prob`, PyG's `weight_attr`) an
// in-edge is picked with probability proportional to its weight, and an in-edge of weight 0 is
// never picked, under any fanout. With p in-edges of positive weight:
//   k == -1, or !replace and p <= k   all p of them;
//   !replace and p > k                k distinct ones, one after another, each in proportion to
//                                     weight among those not yet picked (successive sampling, as
//                                     DGL's and torch.multinomial's without replacement);
//   replace                           k independent picks, each in-edge with probability
//                                     w_e / sum(w); none when p == 0.
// Pick t descends the row's sum tree: the weights padded with zeros to a power of two, each node
// the sum (in double) of its two halves. With u = neighbor_unit(seed, hop, node, t) and x = u times
// the root's sum, a node passes x to its left half when that half's sum is not 0 and either the
// right half's is 0 or x < the left sum, else to its right half with x minus the left sum; the
// leaf reached is the pick. Without replacement the picked leaf is then set to 0. A weighted row
// costs O(in-degree + k log in-degree) (it reads every weight of the row) against O(k) uniform.
// The draws for v at hop h are a pure function of (seed, h, v) (neighbor_draw below), so a
// node's sample does not depend on the thread count, on the other seeds of the batch, or on their
// order. Use a different `seed` per mini-batch or epoch, or each node gets the same neighbours
// every time it is sampled.
//
// Blocks come in the order the model consumes them, as DGL's `blocks`: blocks.front() is the
// outermost hop (its sources are the input nodes whose features are read), blocks.back() ends at
// the seeds. Each block is a Graph [num_dst x num_src] in local ids, CSR by destination as always
// (columns ascending within a row), so the existing kernels and layers run on it unchanged:
//   x_src = gather_rows(features, block.src_nodes)       // [block.num_src(), F] (core/tensor.hpp)
//   x_dst = first block.num_dst() rows of x_src           // destinations lead the sources
// Node numbering: for a square input graph the first num_dst sources are the destinations in their
// given order, then the new sources (NeighborSamplerOptions::order):
//   SourceOrder::appearance  (default; the DGL/PyG convention) in order of first appearance,
//                            destination row by destination row, in the input's CSR order within
//                            a row;
//   SourceOrder::ascending   by ascending global id. A block's rows and columns then follow the
//                            input's numbering, so where that numbering is local (neighbours have
//                            near ids: graph/ordering.hpp, or a dataset stored that way) the
//                            kernels' gathers of source and destination rows, and the gather of
//                            the input features, touch nearby memory; the training loops use it.
//                            Sampling then skips the first-appearance bookkeeping (an atomic min
//                            per edge), so it is also the cheaper numbering.
// Both are deterministic and independent of the thread count. For a bipartite input graph
// (num_dst != num_src) destination and source ids are different id spaces: there is no
// destination prefix, every source is new, and only one hop can be sampled.
//
// fanouts[h] is the fanout of hop h + 1 from the seeds, as PyG's num_neighbors: [15, 10, 5] takes
// 15 neighbours of each seed (the last block), 10 of each of those, 5 at the outermost hop (the
// first block). DGL's NeighborSampler lists fanouts by model layer instead, i.e. in the reverse
// order: DGL's [5, 10, 15] is this [15, 10, 5].
//
// Layer-wise full-neighbourhood inference (PyG's and DGL's evaluation path) takes every in-edge
// (fanout -1), one layer at a time: nn::Model::inference runs each layer over the whole graph
// (its kernels hold nothing per edge, so batches would save no memory); full_neighborhood_block
// gives the block of a batch of destination nodes, for a layer-wise loop of one's own.
//
// Example (2-layer GAT, a mini-batch of seeds):
//   edgeattn::NeighborSamplerOptions opt{.fanouts = {10, 5}, .replace = false, .seed = epoch};
//   auto sub = edgeattn::sample_neighbors(graph, batch_seeds, opt);
//   Tensor x = edgeattn::gather_rows(features, sub.input_nodes);   // [input_nodes, F]
//   // layer l runs on sub.blocks[l].graph: x_src = x (num_src rows), x_dst = its first num_dst
//   // rows; its output has sub.blocks[l].num_dst() rows, which are the next block's sources.
//   // The last block's output rows are the seeds, in the order given.
//   opt.weights = ds.edge_weight;                          // by edge weight (one per CSR edge)
//   auto weighted = edgeattn::sample_neighbors(ds.graph, batch_seeds, opt);
//
// Cost: O(sampled edges + seeds) work (weighted: O(in-degree) per sampled node), row-parallel
// (core/parallel.hpp), plus a scratch array of graph.num_src() entries per call (filled in
// parallel) for the relabelling; ascending order adds a sort of each hop's new sources, or a scan
// of the scratch array where they are many.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/rng.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

/// How a block numbers its new sources (those that are not its destinations); see the file comment.
enum class SourceOrder {
  appearance,  ///< by first appearance, row by row (DGL's and PyG's numbering)
  ascending,   ///< by ascending global id (locality; what the training loops use)
};

/// "appearance" or "ascending"; InvalidArgument listing them otherwise.
SourceOrder parse_source_order(const std::string& name);
const char* to_string(SourceOrder order);

/// Hyper-parameters of sample_neighbors, named as in PyG's NeighborLoader.
struct NeighborSamplerOptions {
  /// [num_layers] fanout of hop 1 (at the seeds), hop 2, ...; -1 takes all in-edges; 0 none.
  std::vector<int64_t> fanouts;
  /// Sample with replacement: exactly `fanout` edges per node with in-edges.
  bool replace = false;
  /// Keys every draw (see neighbor_draw); vary it per mini-batch.
  uint64_t seed = 0;
  /// Numbering of each block's new sources.
  SourceOrder order = SourceOrder::appearance;
  /// Empty (uniform sampling), or [graph.num_edges()] each in-edge's sampling weight by input CSR
  /// position (Dataset::edge_weight's order): finite and >= 0, 0 never sampled. Not owned: it
  /// must outlive the call. See the file comment.
  std::span<const float> weights = {};
};

/// One layer's bipartite message-passing graph, in local ids (DGL's block).
struct Block {
  Graph graph;  ///< [num_dst x num_src], CSR by destination; edge (i <- j) is dst_nodes[i] <- src_nodes[j]
  /// [num_dst] global ids of the destinations (rows), in the order given.
  std::vector<int64_t> dst_nodes;
  /// [num_src] global ids of the sources (columns). For a square input graph it starts with
  /// dst_nodes, so x_dst = x_src[:num_dst].
  std::vector<int64_t> src_nodes;
  /// [num_edges] CSR position in the input graph of each block edge (PyG's e_id, DGL's EID), for
  /// per-edge data: block_attr[e] = attr[edge_ids[e]].
  std::vector<int64_t> edge_ids;

  int64_t num_dst() const { return graph.num_dst(); }
  int64_t num_src() const { return graph.num_src(); }
  int64_t num_edges() const { return graph.num_edges(); }
};

/// A mini-batch: the seeds' sampled neighbourhood, one block per layer.
struct SampledSubgraph {
  /// [num_layers], outermost hop first; blocks[l].dst_nodes == blocks[l + 1].src_nodes (square
  /// graphs: the next block's sources are exactly this block's destinations).
  std::vector<Block> blocks;
  /// Global ids whose features the first layer reads: blocks.front().src_nodes.
  std::vector<int64_t> input_nodes;
  /// The seeds, in the order given: blocks.back().dst_nodes (the last layer's output rows).
  std::vector<int64_t> seeds;
};

/// Samples `options.fanouts.size()` hops around `seeds` (see the file comment).
/// Throws GraphError when a seed is out of [0, graph.num_dst()) or repeated (naming the index and
/// the value), or when the graph is not square and more than one hop is asked for;
/// InvalidArgument when fanouts is empty or holds a value below -1, when weights is neither
/// empty nor one per edge, or when a weight the sampling reads is negative, NaN or infinite
/// (naming its position, its destination node and its value), or when a hop would sample more
/// edges than fit in 3/4 of physical memory (a fanout with replacement is exact: 10^9 draws a
/// node are 10^9 edges), before anything of that size is allocated.
SampledSubgraph sample_neighbors(const Graph& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options);

/// One hop: samples the in-edges of each of `dst_nodes` (distinct, in [0, graph.num_dst())) with
/// `fanout`, the draws keyed by (seed, hop, node). sample_neighbors' hop h is
/// sample_block(graph, its destinations, fanouts[h], replace, seed, h, order, weights). Errors as
/// sample_neighbors.
Block sample_block(const Graph& graph, std::span<const int64_t> dst_nodes, int64_t fanout, bool replace,
                   uint64_t seed, int64_t hop = 0, SourceOrder order = SourceOrder::appearance,
                   std::span<const float> weights = {});

/// Every in-edge of each of `dst_nodes`: a layer of full-neighbourhood inference (fanout -1).
/// With dst_nodes = [0, n) of a square graph it is the graph itself, src_nodes = [0, n).
Block full_neighborhood_block(const Graph& graph, std::span<const int64_t> dst_nodes);

/// The random bits of draws 2 pair and 2 pair + 1 of node `node` at hop `hop` under `seed`: the
/// two 64-bit halves of philox4x32 keyed by the seed at counter (node, hop, pair).
constexpr std::array<uint64_t, 2> neighbor_bits(uint64_t seed, int64_t hop, int64_t node, uint64_t pair) {
  const auto v = static_cast<uint64_t>(node);
  const auto r = philox4x32(seed, {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32),
                                   static_cast<uint32_t>(hop), static_cast<uint32_t>(pair)});
  return {static_cast<uint64_t>(r[1]) << 32 | r[0], static_cast<uint64_t>(r[3]) << 32 | r[2]};
}

/// bits scaled to [0, n): the high 64 bits of bits * n.
constexpr uint64_t scale_draw(uint64_t bits, uint64_t n) {
  const uint64_t b_lo = bits & 0xffffffffu, b_hi = bits >> 32;
  const uint64_t n_lo = n & 0xffffffffu, n_hi = n >> 32;
  const uint64_t lo_lo = b_lo * n_lo, hi_lo = b_hi * n_lo, lo_hi = b_lo * n_hi, hi_hi = b_hi * n_hi;
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return (hi_lo >> 32) + (cross >> 32) + hi_hi;
}

/// The `draw`-th random index in [0, n) of node `node` at hop `hop` under `seed` (n >= 1): 64 bits
/// of philox4x32 keyed by the seed, counter (node, hop, draw / 2), scaled to [0, n) by a
/// multiply-high (bias below n / 2^64). With replacement, draw t is the t-th sampled in-edge;
/// without, Floyd's algorithm takes draw t in [0, d - k + t] for t = 0 .. k-1.
constexpr uint64_t neighbor_draw(uint64_t seed, int64_t hop, int64_t node, uint64_t draw, uint64_t n) {
  return scale_draw(neighbor_bits(seed, hop, node, draw >> 1)[draw & 1], n);
}

/// The same 64 bits as a double in [0, 1): their top 53 bits times 2^-53. Weighted sampling's
/// pick t descends the row's sum tree with this draw times the tree's total (see the file comment).
constexpr double neighbor_unit(uint64_t seed, int64_t hop, int64_t node, uint64_t draw) {
  return static_cast<double>(neighbor_bits(seed, hop, node, draw >> 1)[draw & 1] >> 11) * 0x1p-53;
}

}  // namespace edgeattn
