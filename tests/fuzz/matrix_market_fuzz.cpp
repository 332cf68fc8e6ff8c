// Fuzzes the Matrix Market reader: the raw parse and, for small matrices, the graph built from it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/matrix_market.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto m = edgeattn::data::parse_matrix_market(text, "fuzz.mtx");
    // max_nodes keeps per-node arrays small; a larger matrix must be refused with ParseError.
    (void)edgeattn::data::matrix_market_graph(m, "fuzz.mtx", {.max_nodes = 1 << 16});
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
