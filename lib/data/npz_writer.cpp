#include "edgeattn/data/npz_writer.hpp"

#include <zlib.h>

#include <cstring>
#include <set>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

namespace edgeattn::data {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint64_t kDataAlignment = 64;  // where each member's array data starts
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kSat32 = 0xFFFFFFFFu;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, time 00:00:00

template <class T>
NpyArray typed(std::span<const T> values, std::vector<int64_t> shape, char kind, const char* descr) {
  int64_t numel = 1;
  for (const int64_t s : shape) {
    if (s < 0) raise<InvalidArgument>("make_npy: negative extent ", s);
    numel *= s;
  }
  if (numel != static_cast<int64_t>(values.size()))
    raise<InvalidArgument>("make_npy: shape holds ", numel, " elements but ", values.size(), " values given");
  NpyArray a;
  a.dtype.kind = kind;
  a.dtype.itemsize = sizeof(T);
  a.dtype.descr = descr;
  a.shape = std::move(shape);
  a.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return a;
}

void put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>(v >> 8));
}
void put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint32_t crc_of(std::string_view data, uLong crc = crc32(0L, Z_NULL, 0)) {
  // zlib's length argument is 32-bit: feed large members in pieces.
  for (size_t pos = 0; pos < data.size();) {
    const size_t n = std::min<size_t>(data.size() - pos, size_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + pos), static_cast<uInt>(n));
    pos += n;
  }
  return static_cast<uint32_t>(crc);
}

std::vector<int64_t> int64s(std::span<const int32_t> v) { return {v.begin(), v.end()}; }

}  // namespace

NpyArray make_npy(std::span<const float> values, std::vector<int64_t> shape) {
  return typed(values, std::move(shape), 'f', "<f4");
}
NpyArray make_npy(std::span<const int32_t> values, std::vector<int64_t> shape) {
  return typed(values, std::move(shape), 'i', "<i4");
}
NpyArray make_npy(std::span<const int64_t> values, std::vector<int64_t> shape) {
  return typed(values, std::move(shape), 'i', "<i8");
}
NpyArray make_npy_strings(const std::vector<std::string>& values, std::vector<int64_t> shape) {
  // UTF-8 to UTF-32 code points, numpy's '<U<n>' (n the longest string, shorter ones 0-padded).
  std::vector<std::vector<uint32_t>> points(values.size());
  size_t width = 1;
  for (size_t k = 0; k < values.size(); ++k) {
    const std::string& v = values[k];
    for (size_t i = 0; i < v.size();) {
      const auto b = static_cast<unsigned char>(v[i]);
      const int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
      if (len == 0 || i + static_cast<size_t>(len) > v.size())
        raise<InvalidArgument>("make_npy_strings: string ", k, " is not valid UTF-8 at byte ", i);
      uint32_t c = len == 1 ? b : b & (0x7Fu >> len);
      for (int j = 1; j < len; ++j) {
        const auto cont = static_cast<unsigned char>(v[i + static_cast<size_t>(j)]);
        if ((cont >> 6) != 2)
          raise<InvalidArgument>("make_npy_strings: string ", k, " is not valid UTF-8 at byte ", i);
        c = (c << 6) | (cont & 0x3Fu);
      }
      points[k].push_back(c);
      i += static_cast<size_t>(len);
    }
    width = std::max(width, points[k].size());
  }
  int64_t count = 1;
  for (const int64_t d : shape) count *= d;
  if (count != static_cast<int64_t>(values.size()))
    raise<InvalidArgument>("make_npy_strings: shape holds ", count, " values, ", values.size(), " given");
  NpyArray a;
  a.dtype.kind = 'U';
  a.dtype.itemsize = static_cast<int64_t>(4 * width);
  a.dtype.descr = "<U" + std::to_string(width);
  a.shape = std::move(shape);
  a.bytes.reserve(values.size() * 4 * width);
  for (const auto& cps : points)
    for (size_t j = 0; j < width; ++j) put32(a.bytes, j < cps.size() ? cps[j] : 0);
  return a;
}

NpyArray make_npy_bool(bool value) {
  NpyArray a;
  a.dtype.kind = 'b';
  a.dtype.itemsize = 1;
  a.dtype.descr = "|b1";
  a.bytes.assign(1, value ? '\1' : '\0');
  return a;
}

namespace {

/// The .npy header (magic, version, length, dict, padding) of an array.
std::string npy_header(const NpyArray& array) {
  const NpyDtype& d = array.dtype;
  const bool known = (d.kind == 'f' && (d.itemsize == 4 || d.itemsize == 8)) ||
                     ((d.kind == 'i' || d.kind == 'u') &&
                      (d.itemsize == 1 || d.itemsize == 2 || d.itemsize == 4 || d.itemsize == 8)) ||
                     (d.kind == 'b' && d.itemsize == 1) || (d.kind == 'S' && d.itemsize > 0) ||
                     (d.kind == 'U' && d.itemsize > 0 && d.itemsize % 4 == 0);
  if (!known) raise<InvalidArgument>("npy_bytes: ", array.name, ": unsupported dtype '", d.descr, "'");
  std::string descr;
  if (d.kind == 'U')
    descr = "<U" + std::to_string(d.itemsize / 4);
  else if (d.kind == 'S')
    descr = "|S" + std::to_string(d.itemsize);
  else
    descr = std::string(d.itemsize == 1 ? "|" : "<") + d.kind + std::to_string(d.itemsize);
  if (static_cast<int64_t>(array.bytes.size()) != array.numel() * d.itemsize)
    raise<InvalidArgument>("npy_bytes: ", array.name, ": ", array.bytes.size(), " bytes, expected ",
                           array.numel() * d.itemsize, " for the shape");
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(array.shape[i]);
  dict += array.shape.size() == 1 ? ",), }" : "), }";
  // magic (6) + version (2) + length (2 or 4) + dict + padding + '\n', a multiple of 64
  bool v2 = false;
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 0xFFFF) {
    v2 = true;
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  const size_t header_len = total - prefix;
  std::string out;
  out.reserve(total);
  out.append("\x93NUMPY", 6);
  out.push_back(v2 ? '\2' : '\1');
  out.push_back('\0');
  if (v2)
    put32(out, static_cast<uint32_t>(header_len));
  else
    put16(out, static_cast<uint16_t>(header_len));
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  return out;
}

}  // namespace

std::string npy_bytes(const NpyArray& array) { return npy_header(array) + array.bytes; }

std::string npz_bytes(std::span<const NpzMember> members, bool force_zip64) {
  std::set<std::string> keys;
  for (const NpzMember& m : members) {
    if (m.key.empty()) raise<InvalidArgument>("npz_bytes: a member has an empty key");
    if (!keys.insert(m.key).second) raise<InvalidArgument>("npz_bytes: member '", m.key, "' appears twice");
  }
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size, offset;
  };
  std::vector<Entry> entries;
  std::string out;
  uint64_t expected = 22;
  for (const NpzMember& m : members) expected += 2 * m.key.size() + 256 + m.array.bytes.size() + 128;
  out.reserve(expected);
  bool any64 = force_zip64;
  for (const NpzMember& m : members) {
    const std::string header = npy_header(m.array);
    Entry e{m.key + ".npy", crc_of(m.array.bytes, crc_of(header)), header.size() + m.array.bytes.size(),
            out.size()};
    const bool size64 = force_zip64 || e.size >= kSat32;
    any64 = any64 || size64 || e.offset >= kSat32;
    put32(out, kLocalSig);
    put16(out, size64 ? 45 : 20);  // version needed: 4.5 for ZIP64
    put16(out, 0);                 // flags
    put16(out, 0);                 // stored
    put16(out, 0);                 // time
    put16(out, kDosDate);
    put32(out, e.crc);
    put32(out, size64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(e.size));
    put32(out, size64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(e.size));
    put16(out, static_cast<uint16_t>(e.name.size()));
    // The .npy header is a multiple of 64 bytes long; padding the local header's extra field
    // (zipalign's record 0xD935: the alignment, then zeros) makes the array's data start at a
    // multiple of 64 in the file too, so it can be read in place (data/mapped_features.hpp).
    const uint64_t unpadded = out.size() + 2 + e.name.size() + (size64 ? 20 : 0);
    uint64_t pad = (kDataAlignment - unpadded % kDataAlignment) % kDataAlignment;
    if (pad != 0 && pad < 6) pad += kDataAlignment;  // a record is at least 4 + 2 bytes
    put16(out, static_cast<uint16_t>((size64 ? 20 : 0) + pad));
    out += e.name;
    if (size64) {
      put16(out, 0x0001);
      put16(out, 16);
      put64(out, e.size);
      put64(out, e.size);
    }
    if (pad != 0) {
      put16(out, 0xD935);
      put16(out, static_cast<uint16_t>(pad - 4));
      put16(out, static_cast<uint16_t>(kDataAlignment));
      out.append(pad - 6, '\0');
    }
    out += header;
    out += m.array.bytes;
    entries.push_back(std::move(e));
  }
  const uint64_t cd_offset = out.size();
  for (const Entry& e : entries) {
    const bool size64 = force_zip64 || e.size >= kSat32;
    const bool off64 = force_zip64 || e.offset >= kSat32;
    const uint16_t extra = static_cast<uint16_t>((size64 ? 16 : 0) + (off64 ? 8 : 0));
    put32(out, kCentralSig);
    put16(out, (3 << 8) | 45);  // made by: Unix, 4.5
    put16(out, size64 || off64 ? 45 : 20);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0);
    put16(out, kDosDate);
    put32(out, e.crc);
    put32(out, size64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(e.size));
    put32(out, size64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(e.size));
    put16(out, static_cast<uint16_t>(e.name.size()));
    put16(out, extra > 0 ? static_cast<uint16_t>(extra + 4) : 0);
    put16(out, 0);            // comment
    put16(out, 0);            // disk
    put16(out, 0);            // internal attributes
    put32(out, 0644u << 16);  // external: a regular file, rw-r--r--
    put32(out, off64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(e.offset));
    out += e.name;
    if (extra > 0) {
      put16(out, 0x0001);
      put16(out, extra);
      if (size64) {
        put64(out, e.size);
        put64(out, e.size);
      }
      if (off64) put64(out, e.offset);
    }
  }
  const uint64_t cd_size = out.size() - cd_offset;
  const uint64_t count = entries.size();
  any64 = any64 || count >= 0xFFFF || cd_offset >= kSat32 || cd_size >= kSat32;
  if (any64) {
    const uint64_t z64 = out.size();
    put32(out, kZip64EndSig);
    put64(out, 44);  // size of the rest of the record
    put16(out, (3 << 8) | 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, count);
    put64(out, count);
    put64(out, cd_size);
    put64(out, cd_offset);
    put32(out, kZip64LocatorSig);
    put32(out, 0);
    put64(out, z64);
    put32(out, 1);
  }
  put32(out, kEndSig);
  put16(out, 0);
  put16(out, 0);
  put16(out, any64 ? 0xFFFF : static_cast<uint16_t>(count));
  put16(out, any64 ? 0xFFFF : static_cast<uint16_t>(count));
  put32(out, any64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(cd_size));
  put32(out, any64 ? static_cast<uint32_t>(kSat32) : static_cast<uint32_t>(cd_offset));
  put16(out, 0);
  return out;
}

void write_npz_arrays(const std::filesystem::path& path, std::span<const NpzMember> members,
                      bool force_zip64) {
  write_file_atomic(path, npz_bytes(members, force_zip64));
}

std::vector<NpzMember> dataset_npz_members(const Dataset& ds) {
  const Graph& g = ds.graph;
  if (g.num_dst() != g.num_src())
    raise<InvalidArgument>("write_npz: dataset '", ds.name, "' has a ", g.num_dst(), " x ", g.num_src(),
                           " graph; expected a square one");
  // What this layout does not hold is refused rather than dropped.
  const char* unheld = !ds.edge_attr.absent()             ? "edge attributes"
                       : !ds.graph_ptr.empty()            ? "many graphs (graph_ptr)"
                       : !ds.graph_labels.classes.empty() ? "graph labels"
                                                          : nullptr;
  if (unheld)
    raise<InvalidArgument>("write_npz: dataset '", ds.name, "' has ", unheld,
                           ", which this .npz layout does not hold; nothing was written");
  const int64_t n = g.num_dst(), e = g.num_edges();
  std::vector<NpzMember> m;
  m.push_back({"adj_indptr", make_npy(g.row_ptr(), {n + 1})});
  m.push_back({"adj_indices", make_npy(g.col_idx(), {e})});
  const std::vector<float> ones(ds.edge_weight.empty() ? static_cast<size_t>(e) : 0, 1.f);
  m.push_back({"adj_data", make_npy(ds.edge_weight.empty() ? std::span<const float>(ones)
                                                           : std::span<const float>(ds.edge_weight),
                                    {e})});
  const std::vector<int64_t> shape = {n, n};
  m.push_back({"adj_shape", make_npy(std::span<const int64_t>(shape), {2})});
  m.push_back({"adj_rows_are_destinations", make_npy_bool(true)});
  if (ds.features.cols() > 0 && ds.features.is_sparse()) {  // gnn-benchmark's CSR by node
    const CsrMatrix& f = ds.features.sparse();
    m.push_back({"attr_data", make_npy(f.values(), {f.nnz()})});
    m.push_back({"attr_indices", make_npy(f.indices(), {f.nnz()})});
    m.push_back({"attr_indptr", make_npy(f.indptr(), {f.rows() + 1})});
    const std::vector<int64_t> fshape = {f.rows(), f.cols()};
    m.push_back({"attr_shape", make_npy(std::span<const int64_t>(fshape), {2})});
  } else if (ds.features.cols() > 0) {
    const Tensor& dense = ds.features.dense();
    m.push_back(
        {"attr_matrix", make_npy(std::span<const float>(dense.data(), static_cast<size_t>(dense.numel())),
                                 {ds.features.rows(), ds.features.cols()})});
  }
  if (!ds.node_names.empty())
    m.push_back(
        {"node_names", make_npy_strings(ds.node_names, {static_cast<int64_t>(ds.node_names.size())})});
  if (!ds.labels.class_names.empty())
    m.push_back({"class_names", make_npy_strings(ds.labels.class_names,
                                                 {static_cast<int64_t>(ds.labels.class_names.size())})});
  if (!ds.name.empty()) m.push_back({"dataset_name", make_npy_strings({ds.name}, {})});
  if (ds.labels.multi_label()) {
    const Tensor& y = ds.labels.multi_hot;
    std::vector<int64_t> v(static_cast<size_t>(y.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = y.data()[i] != 0.f ? 1 : 0;
    m.push_back({"labels", make_npy(std::span<const int64_t>(v), {n, ds.labels.num_classes})});
  } else if (!ds.labels.classes.empty()) {
    const std::vector<int64_t> y = int64s(ds.labels.classes);
    m.push_back({"labels", make_npy(std::span<const int64_t>(y), {n})});
  }
  if (!ds.splits.empty()) {
    // The default split as idx_train/val/test (what gnn-benchmark readers look for), every other
    // one as split<k>_train/val/test, and split_names naming them all, the default first.
    std::vector<std::string> names;
    names.push_back(ds.default_split.empty() ? ds.splits.begin()->first : ds.default_split);
    for (const auto& [name, split] : ds.splits)
      if (name != names.front()) names.push_back(name);
    const auto part = [](const std::vector<int64_t>& ids) {
      return make_npy(std::span<const int64_t>(ids), {static_cast<int64_t>(ids.size())});
    };
    for (size_t k = 0; k < names.size(); ++k) {
      const Split& s = ds.splits.at(names[k]);
      const std::string prefix = k == 0 ? "idx_" : "split" + std::to_string(k) + "_";
      m.push_back({prefix + "train", part(s.train)});
      m.push_back({prefix + "val", part(s.val)});
      m.push_back({prefix + "test", part(s.test)});
    }
    m.push_back({"split_names", make_npy_strings(names, {static_cast<int64_t>(names.size())})});
  }
  return m;
}

void write_npz(const Dataset& dataset, const std::filesystem::path& path, const NpzWriteOptions& options) {
  std::vector<NpzMember> members = dataset_npz_members(dataset);
  for (const NpzMember& extra : options.extra) members.push_back(extra);
  write_npz_arrays(path, members, options.force_zip64);
}

}  // namespace edgeattn::data
