// Fuzzes gzip decompression (every reader of a .gz file goes through it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (edgeattn::is_gzip(bytes)) (void)edgeattn::gunzip(bytes, "fuzz-input");
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
