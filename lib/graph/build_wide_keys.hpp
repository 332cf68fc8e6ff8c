// Internal: build_graph's path for more than 2^32 candidate tags, reachable from tests.
//
// build_graph carries each candidate edge as one uint64 key (source << 32 | tag) when every tag
// fits in 32 bits, that is below about 2^31 input edges, and as a 16-byte key beyond. No test can
// afford that many edges, so this entry point takes the 16-byte path on any input; its results
// must equal build_graph's.
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/graph/build.hpp"

namespace edgeattn::detail {

/// build_graph with candidates always carried as 16-byte (source, tag) keys.
Graph build_graph_wide_keys(int64_t num_dst, int64_t num_src, std::span<const int64_t> src,
                            std::span<const int64_t> dst, const BuildOptions& options = {});

}  // namespace edgeattn::detail
