// Fuzzes the TUDataset reader from memory: the input is the files' texts separated by NUL bytes,
// in the order A, graph_indicator, graph_labels, node_labels, node_attributes, edge_labels,
// edge_attributes (the last four optional: absent when the input has fewer parts).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/tu_dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (parts.size() < 6) {
    const size_t end = input.find('\0', start);
    if (end == std::string_view::npos) break;
    parts.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  parts.push_back(input.substr(start));
  edgeattn::data::TuTexts t;
  std::string_view* slots[] = {
      &t.a,           &t.graph_indicator, &t.graph_labels, &t.node_labels, &t.node_attributes,
      &t.edge_labels, &t.edge_attributes};
  for (size_t k = 0; k < parts.size(); ++k) *slots[k] = parts[k];
  try {
    (void)edgeattn::data::parse_tu_dataset(t);
  } catch (const edgeattn::Error&) {
  }
  return 0;
}
