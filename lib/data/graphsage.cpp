// GraphSAGE-layout reader. The three JSON files are read with nlohmann::json's SAX interface:
// each handler below keeps only what the Dataset needs (ids, flags, edge endpoints, labels), so
// PPI's 31 MB G.json never becomes a document tree.
#include "edgeattn/data/graphsage.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "data/edge_assembly.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/npy.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

// The SAX callbacks every handler shares: reject what it does not expect, report parse errors
// with the file and byte offset.
struct SaxBase : nlohmann::json_sax<json> {
  std::string file;
  explicit SaxBase(std::string f) : file(std::move(f)) {}
  bool binary(binary_t&) override { return true; }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    raise<ParseError>(file, ": byte ", position, ": malformed JSON (", ex.what(), ")");
  }
};

// A JSON scalar as a node id: numbers as decimal text, strings as themselves.
struct IdScalar {
  std::string text;
  bool set = false;
};

// <prefix>-G.json: "directed", nodes[*].{id, val, test}, links[*].{source, target}.
struct GraphHandler : SaxBase {
  using SaxBase::SaxBase;
  int depth = 0;
  std::vector<char> open;  // the containers around the cursor, outermost first: 'o' object, 'a' array
  std::string top_key;     // key at depth 1
  std::string item_key;    // key inside a node or link object
  bool directed = false;
  struct Node {
    std::string id;
    bool val = false, test = false;
  };
  std::vector<Node> nodes;
  std::vector<int64_t> src, dst;
  int64_t link_source = -1, link_target = -1;

  // Inside one object of the top-level "nodes" or "links" list: {"nodes": [{...here...}]}.
  bool in_item() const {
    return open.size() == 3 && open[0] == 'o' && open[1] == 'a' && open[2] == 'o' &&
           (top_key == "nodes" || top_key == "links");
  }
  void scalar_id(const std::string& text) {
    if (in_item() && top_key == "nodes" && item_key == "id") nodes.back().id = text;
  }
  void position(int64_t v) {
    if (!in_item() || top_key != "links") return;
    if (item_key == "source") link_source = v;
    if (item_key == "target") link_target = v;
  }
  // "directed" and a node's "val" and "test" are booleans; 1 or "yes" there counted as false.
  void check_not_a_flag(const std::string& text) const {
    if (open.size() == 1 && top_key == "directed")
      raise<ParseError>(file, ": \"directed\" is ", text, ", expected true or false");
    if (in_item() && top_key == "nodes" && (item_key == "val" || item_key == "test"))
      raise<ParseError>(file, ": node ", nodes.size() - 1, " has \"", item_key, "\": ", text,
                        ", expected true or false");
  }
  bool null() override { return true; }
  bool boolean(bool v) override {
    if (open.size() == 1 && top_key == "directed") directed = v;
    if (in_item() && top_key == "nodes") {
      if (item_key == "val") nodes.back().val = v;
      if (item_key == "test") nodes.back().test = v;
    }
    return true;
  }
  bool number_integer(number_integer_t v) override {
    check_not_a_flag(std::to_string(v));
    scalar_id(std::to_string(v));
    position(v);
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    check_not_a_flag(std::to_string(v));
    scalar_id(std::to_string(v));
    position(v > static_cast<number_unsigned_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v));
    return true;
  }
  bool number_float(number_float_t, const string_t& s) override {
    check_not_a_flag(s);
    scalar_id(s);
    if (in_item() && top_key == "links" && (item_key == "source" || item_key == "target"))
      raise<ParseError>(file, ": link ", src.size(), " has ", item_key, " ", s,
                        "; expected the position of a node in \"nodes\" (a whole number)");
    return true;
  }
  bool string(string_t& s) override {
    check_not_a_flag("\"" + s + "\"");
    scalar_id(s);
    if (in_item() && top_key == "links" && (item_key == "source" || item_key == "target"))
      raise<ParseError>(file, ": link ", src.size(), " has a string ", item_key, " '", s,
                        "'; expected the position of a node in \"nodes\" (networkx 1.x node-link data)");
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth;
    open.push_back('o');
    if (in_item()) {
      item_key.clear();
      if (top_key == "nodes") nodes.emplace_back();
      if (top_key == "links") link_source = link_target = -1;
    }
    return true;
  }
  bool end_object() override {
    if (in_item() && top_key == "links") {
      if (link_source < 0 || link_target < 0)
        raise<ParseError>(file, ": link ", src.size(), " lacks a non-negative \"source\" or \"target\"");
      src.push_back(link_source);
      dst.push_back(link_target);
    }
    if (in_item() && top_key == "nodes" && nodes.back().id.empty())
      raise<ParseError>(file, ": node ", nodes.size() - 1, " has no \"id\"");
    --depth;
    open.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth;
    open.push_back('a');
    return true;
  }
  bool end_array() override {
    --depth;
    open.pop_back();
    return true;
  }
  bool key(string_t& k) override {
    if (open.size() == 1) top_key = k;
    if (in_item()) item_key = k;
    return true;
  }
};

// <prefix>-id_map.json: {"id": row}.
struct IdMapHandler : SaxBase {
  using SaxBase::SaxBase;
  int depth = 0;
  std::string key_now;
  std::unordered_map<std::string, int64_t> rows;
  bool value(int64_t v) {
    if (depth != 1) raise<ParseError>(file, ": expected {\"<node id>\": <row>, ...}, found a nested value");
    if (v < 0) raise<ParseError>(file, ": node '", key_now, "' has row ", v, ", expected >= 0");
    rows[key_now] = v;
    return true;
  }
  bool null() override { raise<ParseError>(file, ": node '", key_now, "' has null instead of a row"); }
  bool boolean(bool) override {
    raise<ParseError>(file, ": node '", key_now, "' has a boolean instead of a row");
  }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(static_cast<int64_t>(v)); }
  bool number_float(number_float_t, const string_t& s) override {
    raise<ParseError>(file, ": node '", key_now, "' has row ", s, ", expected a whole number");
  }
  bool string(string_t& s) override {
    raise<ParseError>(file, ": node '", key_now, "' has row '", s, "', expected a whole number");
  }
  bool start_object(std::size_t) override { return ++depth, true; }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override {
    raise<ParseError>(file, ": node '", key_now, "' has a list, expected a row number");
  }
  bool end_array() override { return true; }
  bool key(string_t& k) override { return key_now = k, true; }
};

// <prefix>-class_map.json: {"id": class} or {"id": [0/1, ...]}.
struct ClassMapHandler : SaxBase {
  using SaxBase::SaxBase;
  int depth = 0;
  std::string key_now;
  std::unordered_map<std::string, std::vector<int32_t>> labels;  // one entry (class) or C entries (multi-hot)
  bool multi = false, single = false;
  bool value(int64_t v) {
    if (depth == 1) {
      single = true;
      if (v < 0 || v > INT32_MAX)
        raise<ParseError>(file, ": node '", key_now, "' has class ", v, ", expected >= 0");
    } else if (depth == 2) {
      multi = true;
      if (v != 0 && v != 1)
        raise<ParseError>(file, ": node '", key_now, "' has ", v, " in its label list, expected 0 or 1");
    } else {
      raise<ParseError>(file, ": expected {\"<node id>\": class or [0/1, ...]}, found a deeper value");
    }
    labels[key_now].push_back(static_cast<int32_t>(v));
    return true;
  }
  bool null() override { raise<ParseError>(file, ": node '", key_now, "' has a null label"); }
  bool boolean(bool v) override { return value(v ? 1 : 0); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(static_cast<int64_t>(v)); }
  bool number_float(number_float_t v, const string_t& s) override {
    // Range first: converting an out-of-range double to an integer is undefined.
    if (!(v >= 0 && v <= INT32_MAX) || v != std::trunc(v))
      raise<ParseError>(file, ": node '", key_now, "' has label ", s, ", expected a whole number >= 0");
    return value(static_cast<int64_t>(v));
  }
  bool string(string_t& s) override {
    raise<ParseError>(file, ": node '", key_now, "' has label '", s, "', expected a number");
  }
  bool start_object(std::size_t) override {
    if (depth > 0)
      raise<ParseError>(file, ": node '", key_now, "' has an object, expected a class id or a list");
    return ++depth, true;
  }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override {
    if (depth != 1)
      raise<ParseError>(file, ": expected {\"<node id>\": class or [0/1, ...]}, found a list ",
                        depth == 0 ? "at the top" : "inside a label list");
    ++depth;
    multi = true;
    labels[key_now];  // an empty list is a node with no positive class
    return true;
  }
  bool end_array() override { return --depth, true; }
  bool key(string_t& k) override { return key_now = k, true; }
};

template <class Handler>
Handler parse_json_text(std::string_view text, const std::string& name) {
  Handler h(name);
  json::sax_parse(text, &h);
  if (h.depth != 0) raise<ParseError>(name, ": the JSON ends inside an object or list");
  return h;
}

std::string read_required(const fs::path& path) {
  if (!fs::exists(path)) raise<IoError>(path.string(), ": no such file (a GraphSAGE dataset needs it)");
  return read_file(path);
}

std::string infer_prefix(const fs::path& dir) {
  std::string found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    for (const std::string suffix : {"-G.json", "-G.json.gz"}) {
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const std::string p = name.substr(0, name.size() - suffix.size());
        if (!found.empty() && found != p)
          raise<InvalidArgument>(dir.string(), ": holds both ", found, "-G.json and ", p,
                                 "-G.json; say which with GraphSageOptions::prefix");
        found = p;
      }
    }
  }
  if (found.empty()) raise<IoError>(dir.string(), ": no <prefix>-G.json (not a GraphSAGE dataset directory)");
  return found;
}

fs::path file_of(const fs::path& dir, const std::string& prefix, const std::string& suffix) {
  const fs::path plain = dir / (prefix + suffix);
  if (const auto found = find_plain_or_gz(plain)) return *found;
  return plain;
}

// Everything after reading: the three JSON texts and the parsed features (if any), each named
// as the messages should name it.
struct NamedText {
  std::string name;
  std::string_view text;
};

Dataset assemble(const NamedText& g_file, const NamedText& id_file, const NamedText& class_file,
                 const std::optional<NpyArray>& feats, const std::string& prefix, const std::string& name) {
  Dataset ds;
  ds.name = name.empty() ? prefix : name;
  ds.format = "graphsage";
  const std::string& g_path = g_file.name;
  const std::string& id_path = id_file.name;
  const std::string& class_path = class_file.name;
  GraphHandler g = parse_json_text<GraphHandler>(g_file.text, g_path);
  const IdMapHandler ids = parse_json_text<IdMapHandler>(id_file.text, id_path);
  const ClassMapHandler classes = parse_json_text<ClassMapHandler>(class_file.text, class_path);

  // Node k of the Dataset is feats.npy row k: map every node of G.json to its row.
  const int64_t n = static_cast<int64_t>(g.nodes.size());
  std::vector<int64_t> row_of(static_cast<size_t>(n));
  std::vector<uint8_t> taken(static_cast<size_t>(n), 0);
  for (int64_t p = 0; p < n; ++p) {
    const std::string& id = g.nodes[static_cast<size_t>(p)].id;
    const auto it = ids.rows.find(id);
    if (it == ids.rows.end()) raise<ParseError>(id_path, ": node '", id, "' of ", g_path, " has no row");
    if (it->second >= n)
      raise<ParseError>(id_path, ": node '", id, "' has row ", it->second, ", but ", g_path, " has ", n,
                        " nodes");
    if (taken[static_cast<size_t>(it->second)]++)
      raise<ParseError>(id_path, ": row ", it->second, " is given to two nodes (one is '", id, "')");
    row_of[static_cast<size_t>(p)] = it->second;
  }

  // Edges: positions in "nodes" -> rows.
  for (size_t e = 0; e < g.src.size(); ++e) {
    for (int64_t* end : {&g.src[e], &g.dst[e]}) {
      if (*end >= n)
        raise<ParseError>(g_path, ": link ", e, " names node position ", *end, ", but there are ", n,
                          " nodes");
      *end = row_of[static_cast<size_t>(*end)];
    }
  }
  const int64_t stored = static_cast<int64_t>(g.src.size());
  AssembledGraph assembled =
      assemble_graph(n, std::move(g.src), std::move(g.dst), {}, !g.directed, SelfLoops::keep);
  ds.graph = std::move(assembled.graph);
  ds.notes.push_back(ds.name + ": " + std::to_string(stored) + " links -> " +
                     std::to_string(ds.graph.num_edges()) + " edges" +
                     (g.directed ? "" : " (both directions)"));

  // Labels.
  if (classes.multi && classes.single)
    raise<ParseError>(class_path, ": mixes class ids and label lists; expected one kind for every node");
  int64_t num_classes = 0;
  for (const auto& [id, v] : classes.labels)
    num_classes =
        std::max<int64_t>(num_classes, classes.multi ? static_cast<int64_t>(v.size()) : v.front() + 1);
  std::vector<float> multi_hot;
  if (classes.multi) multi_hot.assign(static_cast<size_t>(n * num_classes), 0.f);
  if (!classes.multi) ds.labels.classes.assign(static_cast<size_t>(n), -1);
  for (int64_t p = 0; p < n; ++p) {
    const std::string& id = g.nodes[static_cast<size_t>(p)].id;
    const auto it = classes.labels.find(id);
    if (it == classes.labels.end()) raise<ParseError>(class_path, ": node '", id, "' has no label");
    const int64_t row = row_of[static_cast<size_t>(p)];
    if (classes.multi) {
      if (static_cast<int64_t>(it->second.size()) != num_classes)
        raise<ParseError>(class_path, ": node '", id, "' has ", it->second.size(), " labels, expected ",
                          num_classes, " (as other nodes)");
      std::copy(it->second.begin(), it->second.end(), multi_hot.begin() + row * num_classes);
    } else {
      ds.labels.classes[static_cast<size_t>(row)] = it->second.front();
    }
  }
  ds.labels.num_classes = num_classes;
  if (classes.multi) ds.labels.multi_hot = Tensor({n, num_classes}, multi_hot);

  // Features (optional).
  if (feats) {
    const NpyArray& a = *feats;
    if (a.rank() != 2 || a.shape[0] != n) {
      std::string shape = "[";
      for (size_t k = 0; k < a.shape.size(); ++k) shape += (k ? ", " : "") + std::to_string(a.shape[k]);
      raise<ParseError>(a.name, ": shape ", shape, "], expected [", n,
                        ", num_features] (one row per node of ", g_path, ")");
    }
    Tensor x({n, a.shape[1]});
    a.to_floats(x.span());
    ds.features = Features(std::move(x));
  } else {
    ds.notes.push_back("no " + prefix + "-feats.npy: the dataset has no node features");
  }

  // Split from the nodes' flags.
  Split split;
  std::vector<int8_t> part(static_cast<size_t>(n), 0);
  for (int64_t p = 0; p < n; ++p) {
    const auto& node = g.nodes[static_cast<size_t>(p)];
    if (node.val && node.test)
      raise<ParseError>(g_path, ": node '", node.id, "' is marked both \"val\" and \"test\"");
    part[static_cast<size_t>(row_of[static_cast<size_t>(p)])] = node.val ? 1 : node.test ? 2 : 0;
  }
  for (int64_t v = 0; v < n; ++v)
    (part[static_cast<size_t>(v)] == 0   ? split.train
     : part[static_cast<size_t>(v)] == 1 ? split.val
                                         : split.test)
        .push_back(v);
  ds.splits["graphsage"] = std::move(split);
  ds.default_split = "graphsage";
  ds.validate();
  return ds;
}

}  // namespace

Dataset load_graphsage(const fs::path& dir, const GraphSageOptions& options) {
  if (!fs::is_directory(dir))
    raise<IoError>(dir.string(), ": not a directory (expected a GraphSAGE dataset)");
  const std::string prefix = options.prefix.empty() ? infer_prefix(dir) : options.prefix;
  const fs::path g_path = file_of(dir, prefix, "-G.json");
  const fs::path id_path = file_of(dir, prefix, "-id_map.json");
  const fs::path class_path = file_of(dir, prefix, "-class_map.json");
  const std::string g_text = read_required(g_path), id_text = read_required(id_path),
                    class_text = read_required(class_path);
  std::optional<NpyArray> feats;
  const auto feats_path = find_plain_or_gz(dir / (prefix + "-feats.npy"));
  if (feats_path) feats = read_npy(*feats_path);
  Dataset ds = assemble({g_path.string(), g_text}, {id_path.string(), id_text},
                        {class_path.string(), class_text}, feats, prefix, options.name);
  for (const fs::path& p : {g_path, id_path, class_path})
    ds.sources.push_back({p.string(), "", static_cast<int64_t>(fs::file_size(p))});
  if (feats_path)
    ds.sources.push_back({feats_path->string(), "", static_cast<int64_t>(fs::file_size(*feats_path))});
  return ds;
}

Dataset parse_graphsage(std::string_view g_json, std::string_view id_map_json,
                        std::string_view class_map_json, std::string_view feats_npy,
                        const GraphSageOptions& options) {
  const std::string prefix = options.prefix.empty() ? std::string("graphsage") : options.prefix;
  std::optional<NpyArray> feats;
  if (!feats_npy.empty()) feats = parse_npy(feats_npy, prefix + "-feats.npy");
  return assemble({prefix + "-G.json", g_json}, {prefix + "-id_map.json", id_map_json},
                  {prefix + "-class_map.json", class_map_json}, feats, prefix, options.name);
}

}  // namespace edgeattn::data
