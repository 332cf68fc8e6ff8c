// Graphs and tensors for tests: small, seeded, and shaped to hit the edge cases the kernels must
// survive (isolated rows, self-loops, skewed degrees, bipartite shapes).
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::testing {

/// Uniform random graph: each of `num_edges` edges picks src and dst uniformly (duplicates merged,
/// self-loops kept). Rows left without edges stay isolated. Deterministic for a seed.
Graph uniform_graph(int64_t num_dst, int64_t num_src, int64_t num_edges, uint64_t seed);

/// Power-law in-degrees (a few hub rows with many edges, many rows with 0-2), plus a self-loop on
/// every third node and a guaranteed block of isolated rows. Square.
Graph power_law_graph(int64_t n, int64_t num_edges, uint64_t seed);

/// The 4-node example used for hand-computed values:
///   row 0 <- {0, 1}, row 1 <- {0, 2}, row 2 <- {} (isolated), row 3 <- {1, 2, 3}
Graph four_node_graph();

/// One destination reading sources 0..n-1: a hub row of n in-edges ([1, n]).
Graph hub_row_graph(int64_t n);

/// n destinations each reading sources 0 and 1: two hub columns of n edges each. `square`: n
/// sources (destination i is source i, as the value fold needs), else 2.
Graph hub_columns_graph(int64_t n, bool square);

/// Tensor of `shape` with values uniform in [lo, hi), deterministic for a seed.
Tensor random_tensor(Shape shape, uint64_t seed, float lo = -1.f, float hi = 1.f);

}  // namespace edgeattn::testing
