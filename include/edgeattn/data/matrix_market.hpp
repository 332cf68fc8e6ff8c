// Matrix Market (NIST) coordinate files: the raw matrix, and the matrix read as a graph.
//
// Supported: `%%MatrixMarket matrix coordinate {real|integer|pattern} {general|symmetric|
// skew-symmetric}` (banner words are case-insensitive), `%` comment lines and blank lines before
// and between entries, a size line `rows cols nnz`, then exactly nnz 1-based entries
// `i j [value]`. Symmetric and skew-symmetric files store only the lower triangle (i >= j; i > j
// for skew-symmetric), as the format requires. Anything else - the dense `array` layout, `complex`
// or `hermitian` fields, `vector` objects, a wrong entry count, an index out of range - is a
// ParseError naming "<file>:<line>", what was expected and what was found.
//
//   MatrixMarketData   the entries as stored (one triangle for symmetric files), 0-based
//   *_matrix_market_graph   the matrix as an adjacency matrix: entry (i, j) is the edge i -> j
//                      (source i, destination j; Graph row j lists i). Symmetric files give both
//                      directions (skew-symmetric: the mirror gets -value). Values become
//                      Dataset::edge_weight in CSR order; pattern files have no weights.
//
// Example:
//   auto m  = edgeattn::data::load_matrix_market("web.mtx.gz");      // m.rows, m.row[k], ...
//   auto ds = edgeattn::data::load_matrix_market_graph("road.mtx",
//                 {.self_loops = edgeattn::SelfLoops::remove});
//   ds.graph.num_edges(); ds.edge_weight.size();                     // equal, or 0 for pattern
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {

enum class MatrixMarketField { real, integer, pattern };
enum class MatrixMarketSymmetry { general, symmetric, skew_symmetric };

/// The entries of a coordinate file in file order, 0-based.
struct MatrixMarketData {
  int64_t rows = 0;
  int64_t cols = 0;
  MatrixMarketField field = MatrixMarketField::real;
  MatrixMarketSymmetry symmetry = MatrixMarketSymmetry::general;
  std::vector<int64_t> row;   // [nnz] in [0, rows)
  std::vector<int64_t> col;   // [nnz] in [0, cols)
  std::vector<double> value;  // [nnz]; empty for pattern files (integer values are exact)
  int64_t size_line = 0;      // 1-based line of the size line, for errors about the shape

  int64_t nnz() const { return static_cast<int64_t>(row.size()); }
};

struct MatrixMarketGraphOptions {
  /// Diagonal entries: keep, remove, or `add` (one self-loop per node, weight 1 where added).
  SelfLoops self_loops = SelfLoops::keep;
  /// Repeated (i, j) entries (not allowed by the format, but common): `merge` makes them one edge
  /// whose weight is the entries' sum (as scipy.io.mmread(...).tocsr() does).
  Duplicates duplicates = Duplicates::merge;
  /// Refuse matrices with more rows than this (ParseError naming the size line) instead of
  /// allocating per-node arrays for them.
  int64_t max_nodes = std::numeric_limits<int32_t>::max();
};

/// Parses Matrix Market text held in memory; `name` names the source in errors.
MatrixMarketData parse_matrix_market(std::string_view text, const std::string& name);
/// Reads `path` (via read_file, so `.gz` works) and parses it.
MatrixMarketData load_matrix_market(const std::filesystem::path& path);

/// The matrix as a graph (must be square: ParseError naming the size line otherwise).
/// Dataset: name = `name`, format "matrix-market", no features, no labels.
Dataset matrix_market_graph(const MatrixMarketData& matrix, const std::string& name,
                            const MatrixMarketGraphOptions& options = {});
Dataset parse_matrix_market_graph(std::string_view text, const std::string& name,
                                  const MatrixMarketGraphOptions& options = {});
/// Dataset name = the file name without `.mtx`/`.gz`; sources records the path and size.
Dataset load_matrix_market_graph(const std::filesystem::path& path,
                                 const MatrixMarketGraphOptions& options = {});

}  // namespace edgeattn::data
