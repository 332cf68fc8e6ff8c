// Matrix Market coordinate reader. One pass over the text with TextScanner (from_chars numbers,
// no per-line allocation); the entry vectors are reserved from the header's nnz, capped by what
// the text can hold so a lying header cannot force a huge allocation.
#include "edgeattn/data/matrix_market.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

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

}  // namespace

MatrixMarketData parse_matrix_market(std::string_view text, const std::string& name) {
  TextScanner s(text, name);
  MatrixMarketData m;
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

  // Every entry takes at least 4 bytes ("1 1\n"), so this bounds the reservation by the input.
  const auto reserve = static_cast<size_t>(std::min<int64_t>(nnz, static_cast<int64_t>(text.size() / 4 + 1)));
  m.row.reserve(reserve);
  m.col.reserve(reserve);
  const bool has_value = m.field != MatrixMarketField::pattern;
  if (has_value) m.value.reserve(reserve);
  const bool is_symmetric = m.symmetry == MatrixMarketSymmetry::symmetric;
  const bool is_skew = m.symmetry == MatrixMarketSymmetry::skew_symmetric;

  int64_t count = 0;
  while (!s.at_end()) {
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
      m.value.push_back(v);
    } else if (m.field == MatrixMarketField::integer) {
      m.value.push_back(static_cast<double>(s.read_int64("an integer value")));
    }
    s.expect_end_of_line("the entry");
    m.row.push_back(i - 1);
    m.col.push_back(j - 1);
    ++count;
  }
  if (count != nnz)
    s.fail("expected ", nnz, " entries (the size line at line ", m.size_line, "), found ", count,
           " before the end of the file");
  return m;
}

MatrixMarketData load_matrix_market(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  return parse_matrix_market(text, path.string());
}

Dataset matrix_market_graph(const MatrixMarketData& m, const std::string& name,
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
  const bool mirrored = m.symmetry != MatrixMarketSymmetry::general;
  const double mirror_sign = m.symmetry == MatrixMarketSymmetry::skew_symmetric ? -1.0 : 1.0;
  const bool has_value = !m.value.empty();
  std::vector<float> weight;
  Dataset ds;
  const BuildOptions build{
      .self_loops = options.self_loops, .duplicates = options.duplicates, .symmetrize = false};
  if (!mirrored) {  // the entries are the edges: build from the parsed arrays, no copy
    if (has_value) weight.assign(m.value.begin(), m.value.end());
    ds.graph = detail::build_weighted_graph(m.rows, m.row, m.col, weight, build, ds.edge_weight);
  } else {
    // Mirrors are listed explicitly (not via BuildOptions::symmetrize) so that a skew-symmetric
    // mirror can carry -value. Node ids are below 2^31 - 1 (checked above): 32 bits hold them.
    std::vector<int32_t> src, dst;
    const size_t cap = m.row.size() * 2;
    src.reserve(cap);
    dst.reserve(cap);
    if (has_value) weight.reserve(cap);
    for (size_t k = 0; k < m.row.size(); ++k) {
      const auto i = static_cast<int32_t>(m.row[k]), j = static_cast<int32_t>(m.col[k]);
      src.push_back(i);
      dst.push_back(j);
      if (has_value) weight.push_back(static_cast<float>(m.value[k]));
      if (i != j) {
        src.push_back(j);
        dst.push_back(i);
        if (has_value) weight.push_back(static_cast<float>(mirror_sign * m.value[k]));
      }
    }
    ds.graph = detail::build_weighted_graph(m.rows, src, dst, weight, build, ds.edge_weight);
  }
  ds.name = name;
  ds.format = "matrix-market";
  return ds;
}

Dataset parse_matrix_market_graph(std::string_view text, const std::string& name,
                                  const MatrixMarketGraphOptions& options) {
  return matrix_market_graph(parse_matrix_market(text, name), name, options);
}

Dataset load_matrix_market_graph(const std::filesystem::path& path, const MatrixMarketGraphOptions& options) {
  const std::string text = read_file(path);
  Dataset ds = matrix_market_graph(parse_matrix_market(text, path.string()), path.string(), options);
  ds.name = detail::stem_without_gz(path);
  ds.sources.push_back(detail::source_file(path, text.size()));
  return ds;
}

}  // namespace edgeattn::data
