// Unpacking downloaded archives (zip, tar, tar.gz/.tgz, tar.bz2, tar.xz) with libarchive.
//
// Only regular files are written; directories are created as needed, and every other kind of
// entry (symbolic and hard links, devices, FIFOs) is skipped, so an archive can never make a later
// write land outside `dir`. A member whose path is absolute or climbs out with ".." raises
// ParseError instead of being written. Each file is written to a temporary name and renamed when
// complete; callers that need the whole tree to appear at once extract into a staging directory
// and rename that (the dataset registry does).
//
// Errors: IoError naming the archive when it cannot be opened, or a file that cannot be written
// (DownloadError with kind disk_full on ENOSPC/EDQUOT); ParseError naming the archive and the
// member for a corrupt or truncated archive or an unsafe member path; IoError listing what is
// missing when `members` names files the archive does not hold.
//
// Example:
//   // arxiv.zip holds arxiv/raw/edge.csv.gz, arxiv/split/time/train.csv.gz, ...
//   edgeattn::data::ExtractOptions opt;
//   opt.strip_prefix = "arxiv/";                   // arxiv/raw/edge.csv.gz -> DIR/raw/edge.csv.gz
//   auto files = edgeattn::data::extract_archive("arxiv.zip", "cache/ogbn-arxiv/ogb", opt);
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace edgeattn::data {

struct ExtractOptions {
  /// Extract only members under this prefix (e.g. "arxiv/"), written without it. Empty: all.
  std::string strip_prefix;
  /// When not empty: extract only these members (paths after strip_prefix), each to the path
  /// given beside it relative to `dir`; every one of them must be in the archive.
  std::vector<std::pair<std::string, std::string>> members;
};

/// One file written by extract_archive.
struct ExtractedFile {
  std::string member;          ///< its path in the archive
  std::filesystem::path path;  ///< where it was written
  int64_t bytes = 0;
};

/// Extracts `archive` into `dir` (created when missing); see the header comment.
std::vector<ExtractedFile> extract_archive(const std::filesystem::path& archive,
                                           const std::filesystem::path& dir,
                                           const ExtractOptions& options = {});

}  // namespace edgeattn::data
