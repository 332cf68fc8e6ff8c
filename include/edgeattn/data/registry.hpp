// Named datasets: find their files under a data root, verify them, load them.
//
// `load_dataset("cora")` looks for the Planetoid files of Cora under the data root
// (`$EDGEATTN_DATA`, else the repository's `datasets/`), checks the sha256 of each file's content
// against the manifest compiled into the library (datasets/manifest.tsv; a file may be stored
// plain or gzip-compressed as `<name>.gz`, the content is what is hashed), and loads it. A missing
// file raises IoError naming the file, its expected sha256 and size, and where it is officially
// published; a file whose content differs raises ChecksumError naming both digests.
//
// Known datasets and their formats (the first is the default):
//   cora      planetoid, linqs, npz        citeseer  planetoid, linqs, npz
//   pubmed    planetoid, linqs             karate    adjlist
//
// `load_dataset_path(path)` loads a file or directory in any supported format, sniffed from its
// name and content (no checksum: the manifest covers named datasets only).
//
// Example:
//   auto cora = edgeattn::data::load_dataset("cora");                       // Planetoid, public split
//   auto raw  = edgeattn::data::load_dataset("cora", {.format = "linqs"});
//   auto mine = edgeattn::data::load_dataset_path("graphs/web-Google.txt.gz");
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

struct LoadOptions {
  /// Data root; empty means $EDGEATTN_DATA when set, else the repository's datasets/.
  std::filesystem::path root;
  /// One of the dataset's formats; empty means its default.
  std::string format;
  /// Verify every file's sha256 against the manifest before loading.
  bool verify = true;
};

/// One file the registry knows: `path` is relative to the data root.
struct ManifestEntry {
  std::string dataset, format, path;
  std::string sha256;  ///< of the content (after gunzip); empty when not recorded
  int64_t bytes = -1;  ///< content size; -1 when not recorded
  std::string url;     ///< where the file is officially published
};

/// The compiled-in manifest (datasets/manifest.tsv).
std::span<const ManifestEntry> manifest();
/// Names load_dataset accepts, e.g. {"citeseer", "cora", "karate", "pubmed"}.
std::vector<std::string> dataset_names();
/// The formats of a named dataset, default first; InvalidArgument for an unknown name.
std::vector<std::string> dataset_formats(const std::string& name);
/// The root load_dataset uses when LoadOptions::root is empty.
std::filesystem::path default_data_root();

/// Loads a named dataset (see above). Fills Dataset::sources with each file's path and sha256.
Dataset load_dataset(const std::string& name, const LoadOptions& options = {});

/// Loads a dataset from a file or directory: a Planetoid directory (ind.<name>.x inside), a LINQS
/// directory or .content file, an npz archive, an OGB node-property directory (raw/edge.csv.gz),
/// a Matrix Market .mtx, an adjacency list (.adjlist), or otherwise an edge list.
Dataset load_dataset_path(const std::filesystem::path& path);

/// Checks `file`'s content against a manifest entry; throws ChecksumError naming the file and
/// both digests. Returns the sha256 it computed.
std::string verify_file(const std::filesystem::path& file, const ManifestEntry& entry);

}  // namespace edgeattn::data
