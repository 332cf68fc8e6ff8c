// Streaming .npz members: the ZIP directory from data/zip_archive.hpp, the member's bytes inflated
// with zlib straight from the memory map into the caller's buffer, the .npy header parsed from the
// first bytes (data/npy.hpp's parse_npy_header), CRC-32 over everything delivered.
#include "edgeattn/data/npz_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/mapped_file.hpp"
#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;

namespace {

// Streams never hold a member, so the archive's size bounds are the only ones that matter here.
constexpr ZipLimits kStreamLimits{
    .max_member_bytes = uint64_t{1} << 44, .max_total_bytes = uint64_t{1} << 46, .max_members = 1u << 20};
// Compressed pages already consumed are handed back to the OS in steps of this many bytes.
constexpr uint64_t kReleaseStep = uint64_t{64} << 20;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int64_t NpzMemberInfo::numel() const {
  for (const int64_t e : shape)
    if (e == 0) return 0;
  int64_t n = 1;
  for (const int64_t e : shape) n *= e;
  return n;
}

struct NpyStream::Impl {
  std::shared_ptr<const detail::MappedFile> file;
  std::string what;  // "<archive>:<member>"
  ZipMember member;
  NpzMemberInfo info;
  uint64_t data_start = 0;  // the .npy header's length: element bytes start here
  uint64_t raw_pos = 0;     // member bytes produced so far, header included
  uint64_t in_pos = 0;      // compressed bytes consumed so far
  uint64_t released = 0;    // compressed bytes handed back to the OS
  uint32_t crc = 0;
  // The inflate state, released by its own destructor: also when read_header throws in Impl's
  // constructor (a member's destructor runs then; Impl's would not).
  struct Inflater {
    z_stream z{};
    bool open = false;
    ~Inflater() {
      if (open) inflateEnd(&z);
    }
  } inflater;
  z_stream& z = inflater.z;

  Impl(std::shared_ptr<const detail::MappedFile> f, const ZipMember& m, const std::string& archive)
      : file(std::move(f)), what(archive + ":" + m.name), member(m) {
    crc = static_cast<uint32_t>(crc32_z(0, nullptr, 0));
    if (member.method == 8) {
      if (inflateInit2(&z, -MAX_WBITS) != Z_OK) raise<IoError>(what, ": zlib could not start inflating");
      inflater.open = true;
    }
    read_header();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  std::string_view compressed() const {
    return file->bytes().substr(static_cast<size_t>(member.data_offset),
                                static_cast<size_t>(member.compressed_size));
  }

  // The next min(n, bytes left) bytes of the member into out; returns how many.
  size_t raw_read(std::byte* out, size_t n) {
    const uint64_t left = member.uncompressed_size - raw_pos;
    n = static_cast<size_t>(std::min<uint64_t>(n, left));
    if (n == 0) return 0;
    if (member.method == 0) {
      std::memcpy(out, compressed().data() + raw_pos, n);
      in_pos = raw_pos + n;
    } else {
      inflate_into(out, n);
    }
    crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(out), n));
    raw_pos += n;
    release_consumed();
    if (raw_pos == member.uncompressed_size) finish();
    return n;
  }

  // Hands zlib the next stretch of compressed input (at most 1 GiB: avail_in is 32-bit) once it
  // has used up the last.
  void feed(std::string_view in) {
    if (z.avail_in != 0 || in_pos >= in.size()) return;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
    z.avail_in = static_cast<uInt>(std::min<uint64_t>(in.size() - in_pos, uint64_t{1} << 30));
  }

  void inflate_into(std::byte* out, size_t n) {
    const std::string_view in = compressed();
    size_t done = 0;
    while (done < n) {
      feed(in);
      const auto chunk = static_cast<uInt>(std::min<size_t>(n - done, size_t{1} << 30));
      z.next_out = reinterpret_cast<Bytef*>(out + done);
      z.avail_out = chunk;
      const uInt before_in = z.avail_in;
      const int rc = inflate(&z, Z_NO_FLUSH);
      in_pos += before_in - z.avail_in;
      const size_t produced = chunk - z.avail_out;
      done += produced;
      if (rc == Z_STREAM_END && done < n)
        raise<ParseError>(what, ": the deflated data ends after ", raw_pos + done,
                          " bytes, but the archive declares ", member.uncompressed_size);
      if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR)
        raise<ParseError>(what, ": corrupt deflate data after ", raw_pos + done,
                          " bytes (zlib: ", z.msg ? z.msg : "error", ")");
      if (rc == Z_BUF_ERROR && produced == 0)
        raise<ParseError>(what, ": the compressed data (", in.size(), " bytes) ends after ", raw_pos + done,
                          " of ", member.uncompressed_size, " bytes");
    }
  }

  void release_consumed() {
    if (in_pos - released < kReleaseStep) return;
    file->release(compressed().substr(static_cast<size_t>(released), static_cast<size_t>(in_pos - released)));
    released = in_pos;
  }

  // At the member's end: nothing more may inflate, and the CRC must match the directory's.
  void finish() {
    if (member.method == 8) {
      unsigned char probe = 0;
      feed(compressed());
      z.next_out = &probe;
      z.avail_out = 1;
      const int rc = inflate(&z, Z_FINISH);
      if (rc != Z_STREAM_END || z.avail_out == 0)
        raise<ParseError>(what, ": the member inflates to more than the ", member.uncompressed_size,
                          " bytes the archive declares");
    }
    if (crc != member.crc32)
      raise<ParseError>(what, ": CRC-32 mismatch (computed ", crc, ", the archive says ", member.crc32,
                        "): the member is corrupt");
  }

  void read_header() {
    std::string head(std::min<uint64_t>(12, member.uncompressed_size), '\0');
    raw_read(reinterpret_cast<std::byte*>(head.data()), head.size());
    if (head.size() >= 10 && head.compare(0, 6, "\x93NUMPY") == 0) {
      const auto* u = reinterpret_cast<const unsigned char*>(head.data());
      const uint64_t header_len =
          head[6] >= 2
              ? (uint64_t{u[8]} | uint64_t{u[9]} << 8 | uint64_t{u[10]} << 16 | uint64_t{u[11]} << 24)
              : (uint64_t{u[8]} | uint64_t{u[9]} << 8);
      const uint64_t total = (head[6] >= 2 ? 12 : 10) + header_len;
      if (total > member.uncompressed_size)
        raise<ParseError>(what, ": the NPY header declares ", header_len, " bytes, but the member holds ",
                          member.uncompressed_size);
      if (total > (uint64_t{1} << 26)) raise<ParseError>(what, ": an NPY header of ", header_len, " bytes");
      const size_t have = head.size();
      head.resize(static_cast<size_t>(std::max<uint64_t>(total, have)));
      raw_read(reinterpret_cast<std::byte*>(head.data() + have), head.size() - have);
    }
    NpyHeader h = parse_npy_header(head, what);
    if (h.fortran_order && h.array.shape.size() > 1)
      raise<ParseError>(
          what, ": fortran_order arrays cannot be streamed in C order (load the member with read_npz)");
    if (h.big_endian)
      raise<ParseError>(what, ": big-endian ('", h.array.dtype.descr,
                        "') arrays are not streamed (load the member with read_npz)");
    if (h.data_offset > head.size() || h.data_bytes != member.uncompressed_size - h.data_offset)
      raise<ParseError>(
          what, ": the NPY header's shape needs ", h.data_bytes, " element bytes, but the member has ",
          member.uncompressed_size - std::min<uint64_t>(h.data_offset, member.uncompressed_size));
    data_start = h.data_offset;
    info.key = member.name.substr(0, member.name.size() - 4);
    info.dtype = h.array.dtype;
    info.shape = h.array.shape;
    info.data_bytes = h.data_bytes;
    info.stored_bytes = member.compressed_size;
    info.compressed = member.method == 8;
  }
};

namespace {

struct OpenArchive {
  std::shared_ptr<const detail::MappedFile> file;
  std::unique_ptr<ZipArchive> zip;
};

OpenArchive open_archive(const fs::path& path) {
  if (!fs::exists(path)) raise<IoError>(path.string(), ": no such file");
  OpenArchive a;
  a.file = std::make_shared<const detail::MappedFile>(detail::MappedFile::map_or_read(path));
  a.zip = std::make_unique<ZipArchive>(a.file->bytes(), path.string(), kStreamLimits);
  for (const ZipMember& m : a.zip->members())
    if (!ends_with(m.name, ".npy"))
      raise<ParseError>(path.string(), ": member '", m.name,
                        "' is not an .npy array (an .npz holds only .npy members)");
  return a;
}

}  // namespace

std::vector<NpzMemberInfo> npz_catalog(const fs::path& path) {
  const OpenArchive a = open_archive(path);
  std::vector<NpzMemberInfo> out;
  for (const ZipMember& m : a.zip->members()) out.push_back(NpyStream::Impl(a.file, m, path.string()).info);
  return out;
}

NpyStream::NpyStream(const fs::path& path, const std::string& key) {
  const OpenArchive a = open_archive(path);
  std::string keys;
  for (const ZipMember& m : a.zip->members()) {
    if (m.name == key + ".npy") {
      impl_ = std::make_unique<Impl>(a.file, m, path.string());
      return;
    }
    keys += (keys.empty() ? "" : ", ") + m.name.substr(0, m.name.size() - 4);
  }
  raise<InvalidArgument>(path.string(), ": no member '", key,
                         "' (the archive holds: ", keys.empty() ? "nothing" : keys, ")");
}

NpyStream::~NpyStream() = default;
NpyStream::NpyStream(NpyStream&&) noexcept = default;
NpyStream& NpyStream::operator=(NpyStream&&) noexcept = default;

const NpzMemberInfo& NpyStream::info() const { return impl_->info; }
uint64_t NpyStream::position() const { return impl_->raw_pos - impl_->data_start; }
uint64_t NpyStream::remaining() const { return impl_->member.uncompressed_size - impl_->raw_pos; }

size_t NpyStream::read(std::span<std::byte> out) { return impl_->raw_read(out.data(), out.size()); }

void NpyStream::read_exact(std::span<std::byte> out) {
  if (out.size() > remaining())
    raise<ParseError>(impl_->what, ": asked for ", out.size(), " bytes at element byte ", position(),
                      ", but only ", remaining(), " remain");
  impl_->raw_read(out.data(), out.size());
}

void NpyStream::skip(uint64_t bytes) {
  if (bytes > remaining())
    raise<ParseError>(impl_->what, ": cannot skip ", bytes, " bytes at element byte ", position(), ": only ",
                      remaining(), " remain");
  std::vector<std::byte> sink(static_cast<size_t>(std::min<uint64_t>(bytes, uint64_t{1} << 20)));
  while (bytes > 0) {
    const size_t n =
        impl_->raw_read(sink.data(), static_cast<size_t>(std::min<uint64_t>(bytes, sink.size())));
    bytes -= n;
  }
}

}  // namespace edgeattn::data
