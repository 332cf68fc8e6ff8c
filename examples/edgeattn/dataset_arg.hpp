// How the tool's commands turn a NAME|PATH argument into a Dataset: a registry name (verified
// against the manifest, --format/--root apply) or a path in any supported format.
#pragma once

#include <string>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::cli {

/// Throws UsageError when `what` is neither a known name nor an existing path, or when
/// format/root are given for a path.
data::Dataset load_dataset_arg(const std::string& what, const std::string& format, const std::string& root,
                               bool verify);

}  // namespace edgeattn::cli
