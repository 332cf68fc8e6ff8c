#include "edgeattn/data/npz.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>

#include "core/mapped_file.hpp"
#include "data/edge_assembly.hpp"
#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/data/mapped_features.hpp"

namespace edgeattn::data {
namespace {

constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();

const std::set<std::string, std::less<>>& known_keys() {
  static const std::set<std::string, std::less<>> keys = {"adj_data",       "adj_indices",
                                                          "adj_indptr",     "adj_shape",
                                                          "adj_matrix",     "attr_data",
                                                          "attr_indices",   "attr_indptr",
                                                          "attr_shape",     "attr_matrix",
                                                          "labels",         "labels_data",
                                                          "labels_indices", "labels_indptr",
                                                          "labels_shape",   "node_names",
                                                          "attr_names",     "class_names",
                                                          "idx_train",      "idx_val",
                                                          "idx_test",       "adj_rows_are_destinations",
                                                          "split_names",    "dataset_name"};
  return keys;
}

// write_npz's other splits: split<k>_train, split<k>_val, split<k>_test (k >= 1).
bool is_extra_split_key(std::string_view key) {
  if (!key.starts_with("split")) return false;
  size_t i = 5;
  while (i < key.size() && key[i] >= '0' && key[i] <= '9') ++i;
  if (i == 5) return false;
  const std::string_view rest = key.substr(i);
  return rest == "_train" || rest == "_val" || rest == "_test";
}

bool is_name_key(std::string_view key) {
  return key == "node_names" || key == "attr_names" || key == "class_names";
}

const NpyArray* find(const std::map<std::string, NpyArray>& arrays, const std::string& key) {
  const auto it = arrays.find(key);
  return it == arrays.end() ? nullptr : &it->second;
}

std::string shape_str(const NpyArray& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + (a.shape.size() == 1 ? ",)" : ")");
}

void expect_rank(const NpyArray& a, int rank) {
  if (a.rank() != rank)
    raise<ParseError>(a.name, ": expected a ", rank, "-d array, found shape ", shape_str(a));
}

/// A scipy CSR matrix stored as <prefix>_data/_indices/_indptr/_shape.
struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr, indices;
  std::vector<float> values;
};

Csr read_csr(const std::map<std::string, NpyArray>& arrays, const std::string& prefix,
             const std::string& what) {
  const NpyArray* parts[4];
  const char* suffix[4] = {"_data", "_indices", "_indptr", "_shape"};
  for (int i = 0; i < 4; ++i) {
    parts[i] = find(arrays, prefix + suffix[i]);
    if (!parts[i])
      raise<ParseError>(what, ": has '", prefix, "_data' but no '", prefix, suffix[i],
                        "' (a CSR matrix needs _data, _indices, _indptr and _shape)");
  }
  const NpyArray &data = *parts[0], &indices = *parts[1], &indptr = *parts[2], &shape = *parts[3];
  expect_rank(data, 1);
  expect_rank(indices, 1);
  expect_rank(indptr, 1);
  expect_rank(shape, 1);
  const std::vector<int64_t> dims = shape.to_int64s();
  if (dims.size() != 2)
    raise<ParseError>(shape.name, ": expected 2 extents (rows, cols), found ", dims.size());
  if (dims[0] < 0 || dims[1] < 0 || dims[0] > kMaxNodes || dims[1] > kMaxNodes)
    raise<ParseError>(shape.name, ": extents (", dims[0], ", ", dims[1], ") must be in [0, 2^31)");
  Csr m;
  m.rows = dims[0];
  m.cols = dims[1];
  m.indptr = indptr.to_int64s();
  m.indices = indices.to_int64s();
  m.values = data.to_floats();
  const int64_t nnz = static_cast<int64_t>(m.indices.size());
  if (static_cast<int64_t>(m.indptr.size()) != m.rows + 1)
    raise<ParseError>(indptr.name, ": ", m.indptr.size(), " entries, expected ", prefix,
                      "_shape[0] + 1 = ", m.rows + 1);
  if (static_cast<int64_t>(m.values.size()) != nnz)
    raise<ParseError>(data.name, ": ", m.values.size(), " values, expected one per index (", nnz, ")");
  if (m.indptr[0] != 0) raise<ParseError>(indptr.name, ": entry 0 is ", m.indptr[0], ", expected 0");
  for (int64_t r = 0; r < m.rows; ++r)
    if (m.indptr[r + 1] < m.indptr[r])
      raise<ParseError>(indptr.name, ": entry ", r + 1, " (", m.indptr[r + 1], ") is less than entry ", r,
                        " (", m.indptr[r], ")");
  if (m.indptr[m.rows] != nnz)
    raise<ParseError>(indptr.name, ": last entry is ", m.indptr[m.rows], ", expected the number of indices ",
                      nnz);
  for (int64_t k = 0; k < nnz; ++k)
    if (m.indices[k] < 0 || m.indices[k] >= m.cols)
      raise<ParseError>(indices.name, ": entry ", k, " is ", m.indices[k], ", expected a column in [0, ",
                        m.cols, ")");
  return m;
}

/// Dense [rows, cols] float32 values of a 2-d array.
std::vector<float> read_dense(const NpyArray& a, int64_t& rows, int64_t& cols) {
  expect_rank(a, 2);
  rows = a.shape[0];
  cols = a.shape[1];
  if (rows > kMaxNodes || cols > kMaxNodes)
    raise<ParseError>(a.name, ": shape ", shape_str(a), " exceeds 2^31 - 1 rows or columns");
  return a.to_floats();
}

std::vector<std::string> read_names(const NpyArray& a) {
  expect_rank(a, 1);
  if (a.dtype.is_string()) return a.to_strings();
  std::vector<std::string> out;
  if (a.dtype.kind == 'f') {
    for (const double v : a.to_doubles()) {
      std::ostringstream os;
      os << v;
      out.push_back(os.str());
    }
  } else {
    for (const int64_t v : a.to_int64s()) out.push_back(std::to_string(v));
  }
  return out;
}

Tensor multi_hot_from_values(const std::vector<double>& v, int64_t rows, int64_t cols,
                             const std::string& name) {
  Tensor t({rows, cols});
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != 0.0 && v[i] != 1.0)
      raise<ParseError>(name, ": multi-label entry ", i, " is ", v[i], ", expected 0 or 1");
    t.data()[i] = static_cast<float>(v[i]);
  }
  return t;
}

/// The optional 0-d flag adj_rows_are_destinations (write_npz sets it).
bool rows_are_destinations(const std::map<std::string, NpyArray>& arrays) {
  const NpyArray* a = find(arrays, "adj_rows_are_destinations");
  if (!a) return false;
  if (!a->dtype.is_numeric() || a->numel() != 1)
    raise<ParseError>(a->name, ": expected one boolean, found shape ", shape_str(*a), " of dtype '",
                      a->dtype.descr, "'");
  const int64_t flag = a->to_int64s()[0];
  if (flag != 0 && flag != 1) raise<ParseError>(a->name, ": expected a boolean (0 or 1), found ", flag);
  return flag != 0;
}

/// <prefix>train / <prefix>val / <prefix>test: node ids of one split, stored as `name`.
void read_one_split(const std::map<std::string, NpyArray>& arrays, const std::string& what, Dataset& ds,
                    const std::string& prefix, const std::string& name);

/// idx_train / idx_val / idx_test: the default split, named by split_names[0] (write_npz) or
/// "default"; write_npz's others as split<k>_* named split_names[k].
void read_split(const std::map<std::string, NpyArray>& arrays, const std::string& what, Dataset& ds) {
  std::vector<std::string> names;
  if (const NpyArray* a = find(arrays, "split_names")) {
    expect_rank(*a, 1);
    names = a->to_strings();
    if (names.empty()) raise<ParseError>(a->name, ": expected at least one split name");
    for (size_t k = 0; k < names.size(); ++k)
      for (size_t j = 0; j < k; ++j)
        if (names[j] == names[k]) raise<ParseError>(a->name, ": split name '", names[k], "' appears twice");
  }
  read_one_split(arrays, what, ds, "idx_", names.empty() ? "default" : names.front());
  if (!names.empty() && !ds.splits.contains(names.front()))
    raise<ParseError>(what, ": split_names names split '", names.front(), "' but there is no idx_train");
  for (size_t k = 1; k < names.size(); ++k) {
    const std::string prefix = "split" + std::to_string(k) + "_";
    if (!find(arrays, prefix + "train"))
      raise<ParseError>(what, ": split_names names split '", names[k], "' but there is no ", prefix, "train");
    read_one_split(arrays, what, ds, prefix, names[k]);
  }
  for (const auto& [key, a] : arrays)
    if (is_extra_split_key(key) && std::stoul(key.substr(5)) >= names.size())
      raise<ParseError>(a.name, ": a split member beyond the ", names.size(), " split_names");
}

void read_one_split(const std::map<std::string, NpyArray>& arrays, const std::string& what, Dataset& ds,
                    const std::string& prefix, const std::string& name) {
  const std::string keys[3] = {prefix + "train", prefix + "val", prefix + "test"};
  const NpyArray* parts[3] = {find(arrays, keys[0]), find(arrays, keys[1]), find(arrays, keys[2])};
  if (!parts[0] && !parts[1] && !parts[2]) return;
  const char* names[3] = {keys[0].c_str(), keys[1].c_str(), keys[2].c_str()};
  std::vector<int64_t>* dest[3];
  Split& split = ds.splits[name];
  dest[0] = &split.train;
  dest[1] = &split.val;
  dest[2] = &split.test;
  for (int i = 0; i < 3; ++i) {
    if (!parts[i])
      raise<ParseError>(what, ": has a split member but no '", names[i], "' (a split needs ", keys[0], ", ",
                        keys[1], " and ", keys[2], ")");
    expect_rank(*parts[i], 1);
    *dest[i] = parts[i]->to_int64s();
    const std::vector<int64_t>& ids = *dest[i];
    for (size_t k = 0; k < ids.size(); ++k) {
      if (ids[k] < 0 || ids[k] >= ds.num_nodes())
        raise<ParseError>(parts[i]->name, ": entry ", k, " is ", ids[k], ", expected a node id in [0, ",
                          ds.num_nodes(), ")");
      if (k > 0 && ids[k] <= ids[k - 1])
        raise<ParseError>(parts[i]->name, ": entry ", k, " (", ids[k], ") is not greater than entry ", k - 1,
                          " (", ids[k - 1], "); expected sorted, distinct node ids");
    }
  }
  if (prefix == "idx_") ds.default_split = name;
}

/// ParseError naming `name` when a dense matrix's extents pass 2^31 - 1.
void check_matrix_extents(const NpyArray& a, const std::string& name) {
  if (a.shape[0] > kMaxNodes || a.shape[1] > kMaxNodes)
    raise<ParseError>(name, ": shape ", shape_str(a), " exceeds 2^31 - 1 rows or columns");
}

/// Dense [rows, cols] float32 features, converted straight into the tensor.
Tensor read_dense_tensor(const NpyArray& a) {
  expect_rank(a, 2);
  check_matrix_extents(a, a.name);
  Tensor t = Tensor::uninitialized({a.shape[0], a.shape[1]});
  a.to_floats(t.span());
  return t;
}

/// A stored (uncompressed) attr_matrix.npy member of little-endian float32 in C order, the layout
/// numpy and write_npz give dense features, copied from the archive's bytes into the tensor: no
/// NpyArray in between. At 1M x 128 that was a 512 MB buffer written once and read once more (and
/// on a VM, 512 MB of fresh pages: bench/RESULTS.md). The copy runs in parallel row slabs, so the
/// tensor's pages are first touched by every thread. nullopt for any other layout, dtype or a
/// data length that does not match the header: the general path converts those or names the error.
std::optional<Tensor> stored_float32_matrix(std::string_view member, const std::string& name) {
  const NpyHeader h = parse_npy_header(member, name);
  const NpyArray& a = h.array;
  if (a.dtype.kind != 'f' || a.dtype.itemsize != 4 || h.big_endian || h.fortran_order || a.rank() != 2 ||
      h.data_offset > member.size() || member.size() - h.data_offset != h.data_bytes)
    return std::nullopt;
  check_matrix_extents(a, name);
  Tensor t = Tensor::uninitialized({a.shape[0], a.shape[1]});
  const char* data = member.data() + h.data_offset;
  float* out = t.data();
  const int64_t cols = a.shape[1];
  parallel_for(0, a.shape[0], std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, cols)),
               [&](int64_t r0, int64_t r1) {
                 std::memcpy(out + r0 * cols, data + r0 * cols * int64_t{sizeof(float)},
                             static_cast<size_t>((r1 - r0) * cols) * sizeof(float));
               });
  return t;
}

// Drops members the dataset has taken what it needs from, when the caller handed the arrays
// over (`owned`); a large file then never holds a member and its converted copy for long.
void consume(std::map<std::string, NpyArray>* owned, std::string_view prefix,
             std::span<const std::string_view> suffixes) {
  if (!owned) return;
  for (const std::string_view suffix : suffixes) owned->erase(std::string(prefix) + std::string(suffix));
}

constexpr std::string_view kCsrParts[] = {"_data", "_indices", "_indptr", "_shape"};

// `owned` is `arrays` itself when the caller gives them up, else nullptr.
// `dense_attr`, when it holds a tensor, is attr_matrix already converted (stored_float32_matrix):
// it stands where the member would, after a sparse attr_* (which wins, as over the member).
Dataset dataset_from_arrays(const std::map<std::string, NpyArray>& arrays,
                            std::map<std::string, NpyArray>* owned, const std::string& what,
                            const NpzOptions& options, std::optional<Tensor> dense_attr = std::nullopt) {
  Dataset ds;
  ds.name = options.name.empty() ? std::filesystem::path(what).stem().string() : options.name;
  ds.format = "npz";
  for (const auto& [key, a] : arrays)
    if (!known_keys().contains(key) && !is_extra_split_key(key))
      ds.notes.push_back(what + ": ignored member '" + key + ".npy'");
  if (const NpyArray* a = find(arrays, "dataset_name"); a && options.name.empty()) {
    if (!a->dtype.is_string() || a->numel() != 1)
      raise<ParseError>(a->name, ": expected one string, found shape ", shape_str(*a), " of dtype '",
                        a->dtype.descr, "'");
    ds.name = a->to_strings()[0];
  }

  // --- adjacency: entry (r, c) is the edge r -> c ---------------------------------------------
  int64_t n = 0;
  std::vector<int64_t> src, dst;
  std::vector<float> weight;
  if (find(arrays, "adj_data") && find(arrays, "adj_matrix"))
    raise<ParseError>(what, ": holds both adj_matrix and sparse adj_* members: which is the graph?");
  if (find(arrays, "adj_data")) {
    Csr a = read_csr(arrays, "adj", what);
    if (a.rows != a.cols)
      raise<ParseError>(what, ": adj_shape is (", a.rows, ", ", a.cols, "), expected a square matrix");
    n = a.rows;
    std::vector<int64_t> rows;
    rows.reserve(a.indices.size());
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) rows.push_back(r);
    if (rows_are_destinations(arrays)) {  // written by write_npz: row i lists the sources of i
      src = std::move(a.indices);
      dst = std::move(rows);
    } else {
      src = std::move(rows);
      dst = std::move(a.indices);
    }
    weight = std::move(a.values);
    consume(owned, "adj", kCsrParts);
  } else if (const NpyArray* dense = find(arrays, "adj_matrix")) {
    int64_t rows = 0, cols = 0;
    const std::vector<float> v = read_dense(*dense, rows, cols);
    if (rows != cols)
      raise<ParseError>(dense->name, ": shape ", shape_str(*dense), ", expected a square matrix");
    n = rows;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        if (const float w = v[static_cast<size_t>(r * cols + c)]; w != 0.f) {
          src.push_back(r);
          dst.push_back(c);
          weight.push_back(w);
        }
    if (owned) owned->erase("adj_matrix");
  } else {
    raise<ParseError>(what,
                      ": no adjacency: expected members 'adj_data', 'adj_indices', 'adj_indptr' and "
                      "'adj_shape' (or 'adj_matrix')");
  }
  AssembledGraph assembled =
      assemble_graph(n, std::move(src), std::move(dst), weight, options.undirected, options.self_loops);
  ds.graph = std::move(assembled.graph);
  ds.edge_weight = std::move(assembled.edge_weight);
  const int64_t stored = assembled.stored_entries, stored_loops = assembled.stored_self_loops;
  {
    std::ostringstream note;
    note << what << ": " << stored << " stored adjacency entries";
    if (stored_loops > 0) note << " (" << stored_loops << " self-loops)";
    note << " -> " << ds.graph.num_edges() << " edges";
    if (options.undirected) note << " after adding reverse edges";
    if (options.self_loops == SelfLoops::remove && stored_loops > 0) note << ", self-loops removed";
    if (options.self_loops == SelfLoops::add) note << ", one self-loop per node";
    ds.notes.push_back(note.str());
  }

  // --- features ---------------------------------------------------------------------------------
  if (find(arrays, "attr_data")) {
    Csr f = read_csr(arrays, "attr", what);
    if (f.rows != n)
      raise<ParseError>(what, ": attr_shape has ", f.rows, " rows, expected one per node (", n, ")");
    bool sorted = true;
    for (int64_t r = 0; r < f.rows && sorted; ++r)
      for (int64_t k = f.indptr[r] + 1; k < f.indptr[r + 1]; ++k)
        if (f.indices[k] <= f.indices[k - 1]) {
          sorted = false;
          break;
        }
    if (sorted) {
      std::vector<int32_t> idx(f.indices.begin(), f.indices.end());
      ds.features =
          Features(CsrMatrix(f.rows, f.cols, std::move(f.indptr), std::move(idx), std::move(f.values), what));
    } else {  // scipy allows unsorted and repeated columns; repeats are summed, as scipy does
      std::vector<int64_t> rows;
      rows.reserve(f.indices.size());
      for (int64_t r = 0; r < f.rows; ++r)
        for (int64_t k = f.indptr[r]; k < f.indptr[r + 1]; ++k) rows.push_back(r);
      ds.features = Features(CsrMatrix::from_triplets(f.rows, f.cols, rows, f.indices, f.values));
      ds.notes.push_back(what +
                         ": attr columns were unsorted or repeated within a row; sorted (repeats summed)");
    }
    consume(owned, "attr", kCsrParts);
  } else if (dense_attr) {
    if (dense_attr->dim(0) != n)
      raise<ParseError>(what, ":attr_matrix.npy: ", dense_attr->dim(0), " rows, expected one per node (", n,
                        ")");
    ds.features = Features(std::move(*dense_attr));
  } else if (const NpyArray* dense = find(arrays, "attr_matrix")) {
    expect_rank(*dense, 2);
    if (dense->shape[0] != n)
      raise<ParseError>(dense->name, ": ", dense->shape[0], " rows, expected one per node (", n, ")");
    ds.features = Features(read_dense_tensor(*dense));
    if (owned) owned->erase("attr_matrix");
  }

  // --- names --------------------------------------------------------------------------------------
  if (const NpyArray* a = find(arrays, "node_names")) {
    ds.node_names = read_names(*a);
    if (static_cast<int64_t>(ds.node_names.size()) != n)
      raise<ParseError>(a->name, ": ", ds.node_names.size(), " names, expected one per node (", n, ")");
  }
  if (const NpyArray* a = find(arrays, "attr_names")) {
    const auto names = read_names(*a);
    if (static_cast<int64_t>(names.size()) != ds.features.cols())
      raise<ParseError>(a->name, ": ", names.size(), " names, expected one per feature (", ds.features.cols(),
                        ")");
    ds.notes.push_back(what + ": attr_names (" + std::to_string(names.size()) + " feature names) not kept");
  }
  if (const NpyArray* a = find(arrays, "class_names")) ds.labels.class_names = read_names(*a);

  // --- labels -------------------------------------------------------------------------------------
  const int64_t named_classes = static_cast<int64_t>(ds.labels.class_names.size());
  if (find(arrays, "labels_data")) {
    const Csr l = read_csr(arrays, "labels", what);
    if (l.rows != n)
      raise<ParseError>(what, ": labels_shape has ", l.rows, " rows, expected one per node (", n, ")");
    // The dense [N, C] copy must stay within the caller's memory bound (a tiny CSR may declare a huge C).
    if (l.cols > 0 &&
        static_cast<uint64_t>(l.rows) * 12 > options.limits.max_total_bytes / static_cast<uint64_t>(l.cols))
      raise<ParseError>(what, ": labels_shape (", l.rows, ", ", l.cols,
                        ") is too large to expand into dense multi-hot labels "
                        "within the limit of ",
                        options.limits.max_total_bytes, " bytes");
    std::vector<double> v(static_cast<size_t>(l.rows * l.cols), 0.0);
    for (int64_t r = 0; r < l.rows; ++r)
      for (int64_t k = l.indptr[r]; k < l.indptr[r + 1]; ++k)
        v[static_cast<size_t>(r * l.cols + l.indices[k])] += l.values[k];
    ds.labels.multi_hot = multi_hot_from_values(v, l.rows, l.cols, what + ":labels_data.npy");
    ds.labels.num_classes = l.cols;
  } else if (const NpyArray* a = find(arrays, "labels")) {
    if (a->rank() == 1) {
      const std::vector<int64_t> y = a->to_int64s();
      if (static_cast<int64_t>(y.size()) != n)
        raise<ParseError>(a->name, ": ", y.size(), " labels, expected one per node (", n, ")");
      int64_t max_label = -1;
      ds.labels.classes.resize(y.size());
      for (size_t i = 0; i < y.size(); ++i) {
        if (y[i] < -1 || y[i] >= kMaxNodes)
          raise<ParseError>(a->name, ": node ", i, " has label ", y[i],
                            ", expected a class id >= 0 (or -1: unlabelled)");
        if (named_classes > 0 && y[i] >= named_classes)
          raise<ParseError>(a->name, ": node ", i, " has label ", y[i], " but class_names lists only ",
                            named_classes, " classes");
        max_label = std::max(max_label, y[i]);
        ds.labels.classes[i] = static_cast<int32_t>(y[i]);
      }
      ds.labels.num_classes = named_classes > 0 ? named_classes : max_label + 1;
    } else if (a->rank() == 2) {
      if (a->shape[0] != n)
        raise<ParseError>(a->name, ": shape ", shape_str(*a), ", expected one row per node (", n, ")");
      ds.labels.multi_hot = multi_hot_from_values(a->to_doubles(), a->shape[0], a->shape[1], a->name);
      ds.labels.num_classes = a->shape[1];
    } else {
      raise<ParseError>(a->name, ": shape ", shape_str(*a),
                        ", expected [num_nodes] or [num_nodes, num_classes]");
    }
  }
  if (named_classes > 0 && named_classes != ds.labels.num_classes)
    raise<ParseError>(what, ": class_names lists ", named_classes, " classes but the labels have ",
                      ds.labels.num_classes);
  read_split(arrays, what, ds);
  ds.validate();
  return ds;
}

// `file`, when given, maps `bytes`: each stored member's pages are released once parsed.
// `path`: the file, for NpzOptions::map_features (nullptr when loading from bytes).
Dataset load_npz_impl(std::string_view bytes, const std::string& what, const NpzOptions& options,
                      const edgeattn::detail::MappedFile* file, const std::filesystem::path* path) {
  if (options.map_features && !path)
    raise<InvalidArgument>(what, ": NpzOptions::map_features needs a file (load_npz), not bytes in memory");
  const bool mapping = options.map_features;
  ZipLimits limits;
  limits.max_member_bytes = options.limits.max_member_bytes;
  limits.max_total_bytes = options.limits.max_total_bytes;
  // A mapped attr_matrix is never unpacked, so it may exceed the limits on what unpacking makes
  // (deflated members stay bounded by their compression ratio).
  if (mapping) limits.max_member_bytes = limits.max_total_bytes = UINT64_MAX;
  const ZipArchive zip(bytes, what, limits);
  // Only the members this loader reads are parsed: an unrelated member (e.g. a pickled dict some
  // files of this family carry) must not stop the load.
  std::map<std::string, NpyArray> arrays;
  std::vector<std::string> notes;
  bool map_attr_matrix = false;      // mapping, and the archive has an attr_matrix to map
  std::optional<Tensor> dense_attr;  // a stored float32 attr_matrix, converted as it is met
  for (const ZipMember& m : zip.members()) {
    const std::string key = m.name.ends_with(".npy") ? m.name.substr(0, m.name.size() - 4) : m.name;
    if (mapping && m.name == "attr_matrix.npy") {  // mapped below, never read here
      map_attr_matrix = true;
      continue;
    }
    if (!m.name.ends_with(".npy") || (!known_keys().contains(key) && !is_extra_split_key(key))) {
      notes.push_back(what + ": ignored member '" + m.name + "'");
      continue;
    }
    // A stored member is parsed in place (one copy, into the array); a deflated one is inflated
    // into a buffer the array then takes over.
    const std::optional<std::string_view> stored = zip.stored_view(m);
    if (stored && m.name == "attr_matrix.npy") {  // dense features: straight into their tensor
      dense_attr = stored_float32_matrix(*stored, what + ":" + m.name);
      if (dense_attr) {
        if (file) file->release(*stored);
        continue;
      }
    }
    std::string inflated = stored ? std::string() : zip.extract(m);
    const std::string_view data = stored ? *stored : std::string_view(inflated);
    const std::string name = what + ":" + m.name;
    if (is_name_key(key) && data.substr(0, 256).find("'descr': '|O'") != std::string_view::npos) {
      notes.push_back(name + ": pickled object array (never unpickled); skipped");
      continue;
    }
    arrays.emplace(key, stored ? parse_npy(data, name) : parse_npy(std::move(inflated), name));
    if (stored && file) file->release(*stored);
  }
  Dataset ds = dataset_from_arrays(arrays, &arrays, what, options, std::move(dense_attr));
  if (map_attr_matrix) {
    if (ds.features.cols() > 0)
      raise<ParseError>(what, ": holds both attr_matrix and sparse attr_* members: which are the features?");
    ds.features = map_features(*path, "attr_matrix");
    if (ds.features.rows() != ds.num_nodes())
      raise<ParseError>(what, ":attr_matrix.npy: ", ds.features.rows(), " rows, expected one per node (",
                        ds.num_nodes(), ")");
    notes.push_back(what + ": attr_matrix mapped in place (read from the file as rows are used)");
  }
  ds.notes.insert(ds.notes.begin(), notes.begin(), notes.end());
  ds.sources.push_back({what, "", static_cast<int64_t>(bytes.size())});
  return ds;
}

}  // namespace

Dataset dataset_from_npz_arrays(const std::map<std::string, NpyArray>& arrays, const std::string& what,
                                const NpzOptions& options) {
  if (options.map_features)
    raise<InvalidArgument>(what, ": NpzOptions::map_features needs a file (load_npz), not parsed arrays");
  return dataset_from_arrays(arrays, nullptr, what, options);
}

Dataset dataset_from_npz_arrays(std::map<std::string, NpyArray>&& arrays, const std::string& what,
                                const NpzOptions& options) {
  if (options.map_features)
    raise<InvalidArgument>(what, ": NpzOptions::map_features needs a file (load_npz), not parsed arrays");
  std::map<std::string, NpyArray> owned = std::move(arrays);
  return dataset_from_arrays(owned, &owned, what, options);
}

Dataset load_npz_from_bytes(std::string_view bytes, const std::string& what, const NpzOptions& options) {
  return load_npz_impl(bytes, what, options, nullptr, nullptr);
}

Dataset load_npz(const std::filesystem::path& path, const NpzOptions& options) {
  // Mapped, not read: a stored member's pages are dropped once parsed, so the file never sits in
  // memory whole beside the arrays made from it.
  const auto file = edgeattn::detail::MappedFile::map_or_read(path);
  return load_npz_impl(file.bytes(), path.string(), options, &file, &path);
}

}  // namespace edgeattn::data
