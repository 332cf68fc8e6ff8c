#include "edgeattn/data/mapped_features.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mapped_file.hpp"
#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/data/npy.hpp"

namespace edgeattn::data {

namespace {

constexpr std::string_view kNpyMagic("\x93NUMPY", 6);
constexpr std::string_view kZipMagic("PK\x03\x04", 4);
constexpr std::string_view kGzipMagic("\x1f\x8b", 2);

// The float32 [N, F] array whose .npy bytes start at `start` of the mapped file, as a Tensor over
// the mapping (which the tensor keeps alive).
Features features_at(const std::shared_ptr<detail::MappedFile>& file, uint64_t start, uint64_t end,
                     const std::string& what) {
  const std::string_view bytes = file->bytes().substr(start, end - start);
  // The header alone: parse_npy_header reads the first bytes only, never the data.
  const NpyHeader h = parse_npy_header(bytes.substr(0, std::min<size_t>(bytes.size(), 1 << 20)), what);
  const NpyArray& a = h.array;
  const std::string convert =
      "; convert it with numpy: np.save(\"x.npy\", np.ascontiguousarray(a, dtype=\"<f4\"))";
  if (a.dtype.kind != 'f' || a.dtype.itemsize != 4 || h.big_endian)
    raise<ParseError>(what, ": field 'descr' is '", a.dtype.descr,
                      "': mapped features must be stored as little-endian float32 ('<f4')", convert);
  if (h.fortran_order)
    raise<ParseError>(what, ": field 'fortran_order' is True: mapped features must be in C order", convert);
  if (a.rank() != 2)
    raise<ParseError>(what, ": field 'shape' has ", a.rank(),
                      " dimensions: features are [num_nodes, num_features]");
  if (h.data_bytes > bytes.size() - h.data_offset)
    raise<ParseError>(what, ": the data of shape (", a.shape[0], ", ", a.shape[1], ") needs ", h.data_bytes,
                      " bytes from byte offset ", start + h.data_offset, " but the file holds only ",
                      bytes.size() - h.data_offset, " (truncated?)");
  const uint64_t offset = start + h.data_offset;
  if (offset % alignof(float) != 0)
    raise<ParseError>(
        what, ": the data starts at byte offset ", offset,
        ", not a multiple of 4, so floats cannot be read in place; save the array as its own .npy "
        "file (np.save) or rewrite the archive with edgeattn (write_npz aligns members)");
  char* data = file->copy_on_write_data() + offset;
  Tensor t = Tensor::external({a.shape[0], a.shape[1]},
                              std::shared_ptr<float[]>(file, reinterpret_cast<float*>(data)));
  return Features::mapped(std::move(t), what);
}

}  // namespace

Features map_features(const std::filesystem::path& path, const std::string& member) {
  auto file = std::make_shared<detail::MappedFile>(detail::MappedFile::map_copy_on_write(path));
  const std::string_view bytes = file->bytes();
  const std::string name = path.string();
  if (bytes.starts_with(kNpyMagic)) {
    if (!member.empty())
      raise<InvalidArgument>("map_features: member '", member, "' given, but ", name,
                             " is an .npy file (members belong to .npz archives)");
    return features_at(file, 0, bytes.size(), name);
  }
  if (bytes.starts_with(kGzipMagic))
    raise<ParseError>(name,
                      ": gzip-compressed: compressed data cannot be mapped in place; decompress it first");
  if (!bytes.starts_with(kZipMagic))
    raise<ParseError>(name,
                      ": neither an .npy file (magic \\x93NUMPY) nor an .npz archive (magic PK\\x03\\x04) "
                      "at byte offset 0");
  const std::string key = member.empty() ? "attr_matrix" : member;
  // Mapping expands nothing, so the zip-bomb limits on unpacked sizes do not apply.
  const ZipArchive zip(bytes, name, {.max_member_bytes = UINT64_MAX, .max_total_bytes = UINT64_MAX});
  std::string keys;
  for (const ZipMember& m : zip.members()) {
    if (m.name != key + ".npy") {
      keys += (keys.empty() ? "" : ", ") + m.name;
      continue;
    }
    const std::string what = name + ":" + m.name;
    if (m.method != 0)
      raise<ParseError>(
          what, ": the member is compressed (method ", m.method,
          ", np.savez_compressed): only stored members can be mapped; write it with np.savez or "
          "np.save");
    return features_at(file, m.data_offset, m.data_offset + m.uncompressed_size, what);
  }
  raise<ParseError>(name, ": no member '", key, ".npy' (the archive holds: ", keys.empty() ? "nothing" : keys,
                    ")");
}

void prefetch_rows(const Features& features, std::span<const int64_t> rows) {
  if (!features.is_mapped() || rows.empty()) return;
  const Tensor& x = features.dense();
  const int64_t n = x.dim(0);
  const auto row_bytes = static_cast<uintptr_t>(x.dim(1)) * sizeof(float);
  if (row_bytes == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(x.data());
  // Page ranges [first, last) of the rows, sorted and merged: one madvise per run of pages.
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  ranges.reserve(rows.size());
  for (const int64_t r : rows) {
    if (r < 0 || r >= n)
      raise<InvalidArgument>("prefetch_rows: row ", r, " of ", features.mapped_from(),
                             " is out of range [0, ", n, ")");
    const uintptr_t lo = base + static_cast<uintptr_t>(r) * row_bytes;
    ranges.emplace_back(lo / page * page, (lo + row_bytes + page - 1) / page * page);
  }
  std::sort(ranges.begin(), ranges.end());
  uintptr_t first = ranges.front().first, last = ranges.front().second;
  auto advise = [&] { ::madvise(reinterpret_cast<void*>(first), last - first, MADV_WILLNEED); };  // a hint
  for (const auto& [lo, hi] : ranges) {
    if (lo > last) {
      advise();
      first = lo;
    }
    last = std::max(last, hi);
  }
  advise();
}

}  // namespace edgeattn::data
