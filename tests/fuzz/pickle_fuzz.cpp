// Fuzzes the strict Planetoid unpickler (data/pickle.hpp) on bytes from memory, then reads the
// result the way load_planetoid does (csr matrix, one-hot ndarray, adjacency lists). Seeds:
// corpus/pickle/ (ind.cora.y, ind.pubmed.x, a small defaultdict(list) graph).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/pickle.hpp"
#include "edgeattn/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using edgeattn::data::Value;
  try {
    edgeattn::data::PickleLimits limits;
    limits.max_values = 1 << 16;  // keeps each run fast; the limit logic itself is what is exercised
    const edgeattn::data::Pickle p = edgeattn::data::parse_pickle(bytes, "fuzz-input", limits);
    const Value& root = p.root();
    volatile double sink = 0;
    if (root.kind == Value::Kind::csr_matrix) {
      const edgeattn::CsrMatrix& m = root.as_csr(p.name());
      for (const float v : m.values()) sink = sink + v;
    } else if (root.kind == Value::Kind::ndarray) {
      const edgeattn::data::NdArray& a = root.as_ndarray(p.name());
      for (int64_t k = 0; k < a.numel() && k < 4096; ++k) sink = sink + a.number_at(k);
    } else if (root.kind == Value::Kind::defaultdict_list || root.kind == Value::Kind::dict) {
      for (size_t k = 0; k + 1 < root.items.size(); k += 2) {
        sink = sink + static_cast<double>(root.items[k]->as_int(p.name()));
        for (const Value* v : root.items[k + 1]->items)
          sink = sink + static_cast<double>(v->as_int(p.name()));
      }
    }
    (void)root.type_name();
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
