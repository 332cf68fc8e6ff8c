// Matrix Market coordinate reader. One pass over the text with TextScanner (from_chars numbers,
// no per-line allocation); the entry vectors are reserved from the header's nnz, capped by what
// the text can hold so a lying header cannot force a huge allocation.
#include "edgeattn/data/matrix_market.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "core/huge_pages.hpp"
#include "data/reader_support.hpp"
#include "data/text_scanner.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

namespace edgeattn::data {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

void parse_banner(TextScanner& s, MatrixMarketData& m) {
  if (s.at_end())
    s.fail("expected the banner '%%MatrixMarket matrix coordinate <field> <symmetry>', found an empty file");
  const std::string_view head = s.read_token("the banner '%%MatrixMarket'");
  if (lower(head) != "%%matrixmarket")
    s.fail("expected the banner '%%MatrixMarket matrix coordinate <field> <symmetry>', found '", head, "'");
  const std::string object = lower(s.read_token("the object 'matrix'"));
  if (object != "matrix")
    s.fail("expected the object 'matrix', found '", object, "' (only matrices are supported)");
  const std::string format = lower(s.read_token("the format 'coordinate'"));
  if (format != "coordinate")
    s.fail("expected the format 'coordinate', found '", format,
           "' (the dense 'array' format is not supported; only 'coordinate')");
  const std::string field = lower(s.read_token("the field (real, integer or pattern)"));
  if (field == "real")
    m.field = MatrixMarketField::real;
  else if (field == "integer")
    m.field = MatrixMarketField::integer;
  else if (field == "pattern")
    m.field = MatrixMarketField::pattern;
  else
    s.fail("expected the field real, integer or pattern, found '", field,
           "' (complex matrices are not supported)");
  const std::string symmetry = lower(s.read_token("the symmetry (general, symmetric or skew-symmetric)"));
  if (symmetry == "general")
    m.symmetry = MatrixMarketSymmetry::general;
  else if (symmetry == "symmetric")
    m.symmetry = MatrixMarketSymmetry::symmetric;
  else if (symmetry == "skew-symmetric")
    m.symmetry = MatrixMarketSymmetry::skew_symmetric;
  else
    s.fail("expected the symmetry general, symmetric or skew-symmetric, found '", symmetry,
           "' (hermitian matrices are not supported)");
  if (m.field == MatrixMarketField::pattern && m.symmetry == MatrixMarketSymmetry::skew_symmetric)
    s.fail("expected a field with values for a skew-symmetric matrix, found 'pattern'");
  s.expect_end_of_line("the banner");
}

// The banner, comments and size line: fills everything of `m` but the entries and returns the
// declared number of entries.
int64_t parse_header(TextScanner& s, MatrixMarketData& m) {
  parse_banner(s, m);
  while (!s.at_end() && s.skip_blank_or_comment("%")) {
  }
  if (s.at_end()) s.fail("expected the size line 'rows cols entries', found the end of the file");
  m.size_line = s.line();
  m.rows = s.read_int64("the number of rows");
  m.cols = s.read_int64("the number of columns");
  const int64_t nnz = s.read_int64("the number of entries");
  if (m.rows < 0 || m.cols < 0 || nnz < 0)
    s.fail("expected non-negative sizes, found ", m.rows, " x ", m.cols, " with ", nnz, " entries");
  if (m.symmetry != MatrixMarketSymmetry::general && m.rows != m.cols)
    s.fail("expected a square matrix for symmetry '",
           m.symmetry == MatrixMarketSymmetry::symmetric ? "symmetric" : "skew-symmetric", "', found ",
           m.rows, " x ", m.cols);
  s.expect_end_of_line("the size line");
  return nnz;
}

// The entries after the header, 0-based, into row/col (and value unless the field is pattern),
// with capacity for `capacity_factor` times as many (2 leaves room for the mirrors of a
// symmetric matrix). Index is int64_t for MatrixMarketData, int32_t for graphs (the caller has
// checked that rows and cols fit); Value is double, or float for edge weights.
//
// Most lines are plain "i j value" and take TextScanner's fast path; its result is used only
// when every check below passes, so any other line - and every error - goes through the general
// path, which reports it.
template <class Index, class Value>
void parse_entries(TextScanner& s, const MatrixMarketData& m, int64_t nnz, size_t text_size,
                   size_t capacity_factor, std::vector<Index>& row, std::vector<Index>& col,
                   std::vector<Value>& value) {
  // Every entry takes at least 4 bytes ("1 1\n"), so this bounds the reservation by the input.
  const auto reserve =
      capacity_factor * static_cast<size_t>(std::min<int64_t>(nnz, static_cast<int64_t>(text_size / 4 + 1)));
  edgeattn::detail::huge_page_reserve(row, reserve);
  edgeattn::detail::huge_page_reserve(col, reserve);
  const bool has_value = m.field != MatrixMarketField::pattern;
  const bool is_integer = m.field == MatrixMarketField::integer;
  if (has_value) edgeattn::detail::huge_page_reserve(value, reserve);
  const bool is_symmetric = m.symmetry == MatrixMarketSymmetry::symmetric;
  const bool is_skew = m.symmetry == MatrixMarketSymmetry::skew_symmetric;
  const auto rows = static_cast<uint64_t>(m.rows), cols = static_cast<uint64_t>(m.cols);

  int64_t count = 0;
  while (!s.at_end()) {
    if (count < nnz) {
      const TextScanner::Mark start = s.mark();
      uint64_t i = 0, j = 0;
      double v = 0;
      const bool plain =
          has_value ? s.read_uint_pair_value_line(i, j, v, is_integer) : s.read_uint_pair_line(i, j);
      if (plain) {
        if (i >= 1 && i <= rows && j >= 1 && j <= cols && (!is_symmetric || i >= j) && (!is_skew || i > j) &&
            std::isfinite(v)) {
          row.push_back(static_cast<Index>(i - 1));
          col.push_back(static_cast<Index>(j - 1));
          if (has_value) value.push_back(static_cast<Value>(v));
          ++count;
          continue;
        }
        s.restore(start);
      }
    }
    if (s.skip_blank_or_comment("%")) continue;
    if (count == nnz)
      s.fail("expected no more entries (the size line at line ", m.size_line, " declares ", nnz,
             "), found another");
    const int64_t i = s.read_int64("a row index");
    const int64_t j = s.read_int64("a column index");
    if (i < 1 || i > m.rows) s.fail("expected a row index in [1, ", m.rows, "], found ", i);
    if (j < 1 || j > m.cols) s.fail("expected a column index in [1, ", m.cols, "], found ", j);
    if (is_symmetric && i < j)
      s.fail("expected an entry on or below the diagonal of a symmetric matrix, found (", i, ", ", j, ")");
    if (is_skew && i <= j)
      s.fail("expected an entry below the diagonal of a skew-symmetric matrix, found (", i, ", ", j, ")");
    if (m.field == MatrixMarketField::real) {
      const double v = s.read_double("a value");
      if (!std::isfinite(v)) s.fail("expected a finite value, found ", v);
      value.push_back(static_cast<Value>(v));
    } else if (is_integer) {
      value.push_back(static_cast<Value>(static_cast<double>(s.read_int64("an integer value"))));
    }
    s.expect_end_of_line("the entry");
    row.push_back(static_cast<Index>(i - 1));
    col.push_back(static_cast<Index>(j - 1));
    ++count;
  }
  if (count != nnz)
    s.fail("expected ", nnz, " entries (the size line at line ", m.size_line, "), found ", count,
           " before the end of the file");
}

// Throws unless `m` is the adjacency matrix of a graph edgeattn can hold.
void check_graph_shape(const MatrixMarketData& m, const std::string& name,
                       const MatrixMarketGraphOptions& options) {
  if (m.rows != m.cols)
    raise<ParseError>(name, ":", m.size_line, ": expected a square adjacency matrix, found ", m.rows, " x ",
                      m.cols);
  if (m.rows > options.max_nodes)
    raise<ParseError>(name, ":", m.size_line, ": expected at most max_nodes = ", options.max_nodes,
                      " rows, found ", m.rows);
  if (m.rows > std::numeric_limits<int32_t>::max())
    raise<ParseError>(name, ":", m.size_line, ": expected at most ", std::numeric_limits<int32_t>::max(),
                      " rows (a Graph's node limit), found ", m.rows);
  detail::check_graph_fits(edgeattn::detail::message(name, ":", m.size_line), m.rows,
                           m.nnz() * (m.symmetry == MatrixMarketSymmetry::general ? 1 : 2),
                           edgeattn::detail::message("the size line declares ", m.rows, " rows"), "");
}

// The dataset of the graph with edges src[k] -> dst[k] and (unless empty) their weights.
template <class Index>
Dataset graph_dataset(int64_t num_nodes, std::span<const Index> src, std::span<const Index> dst,
                      std::span<const float> weight, const std::string& name,
                      const MatrixMarketGraphOptions& options) {
  Dataset ds;
  const BuildOptions build{
      .self_loops = options.self_loops, .duplicates = options.duplicates, .symmetrize = false};
  ds.graph = detail::build_weighted_graph(num_nodes, src, dst, weight, build, ds.edge_weight,
                                          detail::RepeatedWeights::sum);
  ds.name = name;
  ds.format = "matrix-market";
  return ds;
}

// The graph of the entries src/dst/weight (weight empty for pattern matrices). The entries of a
// symmetric or skew-symmetric matrix are one triangle: their mirrors are appended in place first
// (explicitly, not via BuildOptions::symmetrize, so that a skew-symmetric mirror carries -value).
Dataset graph_of_entries(const MatrixMarketData& m, std::vector<int32_t>& src, std::vector<int32_t>& dst,
                         std::vector<float>& weight, const std::string& name,
                         const MatrixMarketGraphOptions& options) {
  if (m.symmetry != MatrixMarketSymmetry::general) {
    const float sign = m.symmetry == MatrixMarketSymmetry::skew_symmetric ? -1.f : 1.f;
    const size_t n = src.size();
    const bool has_value = !weight.empty();
    for (size_t k = 0; k < n; ++k) {
      if (src[k] == dst[k]) continue;
      src.push_back(dst[k]);
      dst.push_back(src[k]);
      if (has_value) weight.push_back(sign * weight[k]);
    }
  }
  return graph_dataset<int32_t>(m.rows, src, dst, weight, name, options);
}

}  // namespace

MatrixMarketData parse_matrix_market(std::string_view text, const std::string& name) {
  TextScanner s(text, name);
  MatrixMarketData m;
  const int64_t nnz = parse_header(s, m);
  parse_entries(s, m, nnz, text.size(), 1, m.row, m.col, m.value);
  return m;
}

MatrixMarketData load_matrix_market(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  return parse_matrix_market(text, path.string());
}

Dataset matrix_market_graph(const MatrixMarketData& m, const std::string& name,
                            const MatrixMarketGraphOptions& options) {
  check_graph_shape(m, name, options);
  if (m.symmetry == MatrixMarketSymmetry::general) {  // the entries are the edges: no index copy
    const std::vector<float> weight(m.value.begin(), m.value.end());
    return graph_dataset<int64_t>(m.rows, m.row, m.col, weight, name, options);
  }
  // Node ids are below 2^31 - 1 (checked above): 32 bits hold them.
  std::vector<int32_t> src, dst;
  std::vector<float> weight;
  src.reserve(2 * m.row.size());
  dst.reserve(2 * m.row.size());
  weight.reserve(2 * m.value.size());
  for (size_t k = 0; k < m.row.size(); ++k) {
    src.push_back(static_cast<int32_t>(m.row[k]));
    dst.push_back(static_cast<int32_t>(m.col[k]));
  }
  for (const double v : m.value) weight.push_back(static_cast<float>(v));
  return graph_of_entries(m, src, dst, weight, name, options);
}

Dataset parse_matrix_market_graph(std::string_view text, const std::string& name,
                                  const MatrixMarketGraphOptions& options) {
  // The same as matrix_market_graph(parse_matrix_market(text, name), ...), with the shape checked
  // before the entries are read and the entries parsed straight into 32-bit ids and float weights.
  TextScanner s(text, name);
  MatrixMarketData m;
  const int64_t nnz = parse_header(s, m);
  check_graph_shape(m, name, options);
  std::vector<int32_t> src, dst;
  std::vector<float> weight;
  parse_entries(s, m, nnz, text.size(), m.symmetry == MatrixMarketSymmetry::general ? 1 : 2, src, dst,
                weight);
  return graph_of_entries(m, src, dst, weight, name, options);
}

Dataset load_matrix_market_graph(const std::filesystem::path& path, const MatrixMarketGraphOptions& options) {
  const std::string text = read_file(path);
  Dataset ds = parse_matrix_market_graph(text, path.string(), options);
  ds.name = detail::stem_without_gz(path);
  ds.sources.push_back(detail::source_file(path, text.size()));
  return ds;
}

}  // namespace edgeattn::data
