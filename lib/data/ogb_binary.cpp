// OGB's binary node-property layout: metadata and block streams over raw/data.npz (data/npz_stream),
// and the in-memory load that load_ogb_node_dataset runs when the estimate fits.
#include "edgeattn/data/ogb_binary.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <utility>

#include "core/physical_memory.hpp"
#include "data/edge_assembly.hpp"
#include "data/ogb_binary_raw.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/npz_stream.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();
constexpr int64_t kChunkElements = int64_t{1} << 20;  // elements converted per step

fs::path data_npz(const fs::path& dir) { return dir / "raw" / "data.npz"; }
fs::path label_npz(const fs::path& dir) { return dir / "raw" / "node-label.npz"; }

const NpzMemberInfo* find_member(const std::vector<NpzMemberInfo>& members, const std::string& key) {
  for (const auto& m : members)
    if (m.key == key) return &m;
  return nullptr;
}

const NpzMemberInfo& require_member(const std::vector<NpzMemberInfo>& members, const fs::path& file,
                                    const std::string& key, const char* why) {
  const NpzMemberInfo* m = find_member(members, key);
  if (!m) raise<ParseError>(file.string(), ": no member '", key, "' (", why, ")");
  return *m;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The next out.size() elements of `s`: read straight into `out` when the stream's items are T
// already (`same`), else through a buffer with convert(item bytes) per element.
template <class T, class Convert>
void read_elements(NpyStream& s, std::span<T> out, bool same, Convert&& convert) {
  if (same) {
    s.read_exact(std::as_writable_bytes(out));
    return;
  }
  const auto width = static_cast<size_t>(s.info().dtype.itemsize);
  std::vector<std::byte> buf(out.size() * width);
  s.read_exact(buf);
  for (size_t k = 0; k < out.size(); ++k) out[k] = convert(buf.data() + k * width, k);
}

template <class T>
T load_as(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The next out.size() elements of an integer stream, as int64.
void read_int64s(NpyStream& s, std::span<int64_t> out, const std::string& what) {
  const NpyDtype& t = s.info().dtype;
  if ((t.kind != 'i' && t.kind != 'u') || (t.itemsize != 4 && t.itemsize != 8))
    raise<ParseError>(what, ": dtype '", t.descr, "', expected 32- or 64-bit integers");
  const uint64_t first = s.position() / 8;
  read_elements(s, out, t.kind == 'i' && t.itemsize == 8, [&](const std::byte* p, size_t k) -> int64_t {
    if (t.itemsize == 4) return t.kind == 'i' ? load_as<int32_t>(p) : load_as<uint32_t>(p);
    const auto v = load_as<uint64_t>(p);  // 'u', 8 bytes
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      raise<ParseError>(what, ": value ", v, " at element ", first + k, " does not fit int64");
    return static_cast<int64_t>(v);
  });
}

// The next out.size() elements of a float stream (float16/32/64), as float32.
void read_floats(NpyStream& s, std::span<float> out, const std::string& what) {
  const NpyDtype& t = s.info().dtype;
  if (t.kind != 'f') raise<ParseError>(what, ": dtype '", t.descr, "', expected floats");
  read_elements(s, out, t.itemsize == 4, [&](const std::byte* p, size_t) {
    return t.itemsize == 2 ? half_to_float(load_as<uint16_t>(p)) : static_cast<float>(load_as<double>(p));
  });
}

// The single value of a [1] count array (num_nodes_list, num_edges_list).
int64_t read_count(const fs::path& file, const std::string& key, int64_t max) {
  NpyStream s(file, key);
  const std::string what = file.string() + ":" + key;
  if (s.info().numel() != 1)
    raise<ParseError>(what, ": shape ", shape_str(s.info().shape),
                      ", expected one count (a node-property dataset holds exactly one graph)");
  int64_t v = 0;
  read_int64s(s, std::span<int64_t>(&v, 1), what);
  if (v < 0 || v > max) raise<ParseError>(what, ": ", v, " is out of range [0, ", max, "]");
  return v;
}

// Streams node_label [N] or [N, 1], checking every value: calls fn(node, class) for each labelled
// node (NaN = unlabelled) and returns the count of labelled nodes and the class count (max + 1).
template <class Fn>
std::pair<int64_t, int64_t> for_each_label(const fs::path& file, int64_t n, Fn&& fn) {
  NpyStream s(file, "node_label");
  const std::string what = file.string() + ":node_label";
  const auto& shape = s.info().shape;
  if (!((shape.size() == 1 && shape[0] == n) || (shape.size() == 2 && shape[0] == n && shape[1] == 1)))
    raise<ParseError>(what, ": shape ", shape_str(shape), ", expected (", n, ", 1): one label per node");
  int64_t labelled = 0, max_label = -1;
  std::vector<float> buf(static_cast<size_t>(std::min<int64_t>(n, kChunkElements)));
  for (int64_t first = 0; first < n;) {
    const int64_t k = std::min<int64_t>(static_cast<int64_t>(buf.size()), n - first);
    read_floats(s, std::span<float>(buf.data(), static_cast<size_t>(k)), what);
    for (int64_t j = 0; j < k; ++j) {
      const float v = buf[static_cast<size_t>(j)];
      if (std::isnan(v)) continue;
      if (v < 0 || v >= static_cast<float>(kMaxNodes) || v != std::trunc(v))
        raise<ParseError>(what, ": node ", first + j, " has label ", v,
                          ", expected a class id (a whole number >= 0) or NaN");
      fn(first + j, static_cast<int32_t>(v));
      ++labelled;
      max_label = std::max<int64_t>(max_label, static_cast<int64_t>(v));
    }
    first += k;
  }
  return {labelled, max_label + 1};
}

// Non-blank lines of a (gzip) split file.
int64_t count_lines(const fs::path& file) {
  const std::string text = read_file(file);
  int64_t lines = 0;
  bool blank = true;
  for (const char c : text) {
    if (c == '\n') {
      lines += !blank;
      blank = true;
    } else if (c != ' ' && c != '\r' && c != '\t') {
      blank = false;
    }
  }
  return lines + !blank;
}

fs::path split_file(const fs::path& dir, const std::string& rel) {
  const fs::path gz = dir / (rel + ".gz");
  return fs::exists(gz) ? gz : dir / rel;
}

std::string human_bytes(uint64_t bytes) {
  if (bytes < 1'000'000) return std::to_string(bytes) + " bytes";
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  if (bytes < 1'000'000'000)
    os << static_cast<double>(bytes) / 1e6 << " MB";
  else
    os << static_cast<double>(bytes) / 1e9 << " GB";
  return os.str();
}

}  // namespace

uint64_t default_load_limit() {
  if (const char* env = std::getenv("EDGEATTN_MAX_LOAD_BYTES"); env != nullptr && *env != '\0') {
    uint64_t v = 0;
    const std::string_view text(env);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v == 0)
      raise<InvalidArgument>("EDGEATTN_MAX_LOAD_BYTES is '", text, "', expected a positive number of bytes");
    return v;
  }
  return edgeattn::detail::physical_memory_bytes() / 4 * 3;
}

uint64_t OgbBinaryInfo::bytes_to_load(bool undirected) const {
  const auto n = static_cast<uint64_t>(num_nodes),
             e = static_cast<uint64_t>(num_edges) * (undirected ? 2 : 1);
  const uint64_t graph = 8 * (n + 1) + 4 * e + 16 * e;  // row_ptr, col_idx, the two input maps
  const uint64_t build = 16 * e;                        // src and dst while the graph is built
  return graph + build + 4 * n * static_cast<uint64_t>(num_features) + 4 * n;
}

namespace {

// data.npz's metadata; with `labels_and_splits` also node-label.npz's counts (a pass over N
// labels) and the split sizes. Loading reads the labels and splits itself and needs neither.
OgbBinaryInfo scan(const fs::path& dir, bool labels_and_splits) {
  const fs::path file = data_npz(dir);
  if (!fs::exists(file))
    raise<IoError>(file.string(), ": no such file (an OGB binary dataset keeps its graph in raw/data.npz)");
  const std::vector<NpzMemberInfo> members = npz_catalog(file);
  OgbBinaryInfo info;
  info.path = dir.string();
  for (const auto& m : members) info.compressed_bytes += m.stored_bytes;
  info.num_nodes = read_count(file, "num_nodes_list", kMaxNodes);
  info.num_edges = read_count(file, "num_edges_list", std::numeric_limits<int64_t>::max() / 32);
  const NpzMemberInfo& ei = require_member(members, file, "edge_index", "the graph's edges");
  if (ei.shape.size() != 2 || ei.shape[0] != 2 || ei.shape[1] != info.num_edges)
    raise<ParseError>(file.string(), ":edge_index: shape ", shape_str(ei.shape), ", expected (2, ",
                      info.num_edges, ") as num_edges_list says");
  if (const NpzMemberInfo* f = find_member(members, "node_feat")) {
    if (f->shape.size() != 2 || f->shape[0] != info.num_nodes || f->dtype.kind != 'f')
      raise<ParseError>(file.string(), ":node_feat: shape ", shape_str(f->shape), " of '", f->dtype.descr,
                        "', expected (", info.num_nodes, ", F) floats as num_nodes_list says");
    info.num_features = f->shape[1];
    info.feature_dtype = f->dtype.descr;
  }
  for (const auto& m : members)
    if (m.key != "node_feat" && m.key.rfind("node_", 0) == 0) info.node_arrays.push_back(m.key);
  if (!labels_and_splits) return info;
  if (fs::exists(label_npz(dir)))
    std::tie(info.labelled, info.num_classes) =
        for_each_label(label_npz(dir), info.num_nodes, [](int64_t, int32_t) {});
  const fs::path split_root = dir / "split";
  if (fs::is_directory(split_root))
    for (const auto& entry : fs::directory_iterator(split_root)) {
      if (!entry.is_directory()) continue;
      const std::string name = entry.path().filename().string();
      std::array<int64_t, 3> sizes{};
      const char* parts[3] = {"train", "valid", "test"};
      for (size_t p = 0; p < 3; ++p) {
        const fs::path f = split_file(dir, "split/" + name + "/" + parts[p] + ".csv");
        if (!fs::exists(f))
          raise<IoError>(f.string(), ".gz: no such file; every split folder needs train, valid and test");
        sizes[p] = count_lines(f);
      }
      info.splits[name] = sizes;
    }
  return info;
}

}  // namespace

OgbBinaryInfo ogb_binary_info(const fs::path& dir) { return scan(dir, /*labels_and_splits=*/true); }

void for_each_ogb_edge_block(const fs::path& dir, int64_t block,
                             const std::function<void(int64_t first, std::span<const int64_t> src,
                                                      std::span<const int64_t> dst)>& fn) {
  if (block < 1) raise<InvalidArgument>("for_each_ogb_edge_block: block is ", block, ", expected >= 1");
  const fs::path file = data_npz(dir);
  const int64_t n = read_count(file, "num_nodes_list", kMaxNodes);
  NpyStream src_stream(file, "edge_index"), dst_stream(file, "edge_index");
  const std::string what = file.string() + ":edge_index";
  const auto& shape = src_stream.info().shape;
  if (shape.size() != 2 || shape[0] != 2)
    raise<ParseError>(what, ": shape ", shape_str(shape), ", expected (2, E)");
  const int64_t e = shape[1];
  dst_stream.skip(static_cast<uint64_t>(e) * static_cast<uint64_t>(dst_stream.info().dtype.itemsize));
  std::vector<int64_t> src(static_cast<size_t>(std::min(block, std::max<int64_t>(e, 1)))), dst(src.size());
  for (int64_t first = 0; first < e;) {
    const auto k = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(src.size()), e - first));
    read_int64s(src_stream, std::span<int64_t>(src.data(), k), what);
    read_int64s(dst_stream, std::span<int64_t>(dst.data(), k), what);
    for (size_t j = 0; j < k; ++j)
      if (src[j] < 0 || src[j] >= n || dst[j] < 0 || dst[j] >= n)
        raise<ParseError>(what, ": edge ", first + static_cast<int64_t>(j), " is ", src[j], " -> ", dst[j],
                          ", a node id out of range [0, ", n, ") (num_nodes_list)");
    fn(first, std::span<const int64_t>(src.data(), k), std::span<const int64_t>(dst.data(), k));
    first += static_cast<int64_t>(k);
  }
}

void for_each_ogb_feature_block(const fs::path& dir, int64_t block_rows,
                                const std::function<void(int64_t first_row, ConstView rows)>& fn) {
  if (block_rows < 1)
    raise<InvalidArgument>("for_each_ogb_feature_block: block_rows is ", block_rows, ", expected >= 1");
  const fs::path file = data_npz(dir);
  NpyStream s(file, "node_feat");
  const std::string what = file.string() + ":node_feat";
  const auto& shape = s.info().shape;
  if (shape.size() != 2) raise<ParseError>(what, ": shape ", shape_str(shape), ", expected (N, F)");
  const int64_t n = shape[0], f = shape[1];
  const int64_t rows = std::max<int64_t>(1, std::min(block_rows, n));
  Tensor buf = Tensor::uninitialized({rows, f});
  for (int64_t first = 0; first < n;) {
    const int64_t k = std::min(rows, n - first);
    read_floats(s, buf.span().subspan(0, static_cast<size_t>(k * f)), what);
    fn(first, ConstView(buf.data(), Shape{k, f}));
    first += k;
  }
}

namespace detail {

int64_t read_ogb_binary_raw(const fs::path& dir, const OgbOptions& options, Dataset& ds) {
  const OgbBinaryInfo info = scan(dir, /*labels_and_splits=*/false);
  const uint64_t need = info.bytes_to_load(options.undirected);
  const uint64_t limit = options.max_bytes ? options.max_bytes : default_load_limit();
  if (need > limit)
    raise<InvalidArgument>(
        dir.string(), ": loading '", ds.name, "' (", info.num_nodes, " nodes, ", info.num_edges, " edges",
        options.undirected ? " and their reverses" : "", ", ", info.num_features, " features) needs about ",
        human_bytes(need), " of memory, more than the ", human_bytes(limit),
        " allowed (OgbOptions::max_bytes; default 3/4 of this machine's memory). Read it in "
        "blocks instead (data/ogb_binary.hpp: for_each_ogb_edge_block, "
        "for_each_ogb_feature_block); `edgeattn dataset info` shows its metadata "
        "(ogb_binary_info)");
  const int64_t n = info.num_nodes;
  const fs::path file = data_npz(dir);
  ds.sources.push_back({file.string(), "", static_cast<int64_t>(fs::file_size(file))});

  std::vector<int64_t> src, dst;
  src.reserve(static_cast<size_t>(info.num_edges));
  dst.reserve(static_cast<size_t>(info.num_edges));
  for_each_ogb_edge_block(dir, int64_t{1} << 22,
                          [&](int64_t, std::span<const int64_t> s, std::span<const int64_t> d) {
                            src.insert(src.end(), s.begin(), s.end());
                            dst.insert(dst.end(), d.begin(), d.end());
                          });
  {
    AssembledGraph g =
        assemble_graph(n, std::move(src), std::move(dst), {}, options.undirected, options.self_loops);
    ds.graph = std::move(g.graph);
    std::ostringstream note;
    note << ds.name << ": " << g.stored_entries << " stored edges (binary layout)";
    if (g.stored_self_loops > 0) note << " (" << g.stored_self_loops << " self-loops)";
    note << " -> " << ds.graph.num_edges() << " edges";
    if (options.undirected) note << " after adding reverse edges";
    ds.notes.push_back(note.str());
  }
  if (info.num_features > 0) {
    Tensor x = Tensor::uninitialized({n, info.num_features});
    for_each_ogb_feature_block(dir, int64_t{1} << 16, [&](int64_t first, ConstView rows) {
      std::copy_n(rows.data(), rows.numel(), x.data() + first * info.num_features);
    });
    ds.features = Features(std::move(x));
    if (info.feature_dtype == "<f2")
      ds.notes.push_back(file.string() + ": float16 node features widened to float32");
  }
  for (const std::string& a : info.node_arrays)
    ds.notes.push_back(file.string() + ": member '" + a + "' not loaded (only node_feat is used)");
  if (fs::exists(label_npz(dir))) {
    ds.sources.push_back({label_npz(dir).string(), "", static_cast<int64_t>(fs::file_size(label_npz(dir)))});
    ds.labels.classes.assign(static_cast<size_t>(n), -1);
    int64_t labelled = 0;
    std::tie(labelled, ds.labels.num_classes) =
        for_each_label(label_npz(dir), n,
                       [&](int64_t node, int32_t c) { ds.labels.classes[static_cast<size_t>(node)] = c; });
    if (labelled < n)
      ds.notes.push_back(label_npz(dir).string() + ": " + std::to_string(n - labelled) +
                         " nodes have no label (-1)");
  }
  return n;
}

}  // namespace detail
}  // namespace edgeattn::data
