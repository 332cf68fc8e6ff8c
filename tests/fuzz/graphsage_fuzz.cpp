// Fuzzes the GraphSAGE-layout reader from memory: the input is the texts of <prefix>-G.json,
// -id_map.json, -class_map.json and (optionally) -feats.npy, separated by NUL bytes (the .npy part
// last, so it may hold NULs itself).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/graphsage.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view parts[4];
  size_t start = 0;
  for (int k = 0; k < 3; ++k) {
    const size_t end = input.find('\0', start);
    if (end == std::string_view::npos) {
      parts[k] = input.substr(start);
      start = input.size();
      break;
    }
    parts[k] = input.substr(start, end - start);
    start = end + 1;
  }
  if (start < input.size()) parts[3] = input.substr(start);
  try {
    (void)edgeattn::data::parse_graphsage(parts[0], parts[1], parts[2], parts[3]);
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
