#include "edgeattn/data/ogb.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "data/edge_assembly.hpp"
#include "data/ogb_binary_raw.hpp"
#include "data/text_scanner.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

namespace fs = std::filesystem;

namespace edgeattn::data {
namespace {

constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();

struct CsvFile {
  std::string path;  // as named in errors
  std::string text;
};

/// `<dir>/<rel>.gz`, else `<dir>/<rel>`; nullopt when neither exists.
std::optional<fs::path> find_csv(const fs::path& dir, const std::string& rel) {
  const fs::path gz = dir / (rel + ".gz");
  if (fs::exists(gz)) return gz;
  const fs::path plain = dir / rel;
  if (fs::exists(plain)) return plain;
  return std::nullopt;
}

std::optional<CsvFile> read_optional(const fs::path& dir, const std::string& rel, Dataset& ds) {
  const auto p = find_csv(dir, rel);
  if (!p) return std::nullopt;
  CsvFile f{p->string(), read_file(*p)};
  ds.sources.push_back({f.path, "", static_cast<int64_t>(f.text.size())});
  return f;
}

CsvFile read_required(const fs::path& dir, const std::string& rel, Dataset& ds, const char* why) {
  auto f = read_optional(dir, rel, ds);
  if (!f) raise<IoError>((dir / (rel + ".gz")).string(), ": no such file (nor ", rel, "); ", why);
  return std::move(*f);
}

/// A file of one integer on one line (num-node-list, num-edge-list).
int64_t read_single_count(const CsvFile& f, const char* what) {
  TextScanner s(f.text, f.path);
  while (!s.at_end() && s.skip_blank_or_comment("")) {
  }
  const int64_t v = s.read_int64(what);
  if (v < 0 || v > kMaxNodes) s.fail(what, " ", v, " is out of range [0, 2^31)");
  s.expect_end_of_line();
  while (!s.at_end()) {
    if (!s.skip_blank_or_comment(""))
      s.fail("a second graph: a node-property-prediction dataset holds exactly one graph");
  }
  return v;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t b = 0;
  for (;;) {
    const size_t e = line.find(',', b);
    fields.push_back(line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  return fields;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

/// A label field: empty or NaN means "no label". `where` is "<file>:<line>".
double parse_label(const std::string& where, std::string_view field) {
  field = trim(field);
  if (field.empty() || field == "nan" || field == "NaN" || field == "NAN") return std::nan("");
  double v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size())
    raise<ParseError>(where, ": expected a label (a number, or empty/NaN for none), found '", field, "'");
  return v;
}

/// The ids of one split file, sorted, with the line each came from.
struct SplitPart {
  std::string path;
  std::vector<std::pair<int64_t, int64_t>> ids;  // (node id, line)
};

SplitPart read_split_part(const fs::path& dir, const std::string& rel, int64_t n, Dataset& ds) {
  const CsvFile f = read_required(dir, rel, ds, "every split folder needs train, valid and test");
  SplitPart part{f.path, {}};
  TextScanner s(f.text, f.path);
  while (!s.at_end()) {
    if (s.skip_blank_or_comment("")) continue;
    const int64_t v = s.read_int64("node id");
    if (v < 0 || v >= n) s.fail("node id ", v, " is out of range [0, ", n, ")");
    part.ids.emplace_back(v, s.line());
    s.expect_end_of_line();
  }
  std::sort(part.ids.begin(), part.ids.end());
  for (size_t k = 1; k < part.ids.size(); ++k)
    if (part.ids[k].first == part.ids[k - 1].first)
      raise<ParseError>(f.path, ":", std::max(part.ids[k].second, part.ids[k - 1].second), ": node ",
                        part.ids[k].first, " is listed again (first on line ",
                        std::min(part.ids[k].second, part.ids[k - 1].second), ")");
  return part;
}

// The raw CSV files (see ogb.hpp): graph, edge and node features, labels into `ds`; returns N.
int64_t read_csv_raw(const fs::path& dir, const OgbOptions& options, Dataset& ds) {
  // --- sizes --------------------------------------------------------------------------------------
  const CsvFile nodes_file = read_required(dir, "raw/num-node-list.csv", ds, "it gives the number of nodes");
  const int64_t n = read_single_count(nodes_file, "number of nodes");
  const std::string n_source = nodes_file.path + ":1";

  // --- edges --------------------------------------------------------------------------------------
  std::vector<int64_t> src, dst;
  {
    const CsvFile f = read_required(dir, "raw/edge.csv", ds, "it lists the edges");
    TextScanner s(f.text, f.path);
    while (!s.at_end()) {
      const int64_t u = s.read_int64("source node id");
      const int64_t v = s.read_int64("target node id");
      if (u < 0 || u >= n) s.fail("source node id ", u, " is out of range [0, ", n, ") (", n_source, ")");
      if (v < 0 || v >= n) s.fail("target node id ", v, " is out of range [0, ", n, ") (", n_source, ")");
      s.expect_end_of_line("the edge (expected 'src,dst')");
      src.push_back(u);
      dst.push_back(v);
    }
    if (const auto counts = read_optional(dir, "raw/num-edge-list.csv", ds)) {
      const int64_t m = read_single_count(*counts, "number of edges");
      if (m != static_cast<int64_t>(src.size()))
        raise<ParseError>(f.path, ": ", src.size(), " edges, but ", counts->path, ":1 says ", m);
    }
  }

  // --- optional edge features: one column = weights; several = edge attributes and/or node
  // features averaged from them ---------------------------------------------------------------------
  std::vector<float> weight;
  std::vector<float> attr;  // [E, columns] when the edge features are kept as edge_attr
  int64_t attr_dim = 0;
  std::vector<double> edge_mean;    // [n, columns] when node features come from edge features
  std::vector<int64_t> edge_count;  // [n]
  if (const auto f = read_optional(dir, "raw/edge-feat.csv", ds)) {
    TextScanner s(f->text, f->path);
    size_t columns = 0;
    if (!s.at_end()) {
      TextScanner probe(f->text, f->path);
      columns = split_commas(probe.read_line()).size();
    }
    if (columns > 1 && (options.node_features_from_edges || options.edge_attr)) {
      const int64_t d = static_cast<int64_t>(columns);
      if (options.edge_attr) {
        attr_dim = d;
        attr.reserve(src.size() * columns);
      }
      // node_features_from_edges: each node's feature is the mean of the features of its edges
      // (both ends for an undirected graph, the target otherwise), accumulated row by row.
      if (options.node_features_from_edges) {
        edge_mean.assign(static_cast<size_t>(n * d), 0.0);
        edge_count.assign(static_cast<size_t>(n), 0);
      }
      std::vector<double> row(columns);
      size_t e = 0;
      while (!s.at_end()) {
        if (e == src.size()) s.fail("more rows than the ", src.size(), " edges of edge.csv");
        for (size_t k = 0; k < columns; ++k) {
          row[k] = s.read_float("edge feature value");
          if (k + 1 < columns && s.at_end_of_line())
            s.fail("the row has ", k + 1, " values, expected ", columns);
        }
        s.expect_end_of_line("the edge feature row (expected " + std::to_string(columns) + " values)");
        if (options.edge_attr)
          for (const double v : row) attr.push_back(static_cast<float>(v));
        if (options.node_features_from_edges) {
          auto add = [&](int64_t v) {
            for (int64_t k = 0; k < d; ++k)
              edge_mean[static_cast<size_t>(v * d + k)] += row[static_cast<size_t>(k)];
            ++edge_count[static_cast<size_t>(v)];
          };
          add(dst[e]);
          if (options.undirected && src[e] != dst[e]) add(src[e]);
        }
        ++e;
      }
      if (e != src.size())
        raise<ParseError>(f->path, ":", s.line(), ": ", e, " rows, expected one per edge (", src.size(), ")");
      if (options.node_features_from_edges)
        for (int64_t v = 0; v < n; ++v)
          for (int64_t k = 0; k < d; ++k)
            if (edge_count[static_cast<size_t>(v)] > 0)
              edge_mean[static_cast<size_t>(v * d + k)] /=
                  static_cast<double>(edge_count[static_cast<size_t>(v)]);
    } else if (columns > 1) {
      ds.notes.push_back(f->path + ": " + std::to_string(columns) +
                         " edge feature columns not loaded (OgbOptions::edge_attr is off and "
                         "node_features_from_edges is not set)");
    } else {
      weight.reserve(src.size());
      while (!s.at_end()) {
        if (weight.size() == src.size()) s.fail("more rows than the ", src.size(), " edges of edge.csv");
        weight.push_back(s.read_float("edge weight"));
        s.expect_end_of_line("the edge feature row (expected one value)");
      }
      if (weight.size() != src.size())
        raise<ParseError>(f->path, ":", s.line(), ": ", weight.size(), " rows, expected one per edge (",
                          src.size(), ")");
    }
  }
  {
    AssembledGraph g = assemble_graph(n, std::move(src), std::move(dst), weight, options.undirected,
                                      options.self_loops, attr, attr_dim);
    std::vector<float>().swap(attr);
    ds.graph = std::move(g.graph);
    ds.edge_weight = std::move(g.edge_weight);
    ds.edge_attr = std::move(g.edge_attr);
    std::ostringstream note;
    note << ds.name << ": " << g.stored_entries << " stored edges";
    if (g.stored_self_loops > 0) note << " (" << g.stored_self_loops << " self-loops)";
    note << " -> " << ds.graph.num_edges() << " edges";
    if (options.undirected) note << " after adding reverse edges";
    if (options.self_loops == SelfLoops::remove && g.stored_self_loops > 0) note << ", self-loops removed";
    if (options.self_loops == SelfLoops::add) note << ", one self-loop per node";
    ds.notes.push_back(note.str());
  }

  // --- node features: dense [N, F] ----------------------------------------------------------------
  if (const auto f = read_optional(dir, "raw/node-feat.csv", ds)) {
    TextScanner s(f->text, f->path);
    const FloatRows r = read_float_rows(s, "feature value", /*skip_blank=*/false, n,
                                        "more rows than the " + std::to_string(n) + " nodes of " + n_source);
    const int64_t rows = r.rows, cols = r.cols;
    if (rows != n)
      raise<ParseError>(f->path, ":", s.line(), ": ", rows, " rows, expected one per node (", n, " in ",
                        n_source, ")");
    ds.features = Features(Tensor({n, cols}, r.values));
  } else if (!edge_mean.empty()) {
    const int64_t d = static_cast<int64_t>(edge_mean.size()) / std::max<int64_t>(n, 1);
    Tensor x({n, d});
    for (size_t i = 0; i < edge_mean.size(); ++i) x.data()[i] = static_cast<float>(edge_mean[i]);
    ds.features = Features(std::move(x));
    ds.notes.push_back("node features: the mean of each node's " + std::to_string(d) +
                       " edge features (no node-feat.csv; as OGB's and PyG's ogbn-proteins examples do)");
  }

  // --- labels -------------------------------------------------------------------------------------
  if (const auto f = read_optional(dir, "raw/node-label.csv", ds)) {
    TextScanner s(f->text, f->path);
    std::vector<double> values;
    int64_t rows = 0, cols = 0;
    while (!s.at_end()) {
      if (rows == n) s.fail("more rows than the ", n, " nodes of ", n_source);
      const std::string where = f->path + ":" + std::to_string(s.line());
      const auto fields = split_commas(s.read_line());
      const int64_t c = static_cast<int64_t>(fields.size());
      if (rows == 0)
        cols = c;
      else if (c != cols)
        raise<ParseError>(where, ": the row has ", c, " columns, expected ", cols, " (as on line 1)");
      for (const auto field : fields) {
        const double v = parse_label(where, field);
        if (cols == 1 && !std::isnan(v) && (v < 0 || v >= kMaxNodes || v != std::trunc(v)))
          raise<ParseError>(where, ": label '", trim(field), "' is not a class id (a whole number >= 0)");
        if (cols > 1 && v != 0.0 && v != 1.0)
          raise<ParseError>(where, ": multi-label entry '", trim(field), "' is not 0 or 1");
        values.push_back(v);
      }
      ++rows;
    }
    if (rows != n)
      raise<ParseError>(f->path, ":", s.line(), ": ", rows, " rows, expected one per node (", n, " in ",
                        n_source, ")");
    if (cols == 1) {
      ds.labels.classes.resize(values.size());
      int64_t max_label = -1, unlabelled = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        const bool none = std::isnan(values[i]);
        unlabelled += none;
        ds.labels.classes[i] = none ? -1 : static_cast<int32_t>(values[i]);
        max_label = std::max<int64_t>(max_label, ds.labels.classes[i]);
      }
      ds.labels.num_classes = max_label + 1;
      if (unlabelled > 0)
        ds.notes.push_back(f->path + ": " + std::to_string(unlabelled) + " nodes have no label (-1)");
    } else if (cols > 1) {
      Tensor y({n, cols});
      for (size_t i = 0; i < values.size(); ++i) y.data()[i] = static_cast<float>(values[i]);
      ds.labels.multi_hot = std::move(y);
      ds.labels.num_classes = cols;
    }
  }

  return n;
}

}  // namespace

Dataset load_ogb_node_dataset(const fs::path& dir_in, const OgbOptions& options) {
  const fs::path dir = dir_in.lexically_normal();
  Dataset ds;
  ds.format = "ogb";
  ds.name = options.name;
  if (ds.name.empty()) {
    ds.name = dir.filename().string();
    if (ds.name.empty()) ds.name = dir.parent_path().filename().string();
  }
  if (!fs::is_directory(dir))
    raise<IoError>(dir.string(), ": not a directory (expected an OGB dataset folder with raw/ and split/)");

  const bool binary = fs::exists(dir / "raw" / "data.npz");
  const int64_t n = binary ? detail::read_ogb_binary_raw(dir, options, ds) : read_csv_raw(dir, options, ds);

  // --- splits -------------------------------------------------------------------------------------
  const fs::path split_root = dir / "split";
  if (fs::is_directory(split_root)) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(split_root))
      if (entry.is_directory()) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      std::array<SplitPart, 3> parts = {read_split_part(dir, "split/" + name + "/train.csv", n, ds),
                                        read_split_part(dir, "split/" + name + "/valid.csv", n, ds),
                                        read_split_part(dir, "split/" + name + "/test.csv", n, ds)};
      std::vector<int8_t> owner(static_cast<size_t>(n), -1);
      for (int8_t p = 0; p < 3; ++p)
        for (const auto& [v, line] : parts[static_cast<size_t>(p)].ids) {
          int8_t& o = owner[static_cast<size_t>(v)];
          if (o >= 0)
            raise<ParseError>(parts[static_cast<size_t>(p)].path, ":", line, ": node ", v, " is also in ",
                              parts[static_cast<size_t>(o)].path);
          o = p;
        }
      Split split;
      std::vector<int64_t>* out[3] = {&split.train, &split.val, &split.test};
      for (size_t p = 0; p < 3; ++p)
        for (const auto& id_line : parts[p].ids) out[p]->push_back(id_line.first);
      ds.splits.emplace(name, std::move(split));
    }
  }
  if (!options.split.empty()) {
    if (!ds.splits.contains(options.split)) {
      std::string available;
      for (const auto& [k, v] : ds.splits) available += (available.empty() ? "" : ", ") + k;
      raise<InvalidArgument>("load_ogb_node_dataset: ", dir.string(), " has no split '", options.split,
                             "' (available: ", available.empty() ? std::string("none") : available, ")");
    }
    ds.default_split = options.split;
  } else if (!ds.splits.empty()) {
    ds.default_split = ds.splits.begin()->first;
    for (const char* preferred : {"time", "sales_ranking", "species", "scaffold"})
      if (ds.splits.contains(preferred)) {
        ds.default_split = preferred;
        break;
      }
  }
  ds.validate();
  return ds;
}

}  // namespace edgeattn::data
