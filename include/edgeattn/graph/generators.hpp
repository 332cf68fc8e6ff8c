// Synthetic graphs for benchmarks, demos and tests: uniform random (Erdos-Renyi G(n, m) style)
// and R-MAT / Kronecker power-law graphs (Chakrabarti, Zhan, Faloutsos, SDM 2004), the two
// synthetic inputs of the GAP Benchmark Suite ("urand" and "kron") and of Graph500.
//
// Every edge is a pure function of (seed, edge index): edge k draws its random bits from
// philox4x32 keyed by the seed with the counter (k, attempt, stream) (core/rng.hpp). Edges are
// generated in parallel, and the result is identical for any thread count. Edges are then turned
// into a Graph by build_graph (graph/build.hpp) with the given BuildOptions; the default merges
// duplicate (src, dst) pairs and keeps self-loops, so a generated graph may have slightly fewer
// than `num_edges` edges. Use Duplicates::keep to get exactly `num_edges`.
//
// Edge k is src[k] -> dst[k]; the graph is square (num_dst == num_src == n).
//
// Example:
//   auto urand = edgeattn::erdos_renyi_graph(/*n=*/1 << 20, /*num_edges=*/16 << 20, /*seed=*/1);
//   auto kron  = edgeattn::rmat_graph(/*n=*/1 << 20, /*num_edges=*/16 << 20, /*seed=*/1);
//   kron.degree_stats().max_degree;   // far above the mean of ~16: a few hubs
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

/// An edge list before it becomes a Graph: edge k is src[k] -> dst[k], ids in [0, num_nodes).
struct EdgeList {
  int64_t num_nodes = 0;
  std::vector<int32_t> src;  // [num_edges]
  std::vector<int32_t> dst;  // [num_edges]
};

/// Quadrant probabilities of R-MAT. At each of the log2(n) levels an edge falls into the
/// top-left (a), top-right (b), bottom-left (c) or bottom-right (d) quadrant of the adjacency
/// matrix (rows: source, columns: destination). The defaults are Graph500's.
struct RmatParams {
  double a = 0.57;
  double b = 0.19;
  double c = 0.19;
  double d = 0.05;
  /// Relabel vertices with a seeded bijection of [0, n), as Graph500 does, so that the hubs are
  /// spread over the id range instead of all sitting at the low ids (which would make row
  /// partitions and caches behave unrealistically well or badly).
  bool scramble_ids = true;
};

/// `num_edges` edges whose endpoints are independent and uniform on [0, n).
/// Throws InvalidArgument unless 1 <= n <= 2^31 - 1 and num_edges >= 0.
EdgeList erdos_renyi_edges(int64_t n, int64_t num_edges, uint64_t seed);

/// `num_edges` R-MAT edges on n vertices.
///
/// When n is not a power of two, edges are drawn at scale ceil(log2(n)) and an edge with an
/// endpoint >= n is rejected and redrawn (with the next attempt counter), so the result follows
/// R-MAT's distribution conditioned on the [0, n) x [0, n) corner; nothing is folded onto low ids.
/// Since R-MAT favours low ids, fewer than half of the draws are rejected for the default
/// parameters. (After 64 rejections in a row, which only degenerate parameters make likely, the
/// endpoints are reduced modulo n so generation always ends.)
/// Throws InvalidArgument unless 1 <= n <= 2^31 - 1, num_edges >= 0, and a, b, c, d are in
/// [0, 1] and sum to 1 (within 1e-6).
EdgeList rmat_edges(int64_t n, int64_t num_edges, uint64_t seed, const RmatParams& params = {});

/// erdos_renyi_edges turned into a Graph by build_graph(n, n, src, dst, options).
Graph erdos_renyi_graph(int64_t n, int64_t num_edges, uint64_t seed, const BuildOptions& options = {});

/// rmat_edges turned into a Graph by build_graph(n, n, src, dst, options).
Graph rmat_graph(int64_t n, int64_t num_edges, uint64_t seed, const RmatParams& params = {},
                 const BuildOptions& options = {});

}  // namespace edgeattn
