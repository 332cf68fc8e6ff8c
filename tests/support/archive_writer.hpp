// Test support: writers for the binary containers the readers consume, so tests can build exact
// fixtures (and corrupt them byte by byte): .npy arrays, ZIP archives (stored or deflated members,
// ZIP64 extra fields and end records, data descriptors), ustar archives and gzip streams.
//
// Example:
//   std::string npy = edgeattn::testing::npy_bytes("<i8", {3}, edgeattn::testing::raw<int64_t>({1, 2, 3}));
//   std::string npz = edgeattn::testing::make_zip({{.name = "x.npy", .data = npy, .deflate = true}});
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace edgeattn::testing {

/// The bytes of `values` as stored in memory (little-endian on our hosts).
template <class T>
std::string raw(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

/// UTF-32LE, NUL-padded to `width` characters per element (numpy's '<U<width>'); ASCII input.
inline std::string utf32(const std::vector<std::string>& values, size_t width) {
  std::string s;
  for (const auto& v : values) {
    for (size_t k = 0; k < width; ++k) {
      const uint32_t c = k < v.size() ? static_cast<unsigned char>(v[k]) : 0;
      s.append(reinterpret_cast<const char*>(&c), 4);
    }
  }
  return s;
}

/// An .npy file as numpy writes it: header padded with spaces and '\n' to a multiple of 64.
inline std::string npy_bytes(std::string_view descr, const std::vector<int64_t>& shape, std::string_view data,
                             bool fortran = false, int major = 1) {
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) header += (i ? ", " : "") + std::to_string(shape[i]);
  header += shape.size() == 1 ? ",), }" : "), }";
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(header.size());
  out.append(reinterpret_cast<const char*>(&len), major == 1 ? 2 : 4);
  return out + header + std::string(data);
}

/// Raw deflate (no zlib/gzip wrapper), as ZIP method 8 stores it.
inline std::string deflate_raw(std::string_view data, int level = 6) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&zs, data.size()) + 16, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (ret != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  return out;
}

/// A gzip stream (as `gzip` writes .gz files).
inline std::string gzip(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (ret != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  return out;
}

struct ZipEntry {
  std::string name;
  std::string data;
  bool deflate = false;        ///< method 8 instead of 0
  bool local_zip64 = false;    ///< local header sizes 0xFFFFFFFF + ZIP64 extra (numpy's force_zip64)
  bool central_zip64 = false;  ///< central sizes and offset 0xFFFFFFFF + ZIP64 extra
  bool descriptor = false;     ///< flag bit 3: zero CRC/sizes locally, data descriptor after the data
};

namespace detail {
inline void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xFF);
  s += static_cast<char>((v >> 8) & 0xFF);
}
inline void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xFFFF);
  put16(s, v >> 16);
}
inline void put64(std::string& s, uint64_t v) {
  put32(s, static_cast<uint32_t>(v));
  put32(s, static_cast<uint32_t>(v >> 32));
}
}  // namespace detail

/// A ZIP archive of `entries`; `zip64_end` writes a ZIP64 end record and locator before the
/// classic end record (whose fields are then saturated, as Python's zipfile does).
inline std::string make_zip(const std::vector<ZipEntry>& entries, bool zip64_end = false) {
  using detail::put16;
  using detail::put32;
  using detail::put64;
  std::string out, central;
  for (const ZipEntry& e : entries) {
    const uint32_t crc =
        static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(e.data.data()), e.data.size()));
    const std::string comp = e.deflate ? deflate_raw(e.data) : e.data;
    const uint64_t offset = out.size();
    const uint16_t version = (e.local_zip64 || e.central_zip64) ? 45 : 20;
    const uint16_t flags = e.descriptor ? 8 : 0;
    const uint16_t method = e.deflate ? 8 : 0;
    // local header
    put32(out, 0x04034b50);
    put16(out, version);
    put16(out, flags);
    put16(out, method);
    put16(out, 0);
    put16(out, 0x21);
    put32(out, e.descriptor ? 0 : crc);
    if (e.local_zip64) {
      put32(out, 0xFFFFFFFF);
      put32(out, 0xFFFFFFFF);
    } else {
      put32(out, e.descriptor ? 0 : static_cast<uint32_t>(comp.size()));
      put32(out, e.descriptor ? 0 : static_cast<uint32_t>(e.data.size()));
    }
    put16(out, static_cast<uint32_t>(e.name.size()));
    put16(out, e.local_zip64 ? 20 : 0);
    out += e.name;
    if (e.local_zip64) {
      put16(out, 1);
      put16(out, 16);
      put64(out, e.descriptor ? 0 : e.data.size());
      put64(out, e.descriptor ? 0 : comp.size());
    }
    out += comp;
    if (e.descriptor) {
      put32(out, 0x08074b50);
      put32(out, crc);
      if (e.local_zip64) {
        put64(out, comp.size());
        put64(out, e.data.size());
      } else {
        put32(out, static_cast<uint32_t>(comp.size()));
        put32(out, static_cast<uint32_t>(e.data.size()));
      }
    }
    // central directory entry
    put32(central, 0x02014b50);
    put16(central, version);
    put16(central, version);
    put16(central, flags);
    put16(central, method);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, e.central_zip64 ? 0xFFFFFFFF : static_cast<uint32_t>(comp.size()));
    put32(central, e.central_zip64 ? 0xFFFFFFFF : static_cast<uint32_t>(e.data.size()));
    put16(central, static_cast<uint32_t>(e.name.size()));
    put16(central, e.central_zip64 ? 28 : 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, e.central_zip64 ? 0xFFFFFFFF : static_cast<uint32_t>(offset));
    central += e.name;
    if (e.central_zip64) {
      put16(central, 1);
      put16(central, 24);
      put64(central, e.data.size());
      put64(central, comp.size());
      put64(central, offset);
    }
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (zip64_end) {
    const uint64_t z64 = out.size();
    put32(out, 0x06064b50);
    put64(out, 44);
    put16(out, 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, entries.size());
    put64(out, entries.size());
    put64(out, central.size());
    put64(out, cd_offset);
    put32(out, 0x07064b50);
    put32(out, 0);
    put64(out, z64);
    put32(out, 1);
  }
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, zip64_end ? 0xFFFF : static_cast<uint32_t>(entries.size()));
  put16(out, zip64_end ? 0xFFFF : static_cast<uint32_t>(entries.size()));
  put32(out, zip64_end ? 0xFFFFFFFF : static_cast<uint32_t>(central.size()));
  put32(out, zip64_end ? 0xFFFFFFFF : static_cast<uint32_t>(cd_offset));
  put16(out, 0);
  return out;
}

/// One member of make_tar: a regular file, or with `typeflag` '2' a symbolic link to `data`.
struct TarEntry {
  std::string name;
  std::string data;
  char typeflag = '0';
};

/// A POSIX ustar archive (names up to 100 bytes), as `tar cf` writes it; gzip it for a .tar.gz.
inline std::string make_tar(const std::vector<TarEntry>& entries) {
  std::string out;
  for (const TarEntry& e : entries) {
    if (e.name.size() > 100) throw std::invalid_argument("make_tar: name longer than 100 bytes");
    std::string h(512, '\0');
    // Fields are written in place (not std::string::replace, whose inlined copy GCC 12 flags
    // with false -Warray-bounds / -Wstringop-overflow warnings).
    auto put = [&](size_t at, std::string_view s) {
      std::copy(s.begin(), s.end(), h.begin() + static_cast<std::ptrdiff_t>(at));
    };
    auto octal = [&](size_t at, size_t width, uint64_t v) {
      std::string digits(width - 1, '0');
      for (size_t k = width - 1; k-- > 0; v >>= 3) digits[k] = static_cast<char>('0' + (v & 7));
      put(at, digits);
    };
    put(0, e.name);
    octal(100, 8, 0644);
    octal(108, 8, 0);
    octal(116, 8, 0);
    const bool link = e.typeflag == '2';
    octal(124, 12, link ? 0 : e.data.size());
    octal(136, 12, 1700000000);
    h[156] = e.typeflag;
    if (link) {
      if (e.data.size() > 100) throw std::invalid_argument("make_tar: link target longer than 100 bytes");
      put(157, e.data);
    }
    put(257, std::string_view("ustar\0", 6));
    put(263, "00");
    put(148, "        ");
    uint32_t sum = 0;
    for (unsigned char c : h) sum += c;
    octal(148, 7, sum);
    h[155] = ' ';
    out += h;
    if (!link) {
      out += e.data;
      out.append((512 - e.data.size() % 512) % 512, '\0');
    }
  }
  out.append(1024, '\0');
  return out;
}

}  // namespace edgeattn::testing
