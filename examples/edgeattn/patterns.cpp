#include "patterns.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>

#include "args.hpp"
#include "edgeattn/core/error.hpp"

namespace edgeattn::cli {

PatternSpec parse_pattern(const std::string& text) {
  using Kind = PatternSpec::Kind;
  PatternSpec spec;
  spec.text = text;
  if (text == "uniform") {
    spec.kind = Kind::uniform;
  } else if (text == "rmat") {
    spec.kind = Kind::rmat;
  } else if (text == "complete") {
    spec.kind = Kind::complete;
  } else if (text == "causal") {
    spec.kind = Kind::causal;
  } else if (text.starts_with("window:")) {
    spec.kind = Kind::window;
    const std::string w = text.substr(7);
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), spec.window);
    if (ec != std::errc() || end != w.data() + w.size() || spec.window < 0)
      throw UsageError("--pattern window:W needs a non-negative integer radius W, got '" + text + "'");
  } else if (std::filesystem::is_regular_file(text)) {
    spec.kind = Kind::file;
    spec.path = text;
  } else {
    throw UsageError("--pattern is '" + text +
                     "': expected uniform, rmat, complete, causal, window:W, or the path of an edge-list "
                     "file (no such file)");
  }
  return spec;
}

bool takes_edge_count(const PatternSpec& spec) {
  return spec.kind == PatternSpec::Kind::uniform || spec.kind == PatternSpec::Kind::rmat;
}

Pattern make_pattern(const PatternSpec& spec, int64_t nodes, int64_t edges, uint64_t seed) {
  using Kind = PatternSpec::Kind;
  switch (spec.kind) {
    case Kind::uniform:
      return erdos_renyi_graph(nodes, edges, seed);
    case Kind::rmat:
      return rmat_graph(nodes, edges, seed);
    case Kind::complete:
      return CompletePattern(nodes, nodes);
    case Kind::causal:
      return CausalPattern(nodes);
    case Kind::window:
      return WindowPattern::sliding(nodes, spec.window);
    case Kind::file: {
      const EdgeList list = read_edge_list_file(spec.path);
      if (list.num_nodes == 0) raise<InvalidArgument>("edge list '", spec.path, "' has no edges");
      if (nodes > 0 && list.num_nodes > nodes)
        raise<InvalidArgument>("--nodes is ", nodes, " but ", spec.path, " uses node id ",
                               list.num_nodes - 1);
      const int64_t n = std::max(nodes, list.num_nodes);
      return build_graph(n, n, std::span<const int32_t>(list.src), std::span<const int32_t>(list.dst));
    }
  }
  return Graph();
}

EdgeList read_edge_list_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) raise<IoError>("cannot open edge list '", path, "'");
  EdgeList list;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    const char* p = line.data();
    const char* end = p + line.size();
    const auto skip_space = [&] {
      while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    };
    int64_t ids[2];
    skip_space();
    if (p == end) continue;  // blank or comment-only line
    for (int64_t& id : ids) {
      skip_space();
      const auto [next, ec] = std::from_chars(p, end, id);
      if (ec != std::errc() || id < 0 || id >= std::numeric_limits<int32_t>::max())
        raise<ParseError>(path, ":", line_no, ": expected two node ids 'src dst' (integers in [0, ",
                          std::numeric_limits<int32_t>::max(), ")), got '", line, "'");
      p = next;
    }
    skip_space();
    if (p != end)
      raise<ParseError>(path, ":", line_no, ": expected two node ids 'src dst', got '", line, "'");
    list.src.push_back(static_cast<int32_t>(ids[0]));
    list.dst.push_back(static_cast<int32_t>(ids[1]));
  }
  if (in.bad()) raise<IoError>("error reading edge list '", path, "'");
  int32_t max_id = -1;
  for (size_t k = 0; k < list.src.size(); ++k) max_id = std::max({max_id, list.src[k], list.dst[k]});
  list.num_nodes = int64_t{max_id} + 1;
  return list;
}

}  // namespace edgeattn::cli
