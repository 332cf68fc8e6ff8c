#include "edgeattn/dist/dataset_part.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <type_traits>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/npy.hpp"
#include "edgeattn/data/npz_stream.hpp"
#include "edgeattn/data/npz_writer.hpp"
#include "edgeattn/train/trainer.hpp"

namespace edgeattn::dist {
namespace {

constexpr const char* kManifest = "partitions.txt";

SplitPart split_part(const LocalPartition& p, std::span<const int32_t> part, std::span<const int64_t> nodes,
                     const char* which) {
  SplitPart s;
  s.total = static_cast<int64_t>(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    const int64_t v = nodes[k];
    if (v < 0 || v >= p.num_nodes)
      raise<InvalidArgument>("make_dataset_part: ", which, " node ", v, " is out of [0, ", p.num_nodes, ")");
    if (part[static_cast<size_t>(v)] != p.rank) continue;
    s.rows.push_back(std::lower_bound(p.owned.begin(), p.owned.end(), v) - p.owned.begin());
    s.positions.push_back(static_cast<int64_t>(k));
  }
  return s;
}

// ---- reading ----------------------------------------------------------------------------------

// Reads a part file's members straight into their destinations (data/npz_stream.hpp: the file
// is memory-mapped and streamed, so loading holds each array once, not the file as well).
struct Reader {
  std::filesystem::path file;
  std::map<std::string, data::NpzMemberInfo> members;

  [[noreturn]] void fail(const std::string& member, const std::string& what) const {
    raise<ParseError>(file.string(), ": member '", member, "': ", what);
  }
  bool has(const std::string& key) const { return members.count(key) != 0; }
  const data::NpzMemberInfo& get(const std::string& key) const {
    const auto it = members.find(key);
    if (it == members.end()) raise<ParseError>(file.string(), ": member '", key, "' is missing");
    return it->second;
  }
  std::vector<int64_t> ints(const std::string& key, int64_t expected_size = -1) const {
    const data::NpzMemberInfo& m = get(key);
    if (m.shape.size() != 1)
      fail(key, "expected a 1-d array, found " + std::to_string(m.shape.size()) + " dimensions");
    if (expected_size >= 0 && m.numel() != expected_size)
      fail(key, "expected " + std::to_string(expected_size) + " entries, found " + std::to_string(m.numel()));
    if (m.dtype.kind != 'i' || (m.dtype.itemsize != 8 && m.dtype.itemsize != 4))
      fail(key, "expected int64 or int32 values, found dtype " + m.dtype.descr);
    data::NpyStream stream(file, key);
    std::vector<int64_t> out(static_cast<size_t>(m.numel()));
    if (m.dtype.itemsize == 8) {
      stream.read_exact(std::as_writable_bytes(std::span(out)));
    } else {
      std::vector<int32_t> narrow(out.size());
      stream.read_exact(std::as_writable_bytes(std::span(narrow)));
      std::copy(narrow.begin(), narrow.end(), out.begin());
    }
    return out;
  }
  void in_range(const std::string& key, std::span<const int64_t> v, int64_t lo, int64_t hi) const {
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k] < lo || v[k] >= hi)
        fail(key, "entry " + std::to_string(k) + " is " + std::to_string(v[k]) + ", expected in [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + ")");
  }
  // counts [parts] of one side of the exchange plan, against `total` (the `what` they count).
  void counts(const std::string& key, std::span<const int64_t> counts, int rank, int64_t total,
              const std::string& what) const {
    if (const std::string e = exchange_counts_error(counts, rank, total); !e.empty())
      fail(key, e + " (the " + what + ")");
  }
  int rank_of(const std::string& key) const { return static_cast<int>(get(key).shape.size()); }
  Tensor matrix(const std::string& key, int64_t rows) const {
    const data::NpzMemberInfo& m = get(key);
    if (m.shape.size() != 2 || m.shape[0] != rows)
      fail(key, "expected a [" + std::to_string(rows) + ", *] array, found shape of " +
                    std::to_string(m.shape.size()) + " dimensions" +
                    (m.shape.empty() ? "" : " with " + std::to_string(m.shape[0]) + " rows"));
    if (m.dtype.kind != 'f' || m.dtype.itemsize != 4)
      fail(key, "expected float32 values, found dtype " + m.dtype.descr);
    Tensor t = Tensor::uninitialized({m.shape[0], m.shape[1]});
    data::NpyStream(file, key).read_exact(std::as_writable_bytes(t.span()));
    return t;
  }
};

std::map<std::string, std::string> read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kManifest;
  if (!std::filesystem::exists(path))
    raise<IoError>(path.string(),
                   " does not exist: not a partition directory (write one with edgeattn partition)");
  std::map<std::string, std::string> m;
  std::istringstream in(read_file(path));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      raise<ParseError>(path.string(), ":", number, ": expected key=value, found '", line, "'");
    m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

// The value of `key` as T (int64_t or double): ParseError naming the file and key otherwise.
template <class T>
T manifest_value(const std::map<std::string, std::string>& m, const std::filesystem::path& dir,
                 const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) raise<ParseError>((dir / kManifest).string(), ": key '", key, "' is missing");
  try {
    size_t used = 0;
    const T v = std::is_integral_v<T> ? static_cast<T>(std::stoll(it->second, &used))
                                      : static_cast<T>(std::stod(it->second, &used));
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  raise<ParseError>((dir / kManifest).string(), ": ", key, " is '", it->second, "', expected ",
                    std::is_integral_v<T> ? "an integer" : "a number");
}

}  // namespace

DatasetPart make_dataset_part(const data::Dataset& ds, const data::Split& split,
                              std::span<const int32_t> part, int parts, int rank) {
  DatasetPart d;
  d.name = ds.name;
  d.format = ds.format;
  d.part = make_local_partition(ds.graph, part, parts, rank);
  const std::vector<int64_t> sources = d.part.sources();
  if (ds.features.is_sparse())
    d.features = data::Features(ds.features.sparse().select_rows(sources));
  else
    d.features = data::Features(gather_rows(ds.features.dense().view(), sources));
  if (!ds.edge_attr.absent()) d.edge_attr = gather_rows(ds.edge_attr.view(), d.part.edge_ids);
  d.labels = train::select_labels(ds.labels, d.part.owned);
  d.train = split_part(d.part, part, split.train, "train");
  d.val = split_part(d.part, part, split.val, "val");
  d.test = split_part(d.part, part, split.test, "test");
  return d;
}

std::filesystem::path partition_file(const std::filesystem::path& dir, int parts, int rank) {
  return dir / ("part-" + std::to_string(rank) + "-of-" + std::to_string(parts) + ".npz");
}

PartitionQuality write_partitions(const std::filesystem::path& dir, const data::Dataset& ds,
                                  const std::string& split_name, std::span<const int32_t> part, int parts,
                                  PartitionMethod method) {
  const data::Split& split = ds.split(split_name);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) raise<IoError>("write_partitions: cannot create ", dir.string(), ": ", ec.message());
  const PartitionQuality q = partition_quality(ds.graph, part, parts);
  for (int r = 0; r < parts; ++r) {
    const DatasetPart d = make_dataset_part(ds, split, part, parts, r);
    const LocalPartition& p = d.part;
    std::vector<data::NpzMember> m;
    auto add = [&](const std::string& key, const auto& v) {  // a 1-d member (int64 or int32)
      m.push_back({key, data::make_npy(std::span(v.data(), v.size()), {static_cast<int64_t>(v.size())})});
    };
    const std::vector<int64_t> sizes{r, parts, p.num_nodes, d.train.total, d.val.total, d.test.total};
    add("sizes", sizes);
    add("owned", p.owned);
    add("halo", p.halo);
    add("recv_rows", p.recv_rows);
    add("send_rows", p.send_rows);
    add("send_index", p.send_index);
    add("indptr", p.graph.row_ptr());
    add("indices", p.graph.col_idx());
    add("edge_ids", p.edge_ids);
    const Tensor features = d.features.to_dense();
    m.push_back({"features", data::make_npy(features.span(), {features.dim(0), features.dim(1)})});
    if (!d.edge_attr.absent())
      m.push_back(
          {"edge_attr", data::make_npy(d.edge_attr.span(), {d.edge_attr.dim(0), d.edge_attr.dim(1)})});
    if (d.labels.multi_label()) {
      m.push_back({"labels", data::make_npy(d.labels.multi_hot.span(),
                                            {d.labels.multi_hot.dim(0), d.labels.multi_hot.dim(1)})});
    } else {
      const std::vector<int64_t> classes(d.labels.classes.begin(), d.labels.classes.end());
      add("labels", classes);
    }
    for (const auto& [key, s] :
         {std::pair{"train", &d.train}, std::pair{"val", &d.val}, std::pair{"test", &d.test}}) {
      add(std::string(key) + "_rows", s->rows);
      add(std::string(key) + "_pos", s->positions);
    }
    data::write_npz_arrays(partition_file(dir, parts, r), m);
  }
  std::ostringstream os;
  os << "# edgeattn partition files: one part-<rank>-of-<parts>.npz per rank (dist/dataset_part.hpp)\n"
     << "parts=" << parts << "\nnum_nodes=" << ds.num_nodes() << "\nnum_edges=" << ds.graph.num_edges()
     << "\nnum_classes=" << ds.labels.num_classes << "\nmetric=" << ds.labels.eval_metric
     << "\ndataset=" << ds.name << "\nformat=" << ds.format
     << "\nsplit=" << (split_name.empty() ? ds.default_split : split_name) << "\nmethod=" << to_string(method)
     << "\nedge_cut=" << q.edge_cut << "\nhalo_fraction=" << q.halo_fraction
     << "\nedge_imbalance=" << q.edge_imbalance << "\nnode_imbalance=" << q.node_imbalance << "\n";
  write_file_atomic(dir / kManifest, os.str());  // last: a directory with it is complete
  return q;
}

DatasetPart read_partition(const std::filesystem::path& dir, int parts, int rank) {
  const auto manifest = read_manifest(dir);
  const int64_t dir_parts = manifest_value<int64_t>(manifest, dir, "parts");
  if (dir_parts != parts)
    raise<InvalidArgument>("read_partition: ", dir.string(), " holds ", dir_parts, " parts, but the run has ",
                           parts, " ranks (run with mpirun -np ", dir_parts, ", or partition again)");
  if (rank < 0 || rank >= parts)
    raise<InvalidArgument>("read_partition: rank ", rank, " of ", parts, ", expected 0 <= rank < parts");
  const int64_t n = manifest_value<int64_t>(manifest, dir, "num_nodes");
  const int64_t num_classes = manifest_value<int64_t>(manifest, dir, "num_classes");
  Reader in;
  in.file = partition_file(dir, parts, rank);
  if (!std::filesystem::exists(in.file))
    raise<IoError>("partition file ", in.file.string(), " for rank ", rank, " does not exist");
  for (data::NpzMemberInfo& m : data::npz_catalog(in.file)) in.members.emplace(m.key, std::move(m));

  DatasetPart d;
  d.name = manifest.count("dataset") ? manifest.at("dataset") : "";
  d.format = manifest.count("format") ? manifest.at("format") : "";
  d.split = manifest.count("split") ? manifest.at("split") : "";
  d.method = manifest.count("method") ? manifest.at("method") : "";
  d.quality.parts = parts;
  d.quality.edge_cut = manifest_value<int64_t>(manifest, dir, "edge_cut");
  d.quality.halo_fraction = manifest_value<double>(manifest, dir, "halo_fraction");
  d.quality.edge_imbalance = manifest_value<double>(manifest, dir, "edge_imbalance");
  // Written since 2026-11-26; 0 (unknown) in the manifests of older partition files.
  if (manifest.count("node_imbalance"))
    d.quality.node_imbalance = manifest_value<double>(manifest, dir, "node_imbalance");
  const std::vector<int64_t> sizes = in.ints("sizes", 6);
  if (sizes[0] != rank || sizes[1] != parts || sizes[2] != n)
    in.fail("sizes", "expected rank " + std::to_string(rank) + " of " + std::to_string(parts) + " with " +
                         std::to_string(n) + " nodes, found rank " + std::to_string(sizes[0]) + " of " +
                         std::to_string(sizes[1]) + " with " + std::to_string(sizes[2]));
  LocalPartition& p = d.part;
  p.rank = rank;
  p.parts = parts;
  p.num_nodes = n;
  p.owned = in.ints("owned");
  in.in_range("owned", p.owned, 0, n);
  if (p.owned.empty() || !std::is_sorted(p.owned.begin(), p.owned.end()))
    in.fail("owned", "expected ascending node ids, at least one");
  p.halo = in.ints("halo");
  in.in_range("halo", p.halo, 0, n);
  p.recv_rows = in.ints("recv_rows", parts);
  p.send_rows = in.ints("send_rows", parts);
  const std::vector<int64_t> send_index = in.ints("send_index");
  in.in_range("send_index", send_index, 0, p.num_owned());
  in.counts("recv_rows", p.recv_rows, rank, p.num_halo(), "halo nodes");
  in.counts("send_rows", p.send_rows, rank, static_cast<int64_t>(send_index.size()), "rows of send_index");
  // The halo is grouped by owner, ascending within each owner's block (dist/local_partition.hpp),
  // and holds no node of this rank: the exchange places rows by these positions.
  for (int q = 0, k = 0; q < parts; ++q)
    for (int64_t i = 0; i < p.recv_rows[static_cast<size_t>(q)]; ++i, ++k) {
      const int64_t v = p.halo[static_cast<size_t>(k)];
      if (std::binary_search(p.owned.begin(), p.owned.end(), v))
        in.fail("halo", "entry " + std::to_string(k) + " is node " + std::to_string(v) +
                            ", which this rank owns (a halo node belongs to another rank)");
      if (i > 0 && v <= p.halo[static_cast<size_t>(k - 1)])
        in.fail("halo", "entry " + std::to_string(k) + " is " + std::to_string(v) + " after " +
                            std::to_string(p.halo[static_cast<size_t>(k - 1)]) +
                            ", expected ascending ids within rank " + std::to_string(q) + "'s block");
    }
  p.send_index.assign(send_index.begin(), send_index.end());
  std::vector<int64_t> indptr = in.ints("indptr", p.num_owned() + 1);
  const std::vector<int64_t> indices = in.ints("indices");
  in.in_range("indices", indices, 0, p.num_src());
  if (indptr.front() != 0 || indptr.back() != static_cast<int64_t>(indices.size()) ||
      !std::is_sorted(indptr.begin(), indptr.end()))
    in.fail("indptr", "expected non-decreasing offsets from 0 to " + std::to_string(indices.size()));
  p.edge_ids = in.ints("edge_ids", static_cast<int64_t>(indices.size()));
  in.in_range("edge_ids", p.edge_ids, 0, manifest_value<int64_t>(manifest, dir, "num_edges"));
  std::vector<int32_t> cols(indices.begin(), indices.end());
  try {
    p.graph = Graph::from_csr(p.num_owned(), p.num_src(), std::move(indptr), std::move(cols),
                              CsrCheck::require_sorted);
  } catch (const GraphError& e) {
    in.fail("indices", e.what());
  }
  d.features = data::Features(in.matrix("features", p.num_src()));
  if (in.has("edge_attr")) d.edge_attr = in.matrix("edge_attr", p.graph.num_edges());
  d.labels.num_classes = num_classes;
  d.labels.eval_metric = manifest.count("metric") ? manifest.at("metric") : "";
  if (in.rank_of("labels") == 2) {
    d.labels.multi_hot = in.matrix("labels", p.num_owned());
  } else {
    const std::vector<int64_t> classes = in.ints("labels", p.num_owned());
    in.in_range("labels", classes, -1, num_classes);
    d.labels.classes.assign(classes.begin(), classes.end());
  }
  int which = 3;
  for (auto [key, s] : {std::pair{"train", &d.train}, std::pair{"val", &d.val}, std::pair{"test", &d.test}}) {
    s->total = sizes[static_cast<size_t>(which++)];
    s->rows = in.ints(std::string(key) + "_rows");
    s->positions = in.ints(std::string(key) + "_pos", static_cast<int64_t>(s->rows.size()));
    in.in_range(std::string(key) + "_rows", s->rows, 0, p.num_owned());
    in.in_range(std::string(key) + "_pos", s->positions, 0, s->total);
  }
  return d;
}

}  // namespace edgeattn::dist
