// Internal: the symmetric, loop-free sparsity pattern of a square graph, which components and
// orderings work on (edge direction and the diagonal do not matter to them).
#pragma once

#include "edgeattn/graph/graph.hpp"

namespace edgeattn::detail {

/// i <- j is an edge iff i != j and (i <- j or j <- i) is an edge of `graph`; no repeats.
/// `graph` must be square (callers check and name themselves in the error).
Graph undirected_pattern(const Graph& graph);

}  // namespace edgeattn::detail
