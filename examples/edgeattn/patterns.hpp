// The tool's --pattern option: synthetic graphs, structured patterns, or an edge-list file.
#pragma once

#include <cstdint>
#include <string>

#include "edgeattn/graph/generators.hpp"
#include "edgeattn/graph/pattern.hpp"

namespace edgeattn::cli {

/// A parsed --pattern value.
struct PatternSpec {
  enum class Kind { uniform, rmat, complete, causal, window, file };
  Kind kind = Kind::uniform;
  int64_t window = 0;  ///< window: radius w (row i attends to |i - j| <= w)
  std::string path;    ///< file: the edge list
  std::string text;    ///< as the user wrote it, for reports
};

/// "uniform", "rmat", "complete", "causal", "window:W", or a path to an existing file.
/// Throws UsageError for anything else.
PatternSpec parse_pattern(const std::string& text);

/// True for the kinds whose edge count the user chooses (uniform, rmat).
bool takes_edge_count(const PatternSpec& spec);

/// Builds the pattern. `nodes` is the number of nodes (for a file: at least max id + 1, or 0 to
/// take max id + 1); `edges` is used by uniform and rmat only.
Pattern make_pattern(const PatternSpec& spec, int64_t nodes, int64_t edges, uint64_t seed);

/// Reads an edge list: one "src dst" pair of non-negative integers per line, separated by spaces
/// or tabs; blank lines and lines starting with '#' are skipped, as is anything after a '#'.
/// Throws IoError if the file cannot be read, ParseError naming the path and line otherwise.
EdgeList read_edge_list_file(const std::string& path);

}  // namespace edgeattn::cli
