// Internal: the width of Graph::transpose_edges' entries (graph.hpp: TransposeEdges). Up to
// INT32_MAX edges they are 32-bit; tests lower the limit to run the 64-bit path on small graphs.
#pragma once

#include <cstdint>

namespace edgeattn::detail {

/// Graphs with more edges than `edges` get 64-bit transpose edge ids (default and most: INT32_MAX).
/// Applies to transpose_edges built afterwards; not synchronised (tests set it between graphs).
void set_narrow_edge_limit(int64_t edges);

}  // namespace edgeattn::detail
