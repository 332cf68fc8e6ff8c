#include "data/zip_archive.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>

#include "edgeattn/core/error.hpp"

namespace edgeattn::data {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kDataDescriptorSig = 0x08074b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kSat32 = 0xFFFFFFFFu;
constexpr uint16_t kSat16 = 0xFFFFu;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndOfCentralDirSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
// Deflate cannot expand more than 1032:1 (a 258-byte match coded in 2 bits).
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint16_t kFlagEncrypted = 1u << 0;
constexpr uint16_t kFlagDataDescriptor = 1u << 3;
constexpr uint16_t kFlagStrongEncryption = 1u << 6;
constexpr uint16_t kFlagMaskedHeaders = 1u << 13;

/// Bounds-checked little-endian reads over the archive; every failure names the archive.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what) : b_(bytes), what_(what) {}

  uint64_t size() const { return b_.size(); }

  /// Throws unless [offset, offset + n) lies inside the archive.
  void need(uint64_t offset, uint64_t n, std::string_view thing) const {
    if (offset > b_.size() || n > b_.size() - offset)
      raise<ParseError>(what_, ": ", thing, " at byte offset ", offset, " (", n,
                        " bytes) extends past the end of the archive (", b_.size(), " bytes)");
  }
  uint16_t u16(uint64_t off) const {
    const auto* p = reinterpret_cast<const unsigned char*>(b_.data() + off);
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
  }
  uint32_t u32(uint64_t off) const {
    const auto* p = reinterpret_cast<const unsigned char*>(b_.data() + off);
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
  }
  uint64_t u64(uint64_t off) const { return uint64_t{u32(off)} | (uint64_t{u32(off + 4)} << 32); }
  std::string_view slice(uint64_t off, uint64_t n) const { return b_.substr(off, n); }

 private:
  std::string_view b_;
  const std::string& what_;
};

/// The ZIP64 extra field's values: each present only when the matching header field is saturated.
struct Zip64Values {
  uint64_t uncompressed = 0, compressed = 0, offset = 0;
};

/// Finds the ZIP64 extra field in [extra, extra + len) and fills the fields whose 32-bit header
/// value is saturated. `local` follows the local-header rule: both sizes are present there
/// whenever either is saturated.
void read_zip64_extra(const Reader& r, const std::string& what, const std::string& member, uint64_t extra,
                      uint64_t len, bool need_u, bool need_c, bool need_off, bool local, Zip64Values& out) {
  if (!need_u && !need_c && !need_off) return;
  uint64_t p = extra;
  const uint64_t end = extra + len;
  while (p < end) {
    if (end - p < 4)
      raise<ParseError>(what, ": member '", member, "': truncated extra field header at byte offset ", p);
    const uint16_t id = r.u16(p);
    const uint16_t size = r.u16(p + 2);
    if (size > end - p - 4)
      raise<ParseError>(what, ": member '", member, "': extra field 0x", std::hex, id, std::dec,
                        " at byte offset ", p, " declares ", size, " bytes but only ", end - p - 4,
                        " remain");
    if (id == kZip64ExtraId) {
      uint64_t q = p + 4;
      const uint64_t q_end = q + size;
      auto take = [&](const char* field) {
        if (q_end - q < 8)
          raise<ParseError>(what, ": member '", member, "': ZIP64 extra field at byte offset ", p, " is ",
                            size, " bytes, too short to hold the ", field);
        const uint64_t v = r.u64(q);
        q += 8;
        return v;
      };
      if (local && (need_u || need_c) && size >= 16) {
        out.uncompressed = take("uncompressed size");
        out.compressed = take("compressed size");
      } else {
        if (need_u) out.uncompressed = take("uncompressed size");
        if (need_c) out.compressed = take("compressed size");
      }
      if (need_off) out.offset = take("local header offset");
      return;
    }
    p += 4 + uint64_t{size};
  }
  raise<ParseError>(what, ": member '", member,
                    "': a size or offset is 0xFFFFFFFF but the header at byte offset ", extra,
                    " has no ZIP64 extra field");
}

std::string method_name(uint16_t m) {
  return m == 0 ? "stored" : m == 8 ? "deflate" : "method " + std::to_string(m);
}

}  // namespace

ZipArchive::ZipArchive(std::string_view bytes, std::string what, const ZipLimits& limits)
    : bytes_(bytes), what_(std::move(what)) {
  const Reader r(bytes_, what_);
  const uint64_t n = r.size();
  if (n < kEndOfCentralDirSize)
    raise<ParseError>(what_, ": ", n,
                      " bytes is too short for a ZIP archive (the end record alone is 22 bytes)");

  // End of central directory: the last record whose comment ends exactly at the end of the file;
  // failing that, the last signature whose record fits (some tools append bytes).
  const uint64_t search_begin = n - kEndOfCentralDirSize > 0xFFFF ? n - kEndOfCentralDirSize - 0xFFFF : 0;
  uint64_t eocd = UINT64_MAX, eocd_loose = UINT64_MAX;
  for (uint64_t p = n - kEndOfCentralDirSize + 1; p-- > search_begin;) {
    if (r.u32(p) != kEndOfCentralDirSig) continue;
    const uint64_t end = p + kEndOfCentralDirSize + r.u16(p + 20);
    if (end == n) {
      eocd = p;
      break;
    }
    if (end < n && eocd_loose == UINT64_MAX) eocd_loose = p;
  }
  if (eocd == UINT64_MAX) eocd = eocd_loose;
  if (eocd == UINT64_MAX)
    raise<ParseError>(
        what_, ": not a ZIP archive: no end-of-central-directory record (signature PK\\5\\6) in the last ",
        n - search_begin, " bytes");

  uint64_t disk = r.u16(eocd + 4), cd_disk = r.u16(eocd + 6);
  uint64_t entries_disk = r.u16(eocd + 8), entries = r.u16(eocd + 10);
  uint64_t cd_size = r.u32(eocd + 12), cd_offset = r.u32(eocd + 16);
  uint64_t cd_limit = eocd;  // the central directory must end before this offset
  if (eocd >= kZip64LocatorSize && r.u32(eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    const uint64_t loc = eocd - kZip64LocatorSize;
    const uint64_t z64 = r.u64(loc + 8);
    if (r.u32(loc + 4) != 0 || r.u32(loc + 16) > 1)
      raise<ParseError>(what_, ": ZIP64 locator at byte offset ", loc,
                        " describes a multi-disk archive (unsupported)");
    r.need(z64, kZip64EndSize, "the ZIP64 end-of-central-directory record");
    if (z64 + kZip64EndSize > loc)
      raise<ParseError>(what_, ": ZIP64 end record at byte offset ", z64,
                        " overlaps its locator at byte offset ", loc);
    if (r.u32(z64) != kZip64EndSig)
      raise<ParseError>(what_, ": expected the ZIP64 end-of-central-directory signature at byte offset ", z64,
                        " (named by the locator at ", loc, "), found 0x", std::hex, r.u32(z64));
    disk = r.u32(z64 + 16);
    cd_disk = r.u32(z64 + 20);
    entries_disk = r.u64(z64 + 24);
    entries = r.u64(z64 + 32);
    cd_size = r.u64(z64 + 40);
    cd_offset = r.u64(z64 + 48);
    cd_limit = z64;
  } else if (entries == kSat16 || cd_size == kSat32 || cd_offset == kSat32) {
    raise<ParseError>(what_, ": the end record at byte offset ", eocd,
                      " has saturated (ZIP64) fields but no ZIP64 locator precedes it");
  }
  if (disk != 0 || cd_disk != 0 || entries_disk != entries)
    raise<ParseError>(what_, ": the end record at byte offset ", eocd,
                      " describes a multi-disk archive (unsupported)");
  if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset)
    raise<ParseError>(what_, ": central directory at byte offset ", cd_offset, " (", cd_size,
                      " bytes) runs past the end record at byte offset ", cd_limit);
  if (entries > limits.max_members)
    raise<ParseError>(what_, ": ", entries, " members, more than the limit of ", limits.max_members);
  if (entries > cd_size / kCentralHeaderSize)
    raise<ParseError>(what_, ": ", entries, " members cannot fit in a central directory of ", cd_size,
                      " bytes");

  // Central directory entries.
  members_.reserve(static_cast<size_t>(entries));
  std::set<std::string> names;  // copies: the members move as the vector grows
  uint64_t total = 0;
  uint64_t p = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < entries; ++i) {
    if (cd_end - p < kCentralHeaderSize)
      raise<ParseError>(what_, ": central directory entry ", i, " at byte offset ", p,
                        " runs past the end of the central directory at ", cd_end);
    if (r.u32(p) != kCentralHeaderSig)
      raise<ParseError>(what_, ": expected central directory entry ", i,
                        " (signature PK\\1\\2) at byte offset ", p, ", found 0x", std::hex, r.u32(p));
    ZipMember m;
    m.flags = r.u16(p + 8);
    m.method = r.u16(p + 10);
    m.crc32 = r.u32(p + 16);
    m.compressed_size = r.u32(p + 20);
    m.uncompressed_size = r.u32(p + 24);
    const uint16_t name_len = r.u16(p + 28), extra_len = r.u16(p + 30), comment_len = r.u16(p + 32);
    const uint16_t start_disk = r.u16(p + 34);
    m.local_header_offset = r.u32(p + 42);
    const uint64_t var_len = uint64_t{name_len} + extra_len + comment_len;
    if (var_len > cd_end - p - kCentralHeaderSize)
      raise<ParseError>(
          what_, ": central directory entry ", i, " at byte offset ", p,
          " has a name, extra field and comment that run past the end of the central directory");
    m.name = std::string(r.slice(p + kCentralHeaderSize, name_len));
    const std::string at =
        "member '" + m.name + "' (central directory entry at byte offset " + std::to_string(p) + ")";
    Zip64Values z;
    read_zip64_extra(r, what_, m.name, p + kCentralHeaderSize + name_len, extra_len,
                     m.uncompressed_size == kSat32, m.compressed_size == kSat32,
                     m.local_header_offset == kSat32, false, z);
    if (m.uncompressed_size == kSat32) m.uncompressed_size = z.uncompressed;
    if (m.compressed_size == kSat32) m.compressed_size = z.compressed;
    if (m.local_header_offset == kSat32) m.local_header_offset = z.offset;
    if (start_disk != 0 && start_disk != kSat16)
      raise<ParseError>(what_, ": ", at, " starts on disk ", start_disk,
                        " (multi-disk archives are unsupported)");
    if (m.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders))
      raise<ParseError>(what_, ": ", at, " is encrypted (flags 0x", std::hex, m.flags, std::dec,
                        "); encrypted archives are not supported");
    if (m.method != 0 && m.method != 8)
      raise<ParseError>(what_, ": ", at, " uses compression method ", m.method,
                        ", expected 0 (stored) or 8 (deflate)");
    if (!names.insert(m.name).second) raise<ParseError>(what_, ": ", at, " repeats a member name");
    if (m.method == 0 && m.compressed_size != m.uncompressed_size)
      raise<ParseError>(what_, ": ", at, " is stored but its compressed size ", m.compressed_size,
                        " differs from its uncompressed size ", m.uncompressed_size);
    if (m.uncompressed_size > limits.max_member_bytes)
      raise<ParseError>(what_, ": ", at, " declares ", m.uncompressed_size,
                        " uncompressed bytes, more than the limit of ", limits.max_member_bytes);
    if (m.method == 8 && m.uncompressed_size / kMaxDeflateRatio > m.compressed_size)
      raise<ParseError>(what_, ": ", at, " declares ", m.uncompressed_size, " bytes from ", m.compressed_size,
                        " compressed bytes, beyond deflate's maximum ratio of ", kMaxDeflateRatio, ":1");
    total += m.uncompressed_size;
    if (total > limits.max_total_bytes)
      raise<ParseError>(what_, ": members up to ", at, " declare ", total,
                        " uncompressed bytes in all, more than the limit of ", limits.max_total_bytes);
    members_.push_back(std::move(m));
    p += kCentralHeaderSize + var_len;
  }
  if (p != cd_end)
    raise<ParseError>(what_, ": the central directory at byte offset ", cd_offset, " is declared as ",
                      cd_size, " bytes but its ", entries, " entries end at byte offset ", p);

  // Local headers: must agree with the central directory; members may not overlap.
  std::vector<std::pair<uint64_t, uint64_t>> extents;  // [local header, end of data/descriptor)
  extents.reserve(members_.size());
  for (ZipMember& m : members_) {
    const uint64_t lh = m.local_header_offset;
    const std::string at = "member '" + m.name + "' (local header at byte offset " + std::to_string(lh) + ")";
    r.need(lh, kLocalHeaderSize, "the local header of member '" + m.name + "'");
    if (r.u32(lh) != kLocalHeaderSig)
      raise<ParseError>(what_, ": ", at, ": expected the local header signature PK\\3\\4, found 0x", std::hex,
                        r.u32(lh));
    const uint16_t flags = r.u16(lh + 6), method = r.u16(lh + 8);
    const uint32_t crc = r.u32(lh + 14);
    uint64_t csize = r.u32(lh + 18), usize = r.u32(lh + 22);
    const uint16_t name_len = r.u16(lh + 26), extra_len = r.u16(lh + 28);
    r.need(lh + kLocalHeaderSize, uint64_t{name_len} + extra_len, "the name and extra field of " + at);
    if (r.slice(lh + kLocalHeaderSize, name_len) != m.name)
      raise<ParseError>(what_, ": ", at, ": the local header names '",
                        r.slice(lh + kLocalHeaderSize, name_len), "', the central directory '", m.name, "'");
    if (method != m.method)
      raise<ParseError>(what_, ": ", at, ": the local header says ", method_name(method),
                        ", the central directory ", method_name(m.method));
    if ((flags ^ m.flags) & (kFlagEncrypted | kFlagDataDescriptor))
      raise<ParseError>(what_, ": ", at, ": local flags 0x", std::hex, flags,
                        " disagree with central flags 0x", m.flags);
    Zip64Values z;
    read_zip64_extra(r, what_, m.name, lh + kLocalHeaderSize + name_len, extra_len, usize == kSat32,
                     csize == kSat32, false, true, z);
    if (usize == kSat32 || csize == kSat32) {
      usize = z.uncompressed;
      csize = z.compressed;
    }
    const bool deferred = (flags & kFlagDataDescriptor) != 0;
    // With a data descriptor the local fields may be zero; whatever is there must still agree.
    auto check = [&](const char* field, uint64_t local, uint64_t central) {
      if (local != central && !(deferred && local == 0))
        raise<ParseError>(what_, ": ", at, ": the local header's ", field, " ", local,
                          " disagrees with the central directory's ", central);
    };
    check("CRC-32", crc, m.crc32);
    check("compressed size", csize, m.compressed_size);
    check("uncompressed size", usize, m.uncompressed_size);

    m.data_offset = lh + kLocalHeaderSize + name_len + extra_len;
    r.need(m.data_offset, m.compressed_size, "the data of " + at);
    uint64_t end = m.data_offset + m.compressed_size;
    if (deferred) {
      // Data descriptor: [signature] crc32, then 4- or 8-byte sizes (8 for ZIP64 members).
      uint64_t d = end;
      if (r.size() - d >= 4 && r.u32(d) == kDataDescriptorSig) d += 4;
      r.need(d, 12, "the data descriptor of " + at);
      if (r.u32(d) != m.crc32)
        raise<ParseError>(what_, ": ", at, ": the data descriptor at byte offset ", d, " has CRC-32 0x",
                          std::hex, r.u32(d), ", the central directory 0x", m.crc32);
      if (r.size() - d >= 20 && r.u64(d + 4) == m.compressed_size && r.u64(d + 12) == m.uncompressed_size) {
        end = d + 20;
      } else if (r.u32(d + 4) == m.compressed_size && r.u32(d + 8) == m.uncompressed_size) {
        end = d + 12;
      } else {
        raise<ParseError>(what_, ": ", at, ": the sizes in the data descriptor at byte offset ", d,
                          " disagree with the central directory's ", m.compressed_size, " and ",
                          m.uncompressed_size);
      }
    }
    extents.emplace_back(lh, end);
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 0; i < extents.size(); ++i) {
    const uint64_t next = i + 1 < extents.size() ? extents[i + 1].first : cd_offset;
    if (extents[i].second > next)
      raise<ParseError>(what_, ": the member whose local header is at byte offset ", extents[i].first,
                        " extends to byte offset ", extents[i].second, ", overlapping ",
                        i + 1 < extents.size() ? "the next member" : "the central directory",
                        " at byte offset ", next);
  }
}

namespace {

void check_crc(const ZipMember& m, std::string_view data, const std::string& at) {
  const uint32_t crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<z_size_t>(data.size())));
  if (crc != m.crc32) {
    std::ostringstream os;
    os << at << ": CRC-32 mismatch: the data gives 0x" << std::hex << crc << ", the archive records 0x"
       << m.crc32;
    throw ParseError(os.str());
  }
}

}  // namespace

std::string ZipArchive::extract(const ZipMember& m) const {
  const std::string at =
      what_ + ": member '" + m.name + "' (data at byte offset " + std::to_string(m.data_offset) + ")";
  const std::string_view in = bytes_.substr(m.data_offset, m.compressed_size);
  std::string out;
  if (m.method == 0) {
    out.assign(in);
  } else {
    out.assign(m.uncompressed_size, '\0');
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) raise<IoError>(at, ": zlib could not start inflating");
    struct End {
      z_stream* s;
      ~End() { inflateEnd(s); }
    } end_guard{&zs};
    constexpr uint64_t kChunk = 1u << 30;
    uint64_t in_fed = 0;
    unsigned char probe = 0;  // one byte past the declared size, to detect a member that inflates to more
    for (;;) {
      if (zs.avail_in == 0 && in_fed < in.size()) {
        const uint64_t c = std::min<uint64_t>(kChunk, in.size() - in_fed);
        zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_fed));
        zs.avail_in = static_cast<uInt>(c);
        in_fed += c;
      }
      if (zs.avail_out == 0) {
        if (zs.total_out < m.uncompressed_size) {
          const uint64_t c = std::min<uint64_t>(kChunk, m.uncompressed_size - zs.total_out);
          zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
          zs.avail_out = static_cast<uInt>(c);
        } else {
          zs.next_out = &probe;
          zs.avail_out = 1;
        }
      }
      const int ret = inflate(&zs, Z_NO_FLUSH);
      if (zs.total_out > m.uncompressed_size)
        raise<ParseError>(at, ": inflates to more than the ", m.uncompressed_size,
                          " bytes the central directory declares");
      if (ret == Z_STREAM_END) break;
      if (ret == Z_OK) continue;
      if (ret == Z_BUF_ERROR && zs.avail_in == 0 && in_fed == in.size())
        raise<ParseError>(at, ": the deflate stream is truncated: its ", m.compressed_size,
                          " compressed bytes end before the stream does (", zs.total_out, " of ",
                          m.uncompressed_size, " bytes inflated)");
      if (ret == Z_MEM_ERROR) raise<IoError>(at, ": zlib ran out of memory");
      raise<ParseError>(at, ": corrupt deflate data near byte offset ", m.data_offset + zs.total_in,
                        " (zlib: ", zs.msg ? zs.msg : "error " + std::to_string(ret), ")");
    }
    if (zs.total_out != m.uncompressed_size)
      raise<ParseError>(at, ": inflates to ", zs.total_out, " bytes, the central directory declares ",
                        m.uncompressed_size);
    if (zs.total_in != m.compressed_size)
      raise<ParseError>(at, ": the deflate stream ends after ", zs.total_in, " of its ", m.compressed_size,
                        " compressed bytes");
  }
  check_crc(m, out, at);
  return out;
}

std::optional<std::string_view> ZipArchive::stored_view(const ZipMember& m) const {
  if (m.method != 0) return std::nullopt;
  const std::string_view in = bytes_.substr(m.data_offset, m.compressed_size);
  check_crc(m, in,
            what_ + ": member '" + m.name + "' (data at byte offset " + std::to_string(m.data_offset) + ")");
  return in;
}

}  // namespace edgeattn::data
