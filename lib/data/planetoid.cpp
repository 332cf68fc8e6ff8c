// Planetoid loader: the rules are tkipf/gcn `utils.py::load_data` and PyG `read_planetoid_data`,
// restated in datasets/PROVENANCE.md §3.1 ("How the standard split and node order are built").
#include "edgeattn/data/planetoid.hpp"

#include <algorithm>
#include <system_error>
#include <utility>
#include <vector>

#include "data/pickle.hpp"
#include "data/text_scanner.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/splits.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNumVal = 500;  // the public split's validation size (gcn, PyG)

fs::path resolve(const fs::path& dir, const std::string& name, const std::string& object) {
  const fs::path plain = dir / ("ind." + name + "." + object);
  if (auto found = find_plain_or_gz(plain)) return *found;
  if (name == "pubmed" && object == "allx")
    raise<IoError>(
        "load_planetoid: missing ", plain.string(), " (or .gz): PubMed's allx is not bundled with edgeattn. ",
        "It is published as https://github.com/kimiyoung/planetoid data/ind.pubmed.allx (also in tkipf/gcn ",
        "gcn/data/); the expected file is 7578385 bytes with sha256 ",
        "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e (git blob ",
        "3b86bccf08111c37c632a9dd8ab63db25ea76361). Place it in ", dir.string(), " and PubMed loads.");
  raise<IoError>("load_planetoid: missing ", plain.string(), " (nor ", plain.filename().string(), ".gz",
                 ") for the Planetoid dataset '", name, "'");
}

/// Class ids of a one-hot int ndarray [rows, classes]; ParseError naming the file and row when a
/// row does not hold exactly one 1 (and zeros elsewhere).
struct OneHot {
  int64_t num_classes = 0;
  std::vector<int32_t> classes;
};

OneHot read_one_hot(const fs::path& path) {
  const Pickle p = read_pickle(path);
  const NdArray& a = p.root().as_ndarray(p.name());
  if (a.shape.size() != 2 || !a.is_integer())
    raise<ParseError>(p.name(), ": expected a 2-D integer one-hot label matrix, found dtype ", a.dtype,
                      " with ", a.shape.size(), " dimensions");
  OneHot out;
  out.num_classes = a.shape[1];
  const int64_t rows = a.shape[0];
  out.classes.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t ones = 0, hot = -1;
    for (int64_t c = 0; c < out.num_classes; ++c) {
      const int64_t v = a.integer_at(r * out.num_classes + c);
      if (v != 0 && v != 1)
        raise<ParseError>(p.name(), ": row ", r, " column ", c, " holds ", v, ", expected a one-hot 0/1 row");
      if (v == 1) {
        ++ones;
        hot = c;
      }
    }
    if (ones != 1)
      raise<ParseError>(p.name(), ": row ", r, " has ", ones, " ones, expected exactly one (one-hot labels)");
    out.classes[static_cast<size_t>(r)] = static_cast<int32_t>(hot);
  }
  return out;
}

/// The ids of test.index in file order, one per line.
std::vector<int64_t> read_test_index(const fs::path& path, std::vector<int64_t>& line_of) {
  const std::string text = read_file(path);
  TextScanner s(text, path.string());
  std::vector<int64_t> ids;
  while (!s.at_end()) {
    if (s.skip_blank_or_comment("")) continue;
    line_of.push_back(s.line());
    ids.push_back(s.read_int64("a node id"));
    s.expect_end_of_line();
  }
  return ids;
}

bool same_rows(const CsrMatrix& a, const CsrMatrix& b, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    const auto ai = a.row_indices(r), bi = b.row_indices(r);
    const auto av = a.row_values(r), bv = b.row_values(r);
    if (!std::equal(ai.begin(), ai.end(), bi.begin(), bi.end()) ||
        !std::equal(av.begin(), av.end(), bv.begin(), bv.end()))
      return false;
  }
  return true;
}

}  // namespace

Dataset load_planetoid(const fs::path& dir, const std::string& name, const PlanetoidOptions& options) {
  if (options.default_split != "public" && options.default_split != "full")
    raise<InvalidArgument>("load_planetoid: default_split is '", options.default_split,
                           "', expected 'public' or 'full'");
  const char* const objects[] = {"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"};
  std::vector<fs::path> paths;
  for (const char* o : objects)
    paths.push_back(resolve(dir, name, o));  // every missing file before any parsing
  const fs::path &x_path = paths[0], &y_path = paths[1], &tx_path = paths[2], &ty_path = paths[3],
                 &allx_path = paths[4], &ally_path = paths[5], &graph_path = paths[6], &index_path = paths[7];
  const auto file = [](const fs::path& p) { return p.string(); };

  const Pickle x_pickle = read_pickle(x_path), tx_pickle = read_pickle(tx_path),
               allx_pickle = read_pickle(allx_path);
  const CsrMatrix& x = x_pickle.root().as_csr(x_pickle.name());
  const CsrMatrix& tx = tx_pickle.root().as_csr(tx_pickle.name());
  const CsrMatrix& allx = allx_pickle.root().as_csr(allx_pickle.name());
  const OneHot y = read_one_hot(y_path), ty = read_one_hot(ty_path), ally = read_one_hot(ally_path);

  const auto rows_of = [](const OneHot& h) { return static_cast<int64_t>(h.classes.size()); };
  const std::pair<std::pair<const CsrMatrix*, const fs::path*>, std::pair<const OneHot*, const fs::path*>>
      pairs[] = {{{&x, &x_path}, {&y, &y_path}},
                 {{&tx, &tx_path}, {&ty, &ty_path}},
                 {{&allx, &allx_path}, {&ally, &ally_path}}};
  for (const auto& [features, labels] : pairs)
    if (features.first->rows() != rows_of(*labels.first))
      raise<InvalidArgument>("load_planetoid: ", file(*features.second), " has ", features.first->rows(),
                             " rows but ", file(*labels.second), " has ", rows_of(*labels.first),
                             ", expected one label row per node");
  for (const auto& [features, labels] : pairs) {
    if (features.first->cols() != allx.cols())
      raise<InvalidArgument>("load_planetoid: ", file(*features.second), " has ", features.first->cols(),
                             " feature columns but ", file(allx_path), " has ", allx.cols());
    if (labels.first->num_classes != ally.num_classes)
      raise<InvalidArgument>("load_planetoid: ", file(*labels.second), " has ", labels.first->num_classes,
                             " classes but ", file(ally_path), " has ", ally.num_classes);
  }
  const int64_t num_train = rows_of(y), num_allx = allx.rows();
  if (num_train + kNumVal > num_allx)
    raise<InvalidArgument>("load_planetoid: ", file(y_path), " has ", num_train, " training rows; with the ",
                           kNumVal, " validation nodes that follow they need ", num_train + kNumVal,
                           " rows of ", file(allx_path), ", which has ", num_allx);

  // Graph: defaultdict(list) with keys 0..N-1.
  const Pickle graph_pickle = read_pickle(graph_path);
  const Value& g = graph_pickle.root();
  const std::string& gname = graph_pickle.name();
  if (g.kind != Value::Kind::defaultdict_list && g.kind != Value::Kind::dict)
    raise<ParseError>(gname, ": expected a defaultdict(list) of adjacency lists, found ", g.type_name());
  const auto num_nodes = static_cast<int64_t>(g.items.size() / 2);
  std::vector<uint8_t> key_seen(static_cast<size_t>(num_nodes), 0);
  std::vector<int64_t> src, dst;
  for (size_t k = 0; k < g.items.size(); k += 2) {
    const int64_t u = g.items[k]->as_int(gname, "an int node id as key");
    if (u < 0 || u >= num_nodes)
      raise<ParseError>(gname, ": byte ", g.items[k]->offset, ": key ", u, " is outside [0, ", num_nodes,
                        "), expected the keys to be the node ids 0..N-1");
    if (key_seen[static_cast<size_t>(u)])
      raise<ParseError>(gname, ": byte ", g.items[k]->offset, ": key ", u, " appears twice");
    key_seen[static_cast<size_t>(u)] = 1;
    const Value& list = *g.items[k + 1];
    if (list.kind != Value::Kind::list)
      raise<ParseError>(gname, ": byte ", list.offset, ": node ", u, " maps to a ", list.type_name(),
                        ", expected a list");
    for (const Value* item : list.items) {
      const int64_t v = item->as_int(gname, "an int node id");
      if (v < 0 || v >= num_nodes)
        raise<ParseError>(gname, ": byte ", item->offset, ": node ", u, " lists neighbour ", v,
                          ", outside [0, ", num_nodes, ")");
      src.push_back(v);
      dst.push_back(u);
    }
  }

  // test.index: line i names the node that owns row i of tx/ty.
  std::vector<int64_t> line_of;
  const std::vector<int64_t> test_index = read_test_index(index_path, line_of);
  const std::string iname = file(index_path);
  if (static_cast<int64_t>(test_index.size()) != tx.rows())
    raise<ParseError>(iname, ": ", test_index.size(), " ids, expected one per row of ", file(tx_path), " (",
                      tx.rows(), ")");
  std::vector<int64_t> line_of_node(static_cast<size_t>(num_nodes), 0);
  std::vector<int64_t> row_source(static_cast<size_t>(num_nodes), -1);  // >= 0: allx row; <= -2: tx row -2-r
  for (int64_t r = 0; r < num_allx && r < num_nodes; ++r) row_source[static_cast<size_t>(r)] = r;
  for (size_t i = 0; i < test_index.size(); ++i) {
    const int64_t v = test_index[i];
    if (v < num_allx || v >= num_nodes)
      raise<ParseError>(iname, ":", line_of[i], ": node id ", v,
                        " is outside the test range [len(allx) = ", num_allx, ", num_nodes = ", num_nodes,
                        ")");
    if (line_of_node[static_cast<size_t>(v)] != 0)
      raise<ParseError>(iname, ":", line_of[i], ": node id ", v, " repeats line ",
                        line_of_node[static_cast<size_t>(v)]);
    line_of_node[static_cast<size_t>(v)] = line_of[i];
    row_source[static_cast<size_t>(v)] = -2 - static_cast<int64_t>(i);
  }
  std::vector<int64_t> test_sorted = test_index;
  std::sort(test_sorted.begin(), test_sorted.end());
  if (!test_sorted.empty() && test_sorted.front() != num_allx)
    raise<ParseError>(iname, ": the smallest test id is ", test_sorted.front(),
                      ", expected len(allx) = ", num_allx, " (test nodes follow the allx nodes)");
  const int64_t num_ids = test_sorted.empty() ? num_allx : test_sorted.back() + 1;
  if (num_ids != num_nodes)
    raise<ParseError>(gname, ": has ", num_nodes, " nodes, expected max(test.index) + 1 = ", num_ids);
  std::vector<int64_t> gaps;
  for (int64_t v = num_allx; v < num_nodes; ++v)
    if (row_source[static_cast<size_t>(v)] == -1) gaps.push_back(v);

  Dataset ds;
  ds.name = name;
  ds.format = "planetoid";

  // Features: allx rows, then tx row i at node test_index[i]; gap nodes stay empty.
  {
    std::vector<int64_t> indptr(static_cast<size_t>(num_nodes) + 1, 0);
    std::vector<int32_t> indices;
    std::vector<float> values;
    indices.reserve(static_cast<size_t>(allx.nnz() + tx.nnz()));
    values.reserve(indices.capacity());
    for (int64_t v = 0; v < num_nodes; ++v) {
      const int64_t s = row_source[static_cast<size_t>(v)];
      if (s != -1) {
        const CsrMatrix& m = s >= 0 ? allx : tx;
        const int64_t r = s >= 0 ? s : -2 - s;
        const auto ri = m.row_indices(r);
        const auto rv = m.row_values(r);
        indices.insert(indices.end(), ri.begin(), ri.end());
        values.insert(values.end(), rv.begin(), rv.end());
      }
      indptr[static_cast<size_t>(v) + 1] = static_cast<int64_t>(indices.size());
    }
    ds.features = Features(CsrMatrix(num_nodes, allx.cols(), std::move(indptr), std::move(indices),
                                     std::move(values), "load_planetoid features"));
  }

  // Labels: ally rows, ty row i at node test_index[i], -1 for gap nodes.
  ds.labels.num_classes = ally.num_classes;
  ds.labels.classes.assign(static_cast<size_t>(num_nodes), -1);
  for (int64_t v = 0; v < num_nodes; ++v) {
    const int64_t s = row_source[static_cast<size_t>(v)];
    if (s >= 0)
      ds.labels.classes[static_cast<size_t>(v)] = ally.classes[static_cast<size_t>(s)];
    else if (s <= -2)
      ds.labels.classes[static_cast<size_t>(v)] = ty.classes[static_cast<size_t>(-2 - s)];
  }

  // Graph: the undirected simple graph of the lists.
  int64_t self_loop_nodes = 0, listed_pairs = 0;
  {
    std::vector<std::pair<int64_t, int64_t>> pairs;  // (dst, src), for duplicate and symmetry counts
    pairs.reserve(src.size());
    for (size_t k = 0; k < src.size(); ++k) pairs.emplace_back(dst[k], src[k]);
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    listed_pairs = static_cast<int64_t>(pairs.size());
    int64_t missing_reverse = 0;
    for (const auto& [u, v] : pairs) {
      if (u == v)
        ++self_loop_nodes;
      else if (!std::binary_search(pairs.begin(), pairs.end(), std::pair{v, u}))
        ++missing_reverse;
    }
    const auto duplicates = static_cast<int64_t>(src.size()) - listed_pairs;
    if (duplicates > 0)
      ds.notes.push_back(file(graph_path) + ": collapsed " + std::to_string(duplicates) +
                         " duplicate adjacency-list entries");
    if (missing_reverse > 0)
      ds.notes.push_back(file(graph_path) + ": added the reverse of " + std::to_string(missing_reverse) +
                         " listed edges that had none (the graph is undirected)");
  }
  ds.graph =
      build_graph(num_nodes, num_nodes, src, dst,
                  {.self_loops = options.self_loops, .duplicates = Duplicates::merge, .symmetrize = true});
  if (self_loop_nodes > 0) {
    const char* what = options.self_loops == SelfLoops::keep     ? "kept "
                       : options.self_loops == SelfLoops::remove ? "removed "
                                                                 : "replaced by one self-loop per node: ";
    ds.notes.push_back(std::string(what) + std::to_string(self_loop_nodes) + " self-loops listed in " +
                       file(graph_path));
  } else if (options.self_loops == SelfLoops::add) {
    ds.notes.push_back("added one self-loop per node");
  }
  if (!gaps.empty()) {
    std::string ids;
    for (const int64_t v : gaps) {
      if (!ids.empty()) ids += ' ';
      ids += std::to_string(v);
    }
    ds.notes.push_back(std::to_string(gaps.size()) + " test-range ids have no feature row (not in " + iname +
                       "): empty features, label -1, in no split: " + ids);
  }
  if (!same_rows(x, allx, num_train))
    ds.notes.push_back(file(x_path) + " differs from the first " + std::to_string(num_train) + " rows of " +
                       file(allx_path) + "; allx is used, as gcn and PyG do");
  if (!std::equal(y.classes.begin(), y.classes.end(), ally.classes.begin()))
    ds.notes.push_back(file(y_path) + " differs from the first " + std::to_string(num_train) + " rows of " +
                       file(ally_path) + "; ally is used, as gcn and PyG do");

  // Splits.
  Split pub;
  for (int64_t v = 0; v < num_train; ++v) pub.train.push_back(v);
  for (int64_t v = num_train; v < num_train + kNumVal; ++v) pub.val.push_back(v);
  pub.test = std::move(test_sorted);
  ds.splits["full"] = full_split(ds.labels, pub);
  ds.splits["public"] = std::move(pub);
  ds.default_split = options.default_split;

  for (const fs::path& p : paths) {
    std::error_code ec;
    const auto bytes = fs::file_size(p, ec);
    ds.sources.push_back({p.string(), "", ec ? 0 : static_cast<int64_t>(bytes)});
  }
  ds.validate();
  return ds;
}

}  // namespace edgeattn::data
