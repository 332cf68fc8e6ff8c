// Fuzzes the Matrix Market reader: the raw parse and, for small matrices, the graph built from it,
// both through MatrixMarketData and through parse_matrix_market_graph (which parses the entries
// straight into 32-bit ids and float weights). The two must agree: the same graph and weights, or
// both an error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/matrix_market.hpp"

namespace {

std::optional<edgeattn::data::Dataset> try_graph(auto&& build) {
  try {
    return build();
  } catch (const edgeattn::Error&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgeattn::data;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // max_nodes keeps per-node arrays small; a larger matrix must be refused with ParseError.
  const MatrixMarketGraphOptions options{.max_nodes = 1 << 16};
  const auto via_data = try_graph(
      [&] { return matrix_market_graph(parse_matrix_market(text, "fuzz.mtx"), "fuzz.mtx", options); });
  const auto direct = try_graph([&] { return parse_matrix_market_graph(text, "fuzz.mtx", options); });
  if (via_data.has_value() != direct.has_value()) std::abort();
  if (direct) {
    const auto& a = direct->graph;
    const auto& b = via_data->graph;
    if (!std::ranges::equal(a.row_ptr(), b.row_ptr()) || !std::ranges::equal(a.col_idx(), b.col_idx()) ||
        direct->edge_weight != via_data->edge_weight)
      std::abort();
  }
  return 0;
}
