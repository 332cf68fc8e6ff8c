#include "edgeattn/data/tu_dataset.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "data/edge_assembly.hpp"
#include "data/text_scanner.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;

namespace {

struct TextFile {
  std::string path;
  std::string text;
};

// Where the files come from: a directory (load_tu_dataset) or memory (parse_tu_dataset). `get`
// returns the file of a suffix ("_A.txt") or nullopt; `where` names a missing one.
struct Files {
  std::function<std::optional<TextFile>(const std::string& suffix)> get;
  std::function<std::string(const std::string& suffix)> where;

  std::optional<TextFile> optional(const std::string& suffix) const { return get(suffix); }
  TextFile required(const std::string& suffix) const {
    auto f = get(suffix);
    if (!f) raise<IoError>(where(suffix), ": no such file (a TUDataset needs it)");
    return std::move(*f);
  }
};

// One integer per line (blank lines skipped).
std::vector<int64_t> read_column(const TextFile& f, const char* what) {
  std::vector<int64_t> out;
  TextScanner s(f.text, f.path);
  while (!s.at_end()) {
    if (s.skip_blank_or_comment("")) continue;
    out.push_back(s.read_int64(what));
    s.expect_end_of_line();
  }
  return out;
}

// rows == expected, or a ParseError "<file>: R rows, expected one per <unit> (N in <source>)".
void check_rows(const TextFile& f, size_t rows, int64_t expected, const char* unit,
                const std::string& source) {
  if (static_cast<int64_t>(rows) != expected)
    raise<ParseError>(f.path, ": ", rows, " rows, expected one per ", unit, " (", expected, " in ", source,
                      ")");
}

// PyG's features of a TUDataset's nodes or edges: the <unit>_attributes.txt rows (reals), then the
// <unit>_labels.txt categories one-hot, `count` rows each. A labels file may give several
// comma-separated columns (the same number on every line); as PyG's read_tu_data, each column is
// shifted to start at 0 and one-hot encoded with (its max + 1) classes, the columns side by side.
struct AttributesThenLabels {
  std::vector<float> attrs;
  int64_t attr_cols = 0;
  std::vector<int64_t> labels;          // [count, label_columns] row-major
  int64_t label_columns = 0;            // columns of the labels file
  std::vector<int64_t> label_min;       // per column
  std::vector<int64_t> one_hot_offset;  // per column: its first feature after the attributes
  int64_t one_hot_cols = 0;             // one-hot features, all columns together

  int64_t cols() const { return attr_cols + one_hot_cols; }
  /// [count, cols()] row-major.
  std::vector<float> rows(int64_t count) const {
    std::vector<float> out(static_cast<size_t>(count * cols()), 0.f);
    for (int64_t k = 0; k < count; ++k) {
      float* row = out.data() + k * cols();
      std::copy_n(attrs.data() + k * attr_cols, attr_cols, row);
      for (int64_t c = 0; c < label_columns; ++c) {
        const auto col = static_cast<size_t>(c);
        row[attr_cols + one_hot_offset[col] + labels[static_cast<size_t>(k * label_columns + c)] -
            label_min[col]] = 1.f;
      }
    }
    return out;
  }
};

AttributesThenLabels read_attributes_then_labels(const Files& files, const std::string& unit, int64_t count,
                                                 const std::string& count_source) {
  AttributesThenLabels out;
  if (const auto f = files.optional("_" + unit + "_attributes.txt")) {
    TextScanner s(f->text, f->path);
    FloatRows r = read_float_rows(s, unit + " attribute", /*skip_blank=*/true);
    check_rows(*f, static_cast<size_t>(r.rows), count, unit.c_str(), count_source);
    out.attrs = std::move(r.values);
    out.attr_cols = r.cols;
  }
  if (const auto f = files.optional("_" + unit + "_labels.txt")) {
    const std::string what = unit + " label";
    TextScanner s(f->text, f->path);
    int64_t rows = 0;
    while (!s.at_end()) {
      if (s.skip_blank_or_comment("")) continue;
      int64_t c = 0;
      do {
        out.labels.push_back(s.read_int64(what));
        ++c;
      } while (!s.at_end_of_line());
      if (rows == 0)
        out.label_columns = c;
      else if (c != out.label_columns)
        s.fail("the row has ", c, " labels, expected ", out.label_columns, " (as on the first row)");
      s.skip_rest_of_line();
      ++rows;
    }
    check_rows(*f, static_cast<size_t>(rows), count, unit.c_str(), count_source);
    for (int64_t c = 0; c < out.label_columns && rows > 0; ++c) {
      int64_t lo = out.labels[static_cast<size_t>(c)], hi = lo;
      for (int64_t k = 1; k < rows; ++k) {
        const int64_t v = out.labels[static_cast<size_t>(k * out.label_columns + c)];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      // The span in unsigned arithmetic: hi - lo may not fit an int64.
      if (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) >= 10000)
        raise<ParseError>(f->path, ": ", unit, " labels", out.label_columns > 1 ? " (column " : "",
                          out.label_columns > 1 ? std::to_string(c + 1) + ")" : std::string(), " span ", lo,
                          " to ", hi, "; too many classes to one-hot encode");
      out.label_min.push_back(lo);
      out.one_hot_offset.push_back(out.one_hot_cols);
      out.one_hot_cols += hi - lo + 1;
    }
  }
  return out;
}

std::string infer_prefix(const fs::path& dir) {
  std::string found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "_A.txt") == 0) {
      const std::string p = name.substr(0, name.size() - 6);
      if (!found.empty() && found != p)
        raise<InvalidArgument>(dir.string(), ": holds both ", found, "_A.txt and ", p,
                               "_A.txt; say which with TuOptions::prefix");
      found = p;
    }
  }
  if (found.empty()) raise<IoError>(dir.string(), ": no <DS>_A.txt (not a TUDataset directory)");
  return found;
}

Dataset assemble(const Files& files, const std::string& prefix, const TuOptions& options) {
  Dataset ds;
  ds.name = options.name.empty() ? prefix : options.name;
  ds.format = "tu";

  // Graph membership: nodes are grouped by graph, graphs numbered 1..N in order.
  const TextFile ind = files.required("_graph_indicator.txt");
  const std::vector<int64_t> graph_of = read_column(ind, "graph id");
  const int64_t n = static_cast<int64_t>(graph_of.size());
  if (n == 0) raise<ParseError>(ind.path, ": no nodes");
  ds.graph_ptr.push_back(0);
  int64_t current = 0;  // the graph whose nodes are being read; 0 before the first
  for (int64_t v = 0; v < n; ++v) {
    const int64_t g = graph_of[static_cast<size_t>(v)];
    if (g < 1)
      raise<ParseError>(ind.path, ":", v + 1, ": graph id ", g,
                        "; expected graphs numbered 1, 2, ... (1-based)");
    if (g == current) continue;
    if (g != current + 1)
      raise<ParseError>(ind.path, ":", v + 1, ": graph id ", g, " after graph ", current,
                        "; expected nodes grouped by graph, graphs numbered 1, 2, ... in order");
    if (v > 0) ds.graph_ptr.push_back(v);
    current = g;
  }
  ds.graph_ptr.push_back(n);
  const int64_t num_graphs = static_cast<int64_t>(ds.graph_ptr.size()) - 1;

  // Edges, 1-based.
  std::vector<int64_t> src, dst;
  {
    const TextFile a = files.required("_A.txt");
    TextScanner s(a.text, a.path);
    while (!s.at_end()) {
      if (s.skip_blank_or_comment("")) continue;
      const int64_t i = s.read_int64("source node id");
      const int64_t j = s.read_int64("target node id");
      for (const int64_t id : {i, j})
        if (id < 1 || id > n)
          s.fail("node id ", id, " is out of range [1, ", n, "] (", ind.path, " has ", n, " nodes)");
      if (graph_of[static_cast<size_t>(i - 1)] != graph_of[static_cast<size_t>(j - 1)])
        s.fail("edge ", i, " -> ", j, " joins graph ", graph_of[static_cast<size_t>(i - 1)], " to graph ",
               graph_of[static_cast<size_t>(j - 1)]);
      s.expect_end_of_line("the edge (expected 'i, j')");
      src.push_back(i - 1);
      dst.push_back(j - 1);
    }
  }
  const int64_t stored = static_cast<int64_t>(src.size());
  // Self-loops removed and repeated edges merged, as PyG's read_tu_data (remove_self_loops, then
  // coalesce); a layer that wants self-loops adds its own.
  int64_t loops = 0;
  for (size_t k = 0; k < src.size(); ++k) loops += src[k] == dst[k];
  ds.graph = build_graph(n, n, src, dst, {.self_loops = SelfLoops::remove, .duplicates = Duplicates::merge});
  ds.notes.push_back(
      ds.name + ": " + std::to_string(num_graphs) + " graphs, " + std::to_string(n) + " nodes, " +
      std::to_string(stored) + " edges as stored -> " + std::to_string(ds.graph.num_edges()) +
      (loops > 0 ? " (" + std::to_string(loops) + " self-loops removed, as PyG's TUDataset)" : ""));

  // Graph labels -> 0..K-1 in sorted order of the values.
  {
    const TextFile f = files.required("_graph_labels.txt");
    const std::vector<int64_t> raw = read_column(f, "graph label");
    if (static_cast<int64_t>(raw.size()) != num_graphs)
      raise<ParseError>(f.path, ": ", raw.size(), " rows, expected one per graph (", num_graphs, " in ",
                        ind.path, ")");
    std::map<int64_t, int32_t> code;
    for (const int64_t v : raw) code.emplace(v, 0);
    int32_t next = 0;
    for (auto& [value, c] : code) {
      c = next++;
      ds.graph_labels.class_names.push_back(std::to_string(value));
    }
    for (const int64_t v : raw) ds.graph_labels.classes.push_back(code.at(v));
    ds.graph_labels.num_classes = next;
  }

  // Node features: attributes, then one-hot node labels (PyG's order).
  const AttributesThenLabels node = read_attributes_then_labels(files, "node", n, ind.path);
  if (node.cols() > 0)
    ds.features = Features(Tensor({n, node.cols()}, node.rows(n)));
  else
    ds.notes.push_back("no node attributes or labels: the graphs have no node features");
  // Edge features, likewise, one row per line of _A.txt, carried into the graph's CSR order (merged
  // repeated edges sum their rows, as PyG's coalesce).
  const AttributesThenLabels edge = read_attributes_then_labels(files, "edge", stored, files.where("_A.txt"));
  if (edge.cols() > 0 && stored > 0)
    ds.edge_attr = edge_rows_in_csr_order(ds.graph, edge.rows(stored), edge.cols(), stored);
  if (files.optional("_graph_attributes.txt"))
    ds.notes.push_back(prefix +
                       "_graph_attributes.txt is not loaded (graph regression targets are not "
                       "supported by this reader yet)");
  ds.validate();
  return ds;
}

}  // namespace

Dataset load_tu_dataset(const fs::path& dir, const TuOptions& options) {
  if (!fs::is_directory(dir)) raise<IoError>(dir.string(), ": not a directory (expected a TUDataset folder)");
  const std::string prefix = options.prefix.empty() ? infer_prefix(dir) : options.prefix;
  std::vector<SourceFile> sources;
  const std::vector<std::string> skipped = {"_graph_attributes.txt"};
  Files files;
  files.get = [&](const std::string& suffix) -> std::optional<TextFile> {
    const auto found = find_plain_or_gz(dir / (prefix + suffix));
    if (!found) return std::nullopt;
    // Files this reader does not load are only noted: their existence is all it needs.
    if (std::find(skipped.begin(), skipped.end(), suffix) != skipped.end())
      return TextFile{found->string(), {}};
    TextFile f{found->string(), read_file(*found)};
    sources.push_back({f.path, "", static_cast<int64_t>(f.text.size())});
    return f;
  };
  files.where = [&](const std::string& suffix) { return (dir / (prefix + suffix)).string(); };
  Dataset ds = assemble(files, prefix, options);
  ds.sources = std::move(sources);
  return ds;
}

Dataset parse_tu_dataset(const TuTexts& texts, const TuOptions& options) {
  const std::string prefix = options.prefix.empty() ? std::string("TU") : options.prefix;
  const std::pair<const char*, std::string_view> given[] = {{"_A.txt", texts.a},
                                                            {"_graph_indicator.txt", texts.graph_indicator},
                                                            {"_graph_labels.txt", texts.graph_labels},
                                                            {"_node_labels.txt", texts.node_labels},
                                                            {"_node_attributes.txt", texts.node_attributes},
                                                            {"_edge_labels.txt", texts.edge_labels},
                                                            {"_edge_attributes.txt", texts.edge_attributes}};
  Files files;
  files.get = [&](const std::string& suffix) -> std::optional<TextFile> {
    for (const auto& [s, text] : given)
      if (suffix == s && (text.data() != nullptr || suffix == "_A.txt" || suffix == "_graph_indicator.txt" ||
                          suffix == "_graph_labels.txt"))
        return TextFile{prefix + suffix, std::string(text)};
    return std::nullopt;
  };
  files.where = [&](const std::string& suffix) { return prefix + suffix; };
  return assemble(files, prefix, options);
}

}  // namespace edgeattn::data
