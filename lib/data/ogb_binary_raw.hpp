// Internal: the binary half of load_ogb_node_dataset (data/ogb.hpp): OGB's npz layout
// (raw/data.npz, raw/node-label.npz) read into a Dataset, after checking that it fits in memory.
#pragma once

#include <cstdint>
#include <filesystem>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/data/ogb.hpp"

namespace edgeattn::data::detail {

/// Fills ds.graph, features, labels (and notes, sources) from <dir>/raw/*.npz; returns N.
int64_t read_ogb_binary_raw(const std::filesystem::path& dir, const OgbOptions& options, Dataset& ds);

}  // namespace edgeattn::data::detail
