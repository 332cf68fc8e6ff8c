// Named datasets: find their files, download the missing ones, verify them, load them.
//
// `load_dataset("cora")` looks for the files of a dataset in the data roots, in order:
//   - LoadOptions::root when given (and nowhere else);
//   - else $EDGEATTN_DATA when set;
//   - else the repository's bundled datasets/ and then the per-user download cache
//     ($XDG_CACHE_HOME/edgeattn, else ~/.cache/edgeattn: data::default_cache_dir()).
// The first root that holds every file of the dataset's format is used. When none does, the
// missing files are downloaded into the first writable root of that list that is not the bundled
// one (files the bundled root has are copied next to them, so one directory holds the whole
// dataset) from the URLs the official loaders use, as listed in the manifest compiled into the
// library (datasets/manifest.tsv): single files directly, members of a published archive (LINQS
// .tgz, OGB .zip) by downloading and unpacking it (data/download.hpp, data/archive.hpp). Downloads
// resume, retry, verify and land atomically; `LoadOptions::download = false`, EDGEATTN_OFFLINE or
// `--offline` turn them off.
//
// Every file's content (a file may be stored plain or gzip-compressed as `<name>.gz`) is checked
// against the manifest's sha256 where one is recorded. A missing file that cannot be downloaded
// raises IoError (DownloadError) naming the file, its expected sha256 and size, and its URL; a
// file whose content differs raises ChecksumError naming both digests. Where the manifest records
// no sha256 (files the project could not obtain to hash), Dataset::notes says so and gives the
// digest of what was loaded.
//
// Known datasets and their formats (the first is the default):
//   cora, citeseer           planetoid, linqs, npz      pubmed   planetoid, linqs
//   karate                   adjlist
//   ogbn-arxiv, ogbn-products, ogbn-proteins            ogb (OGB's archive, official split)
//   amazon-computers, amazon-photo, coauthor-cs, coauthor-physics, cora-full   npz (gnn-benchmark)
//   ppi                      graphsage (data/graphsage.hpp)
//   mutag, enzymes, proteins, nci1, dd, ptc_mr, imdb-binary, imdb-multi, reddit-binary, collab
//                            tu (data/tu_dataset.hpp: many graphs, graph labels)
//
// `load_dataset_path(path)` loads a file or directory in any supported format, sniffed from its
// name and content (no checksum: the manifest covers named datasets only).
//
// Example:
//   auto cora = edgeattn::data::load_dataset("cora");                       // Planetoid, public split
//   auto raw  = edgeattn::data::load_dataset("cora", {.format = "linqs"});
//   auto arx  = edgeattn::data::load_dataset("ogbn-arxiv");                 // downloads 81 MB once
//   auto mine = edgeattn::data::load_dataset_path("graphs/web-Google.txt.gz");
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/data/download.hpp"

namespace edgeattn::data {

/// One file (or, for archives unpacked whole, one directory) the registry knows.
struct ManifestEntry {
  std::string dataset, format;
  /// Relative to the data root. Ends in '/' for a directory unpacked whole from an archive.
  std::string path;
  std::string sha256;  ///< of the content (after gunzip); empty when not recorded
  int64_t bytes = -1;  ///< content size; -1 when not recorded
  std::string url;     ///< where the file (or the archive holding it) is officially published
  /// Empty when `url` is the file itself; else its path inside the archive at `url` (a prefix
  /// ending in '/' for a directory entry).
  std::string member;

  bool is_directory() const { return !path.empty() && path.back() == '/'; }
};

struct LoadOptions {
  /// Data root; empty means the search order above.
  std::filesystem::path root;
  /// One of the dataset's formats; empty means its default.
  std::string format;
  /// Verify every file's sha256 against the manifest before loading.
  bool verify = true;
  /// Download missing files (unless `download_options.offline`).
  bool download = true;
  DownloadOptions download_options;
  /// Told each step of a download ("downloading ... (81.0 MB)", "unpacking ..."), when set.
  std::function<void(const std::string&)> log;
  /// The manifest to use instead of the compiled-in one (tests and private mirrors); empty = built-in.
  std::span<const ManifestEntry> manifest;
};

/// The compiled-in manifest (datasets/manifest.tsv).
std::span<const ManifestEntry> manifest();
/// Names load_dataset accepts, e.g. {"amazon-computers", ..., "citeseer", "cora", ...}.
std::vector<std::string> dataset_names();
/// The formats of a named dataset, default first; InvalidArgument for an unknown name.
std::vector<std::string> dataset_formats(const std::string& name);
/// The first root load_dataset searches when LoadOptions::root is empty: $EDGEATTN_DATA when
/// set, else the repository's datasets/.
std::filesystem::path default_data_root();

/// The data root holding every file of the named dataset's format (searched as above), without
/// downloading anything; nullopt when no root has them all.
std::optional<std::filesystem::path> locate_dataset(const std::string& name, const LoadOptions& options = {});

/// Makes every file of a named dataset's format present and verified in one data root (see the
/// header comment), downloading what is missing, and returns that root. load_dataset calls it.
std::filesystem::path fetch_dataset(const std::string& name, const LoadOptions& options = {});

/// Loads a named dataset (see above). Fills Dataset::sources with each file's path and sha256.
Dataset load_dataset(const std::string& name, const LoadOptions& options = {});

/// Loads a dataset from a file or directory: a Planetoid directory (ind.<name>.x inside), a LINQS
/// directory or .content file, an npz archive, an OGB node-property directory (raw/edge.csv.gz),
/// a GraphSAGE directory (<prefix>-G.json), a TUDataset directory (<DS>_graph_indicator.txt),
/// a Matrix Market .mtx, an adjacency list (.adjlist), or otherwise an edge list.
/// With `map_features`, the dense features of an .npz are read in place (NpzOptions::map_features;
/// data/mapped_features.hpp); InvalidArgument for any other format.
Dataset load_dataset_path(const std::filesystem::path& path, bool map_features = false);

/// Checks `file`'s content against a manifest entry; throws ChecksumError naming the file and
/// both digests. Returns the sha256 it computed.
std::string verify_file(const std::filesystem::path& file, const ManifestEntry& entry);

}  // namespace edgeattn::data
