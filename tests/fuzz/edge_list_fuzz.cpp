// Fuzzes the edge-list and adjacency-list readers under a few option sets chosen by the first byte.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/edge_list.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  edgeattn::data::EdgeListOptions o;
  o.undirected = (mode & 1) != 0;
  o.relabel = (mode & 2) != 0;
  o.one_based = (mode & 4) != 0;
  o.self_loops = (mode & 8) != 0 ? edgeattn::SelfLoops::remove : edgeattn::SelfLoops::keep;
  o.duplicates = (mode & 16) != 0 ? edgeattn::Duplicates::error : edgeattn::Duplicates::merge;
  o.max_nodes = 1 << 16;  // ids above it must be refused with ParseError, not allocated for
  try {
    if ((mode & 32) != 0)
      (void)edgeattn::data::parse_adjacency_list(text, "fuzz.adjlist", o);
    else
      (void)edgeattn::data::parse_edge_list(text, "fuzz.txt", o);
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
