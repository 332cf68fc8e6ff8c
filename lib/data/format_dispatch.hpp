// Internal: from a (dataset, format) pair or a path to the loader that reads it. The registry
// (registry.cpp) resolves and verifies files; this file only knows which reader to call.
#pragma once

#include <filesystem>
#include <string>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

/// Loads dataset `name` stored in `format` under `root` (files at root/<name>/<format>/...).
Dataset load_named_format(const std::filesystem::path& root, const std::string& name,
                          const std::string& format);

}  // namespace edgeattn::data
