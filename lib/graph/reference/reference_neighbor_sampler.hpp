// Internal: the serial oracle of graph/neighbor_sampler.hpp, written for clarity (std::set for
// Floyd's algorithm, std::map for the relabelling, one destination at a time); used only by tests.
// Same contract and the same draws (neighbor_draw) as the parallel sampler, so the two must agree
// bit for bit. Inputs are assumed valid.
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/graph/neighbor_sampler.hpp"

namespace edgeattn::reference {

/// The within-row positions (ascending, repeats kept with replacement) of the in-edges that node
/// `node` of in-degree `degree` samples at `hop`.
std::vector<int64_t> sample_row(int64_t degree, int64_t fanout, bool replace, uint64_t seed, int64_t hop,
                                int64_t node);

/// The same by weight: `w` holds the row's `degree` weights (see NeighborSamplerOptions::weights).
std::vector<int64_t> sample_weighted_row(std::span<const float> w, int64_t fanout, bool replace,
                                         uint64_t seed, int64_t hop, int64_t node);

Block sample_block(const Graph& graph, std::span<const int64_t> dst_nodes, int64_t fanout, bool replace,
                   uint64_t seed, int64_t hop, SourceOrder order = SourceOrder::appearance,
                   std::span<const float> weights = {});

SampledSubgraph sample_neighbors(const Graph& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options);

}  // namespace edgeattn::reference
