// Fuzzes the npz path end to end: the ZIP reader, the NPY header parser and dtype conversions
// (parse_npz), and the gnn-benchmark dataset assembly (load_npz_from_bytes). Limits are small so
// a declared size can never make the fuzzer allocate gigabytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/npz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  edgeattn::data::NpzLimits limits;
  limits.max_member_bytes = 16u << 20;
  limits.max_total_bytes = 64u << 20;
  try {
    for (const auto& [key, a] : edgeattn::data::parse_npz(bytes, "fuzz.npz", limits)) {
      try {
        if (a.dtype.is_string())
          (void)a.to_strings();
        else
          (void)a.to_int64s();
      } catch (const edgeattn::Error&) {
      }
    }
  } catch (const edgeattn::Error&) {
  }
  try {
    edgeattn::data::NpzOptions options;
    options.limits = limits;
    options.undirected = size % 2 == 1;
    (void)edgeattn::data::load_npz_from_bytes(bytes, "fuzz.npz", options);
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
