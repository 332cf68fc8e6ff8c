#include "edgeattn/data/npy.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

namespace edgeattn::data {
namespace {

static_assert(std::endian::native == std::endian::little, "the npy reader assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";

/// Strict recursive-descent parser for the header's Python dict literal.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what, size_t base)
      : s_(text), what_(what), base_(base) {}

  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    raise<ParseError>(what_, ": NPY header, byte offset ", base_ + pos_, ": ", std::forward<Args>(args)...);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c, std::string_view context) {
    if (!peek(c)) fail("expected '", c, "' ", context, ", found ", here());
    ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= s_.size();
  }
  std::string here() const {
    if (pos_ >= s_.size()) return "the end of the header";
    std::string quoted(1, '\'');  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on a + chain
    quoted.append(s_.substr(pos_, std::min<size_t>(20, s_.size() - pos_)));
    quoted += '\'';
    return quoted;
  }

  /// 'text' or "text" without escapes (numpy never writes any in these headers).
  std::string_view read_string(std::string_view what) {
    skip_ws();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      fail("expected ", what, " (a quoted string), found ", here());
    const char quote = s_[pos_++];
    const size_t b = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') fail("escape sequences are not supported in ", what);
      ++pos_;
    }
    if (pos_ >= s_.size()) fail("unterminated string in ", what);
    return s_.substr(b, pos_++ - b);
  }
  bool read_bool(std::string_view what) {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False for ", what, ", found ", here());
  }
  int64_t read_extent() {
    skip_ws();
    const size_t b = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const int d = s_[pos_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail("shape extent is too large");
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ == b) fail("expected a non-negative integer shape extent, found ", here());
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long
    return v;
  }
  /// (), (n,), (a, b), (a, b,) ...
  std::vector<int64_t> read_shape() {
    expect('(', "to open the shape tuple");
    std::vector<int64_t> shape;
    if (peek(')')) {
      ++pos_;
      return shape;
    }
    for (;;) {
      shape.push_back(read_extent());
      if (shape.size() > 32) fail("shape has more than 32 dimensions");
      if (peek(')')) {
        ++pos_;
        break;
      }
      expect(',', "or ')' in the shape tuple");
      if (peek(')')) {
        ++pos_;
        break;
      }
    }
    return shape;
  }

 private:
  std::string_view s_;
  const std::string& what_;
  size_t base_;
  size_t pos_ = 0;
};

NpyDtype parse_descr(std::string_view d, const HeaderParser& h, bool& big_endian) {
  NpyDtype t;
  t.descr = std::string(d);
  if (d.size() < 2) h.fail("descr '", d, "' is not a dtype (expected e.g. '<f4')");
  const char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    h.fail("descr '", d, "' has byte order '", order, "', expected '<', '>' or '|'");
  char kind = d[1];
  const std::string_view digits = d.substr(2);
  if (kind == 'O')
    h.fail("descr '", d,
           "' holds pickled Python objects, which edgeattn never unpickles; "
           "save the array with a numeric or fixed-width string dtype (e.g. '<U20')");
  if (kind == 'a') kind = 'S';  // old alias
  int64_t n = 0;
  if (digits.empty()) h.fail("descr '", d, "' has no item size");
  for (const char c : digits) {
    if (c < '0' || c > '9')
      h.fail("descr '", d, "' is not a supported dtype (found '", c, "' in the item size)");
    if (n > (int64_t{1} << 30)) h.fail("descr '", d, "' has an item size that is too large");
    n = n * 10 + (c - '0');
  }
  t.kind = kind;
  switch (kind) {
    case 'f':
      if (n != 2 && n != 4 && n != 8)
        h.fail("descr '", d, "': only float16 ('<f2'), float32 ('<f4') and float64 ('<f8') are supported");
      t.itemsize = n;
      break;
    case 'i':
    case 'u':
      if (n != 1 && n != 2 && n != 4 && n != 8)
        h.fail("descr '", d, "': integer item size must be 1, 2, 4 or 8");
      t.itemsize = n;
      break;
    case 'b':
      if (n != 1) h.fail("descr '", d, "': bool item size must be 1");
      t.itemsize = 1;
      break;
    case 'U':
      if (n < 1 || n > (int64_t{1} << 24)) h.fail("descr '", d, "': unicode width must be in [1, 2^24]");
      t.itemsize = 4 * n;
      break;
    case 'S':
      if (n < 1 || n > (int64_t{1} << 28)) h.fail("descr '", d, "': byte-string width must be in [1, 2^28]");
      t.itemsize = n;
      break;
    default:
      h.fail("descr '", d,
             "' is not a supported dtype (supported: <f2 <f4 <f8 <i1..<i8 <u1..<u8 |b1 <U<n> |S<n>)");
  }
  const bool multi_byte = (kind == 'U') || (kind != 'S' && t.itemsize > 1);
  if (order == '|' && multi_byte)
    h.fail("descr '", d, "': a multi-byte type needs a byte order '<' or '>', found '|'");
  big_endian = order == '>' && multi_byte;
  return t;
}

/// Reverses the bytes of each `unit`-byte word in place.
void byteswap(std::string& bytes, int64_t unit) {
  for (size_t i = 0; i + static_cast<size_t>(unit) <= bytes.size(); i += static_cast<size_t>(unit))
    std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                 bytes.begin() + static_cast<std::ptrdiff_t>(i + unit));
}

/// Fortran (column-major) element bytes -> C (row-major) order.
std::string fortran_to_c(const std::string& in, const std::vector<int64_t>& shape, int64_t itemsize) {
  const size_t r = shape.size();
  std::string out(in.size(), '\0');
  if (in.empty()) return out;
  std::vector<int64_t> stride(r), idx(r, 0);
  int64_t s = itemsize;
  for (size_t d = 0; d < r; ++d) {
    stride[d] = s;
    s *= shape[d];
  }
  int64_t src = 0;
  const size_t item = static_cast<size_t>(itemsize);
  for (size_t dst = 0; dst < out.size(); dst += item) {
    std::memcpy(out.data() + dst, in.data() + src, item);
    for (size_t d = r; d-- > 0;) {  // C order: last index fastest
      if (++idx[d] < shape[d]) {
        src += stride[d];
        break;
      }
      src -= stride[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
  return out;
}

template <class T>
T load(const std::string& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

int64_t NpyArray::numel() const {
  for (const int64_t e : shape)
    if (e == 0) return 0;  // before multiplying: the other extents may overflow together
  int64_t n = 1;
  for (const int64_t e : shape) n *= e;
  return n;
}

namespace {

// Element i of a numeric array as float64 (exact for every supported dtype but 64-bit integers
// beyond 2^53, which round).
double element_as_double(const NpyArray& a, int64_t i) {
  const std::string& bytes = a.bytes;
  const int64_t w = a.dtype.itemsize;
  switch (a.dtype.kind) {
    case 'f':
      return w == 4   ? static_cast<double>(load<float>(bytes, i))
             : w == 2 ? static_cast<double>(half_to_float(load<uint16_t>(bytes, i)))
                      : load<double>(bytes, i);
    case 'i':
      return w == 1   ? load<int8_t>(bytes, i)
             : w == 2 ? load<int16_t>(bytes, i)
             : w == 4 ? load<int32_t>(bytes, i)
                      : static_cast<double>(load<int64_t>(bytes, i));
    case 'u':
      return w == 1   ? load<uint8_t>(bytes, i)
             : w == 2 ? load<uint16_t>(bytes, i)
             : w == 4 ? load<uint32_t>(bytes, i)
                      : static_cast<double>(load<uint64_t>(bytes, i));
    default:
      return load<uint8_t>(bytes, i) != 0 ? 1.0 : 0.0;  // 'b'
  }
}

}  // namespace

std::vector<double> NpyArray::to_doubles() const {
  if (!dtype.is_numeric())
    raise<ParseError>(name, ": expected a numeric array, found dtype '", dtype.descr, "'");
  const int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = element_as_double(*this, i);
  return out;
}

std::vector<float> NpyArray::to_floats() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  to_floats(out);
  return out;
}

void NpyArray::to_floats(std::span<float> out) const {
  if (!dtype.is_numeric())
    raise<ParseError>(name, ": expected a numeric array, found dtype '", dtype.descr, "'");
  const int64_t n = numel();
  if (static_cast<int64_t>(out.size()) != n)
    raise<InvalidArgument>(name, ": to_floats: the destination holds ", out.size(), " values, the array ", n);
  if (dtype.kind == 'f' && dtype.itemsize == 4) {
    if (n > 0) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return;
  }
  // Through float64, so float64 and integers round once, as a cast of the whole array would.
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = static_cast<float>(element_as_double(*this, i));
}

std::vector<int64_t> NpyArray::to_int64s() const {
  if (!dtype.is_numeric())
    raise<ParseError>(name, ": expected an integer array, found dtype '", dtype.descr, "'");
  const int64_t n = numel();
  std::vector<int64_t> out(static_cast<size_t>(n));
  const int64_t w = dtype.itemsize;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    switch (dtype.kind) {
      case 'i':
        v = w == 1   ? load<int8_t>(bytes, i)
            : w == 2 ? load<int16_t>(bytes, i)
            : w == 4 ? load<int32_t>(bytes, i)
                     : load<int64_t>(bytes, i);
        break;
      case 'u':
        if (w == 8) {
          const uint64_t u = load<uint64_t>(bytes, i);
          if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            raise<ParseError>(name, ": element ", i, " is ", u, ", beyond the int64 range");
          v = static_cast<int64_t>(u);
        } else {
          v = w == 1 ? load<uint8_t>(bytes, i) : w == 2 ? load<uint16_t>(bytes, i) : load<uint32_t>(bytes, i);
        }
        break;
      case 'f': {
        const double d = element_as_double(*this, i);  // float16 too: read as 2 bytes, not 8
        // 2^63 is exactly representable; the valid range is [-2^63, 2^63).
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::trunc(d))
          raise<ParseError>(name, ": expected whole numbers, element ", i, " is ", d, " (dtype '",
                            dtype.descr, "')");
        v = static_cast<int64_t>(d);
        break;
      }
      default:
        v = load<uint8_t>(bytes, i) != 0 ? 1 : 0;
        break;  // 'b'
    }
    out[static_cast<size_t>(i)] = v;
  }
  return out;
}

std::vector<std::string> NpyArray::to_strings() const {
  if (!dtype.is_string())
    raise<ParseError>(name, ": expected a string array ('<U<n>' or '|S<n>'), found dtype '", dtype.descr,
                      "'");
  const int64_t n = numel();
  const size_t w = static_cast<size_t>(dtype.itemsize);
  std::vector<std::string> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const char* p = bytes.data() + static_cast<size_t>(i) * w;
    std::string& s = out[static_cast<size_t>(i)];
    if (dtype.kind == 'S') {
      size_t len = w;
      while (len > 0 && p[len - 1] == '\0') --len;
      s.assign(p, len);
      continue;
    }
    size_t chars = w / 4;
    auto cp_at = [&](size_t k) {
      uint32_t c;
      std::memcpy(&c, p + 4 * k, 4);
      return c;
    };
    while (chars > 0 && cp_at(chars - 1) == 0) --chars;
    for (size_t k = 0; k < chars; ++k) {
      const uint32_t c = cp_at(k);
      if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        raise<ParseError>(name, ": element ", i, " character ", k, " is 0x", std::hex, c,
                          ", not a Unicode code point");
      append_utf8(s, c);
    }
  }
  return out;
}

namespace {

// The header of an NPY file at the start of `bytes` (which may end anywhere after it).
NpyHeader parse_header(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic)
    raise<ParseError>(
        what, ": not an NPY file: expected the magic \\x93NUMPY at byte offset 0",
        bytes.size() < 10 ? " (the data is only " + std::to_string(bytes.size()) + " bytes)" : "");
  const auto major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    raise<ParseError>(what, ": NPY version ", int{major}, ".", int{minor},
                      " at byte offset 6 is not supported (expected 1.0, 2.0 or 3.0)");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t header_start = 10;
  uint64_t header_len = uint64_t{u[8]} | (uint64_t{u[9]} << 8);
  if (major >= 2) {
    if (bytes.size() < 12)
      raise<ParseError>(what, ": NPY ", int{major}, ".0 header length at byte offset 8 is truncated");
    header_len |= (uint64_t{u[10]} << 16) | (uint64_t{u[11]} << 24);
    header_start = 12;
  }
  if (header_len > bytes.size() - header_start)
    raise<ParseError>(what, ": NPY header at byte offset ", header_start, " declares ", header_len,
                      " bytes but only ", bytes.size() - header_start, " remain");
  const std::string_view header = bytes.substr(header_start, header_len);
  HeaderParser h(header, what, header_start);

  NpyHeader out;
  NpyArray& a = out.array;
  a.name = what;
  bool have_descr = false, have_fortran = false, have_shape = false;
  h.expect('{', "to open the header dict");
  while (!h.peek('}')) {
    const std::string_view key = h.read_string("a header key");
    h.expect(':', "after a header key");
    if (key == "descr") {
      if (have_descr) h.fail("'descr' appears twice");
      if (h.peek('[')) h.fail("structured dtypes (a list of fields in 'descr') are not supported");
      a.dtype = parse_descr(h.read_string("'descr'"), h, out.big_endian);
      have_descr = true;
    } else if (key == "fortran_order") {
      if (have_fortran) h.fail("'fortran_order' appears twice");
      out.fortran_order = h.read_bool("'fortran_order'");
      have_fortran = true;
    } else if (key == "shape") {
      if (have_shape) h.fail("'shape' appears twice");
      a.shape = h.read_shape();
      have_shape = true;
    } else {
      h.fail("unexpected header key '", key, "' (expected 'descr', 'fortran_order' and 'shape')");
    }
    if (h.peek(',')) {
      h.expect(',', "");
    } else if (!h.peek('}')) {
      h.fail("expected ',' or '}' after a header entry, found ", h.here());
    }
  }
  h.expect('}', "to close the header dict");
  if (!h.at_end()) h.fail("unexpected text after the header dict: ", h.here());
  if (!have_descr || !have_fortran || !have_shape)
    h.fail("missing key '", !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape", "'");
  out.data_offset = header_start + header_len;
  uint64_t expected = static_cast<uint64_t>(a.dtype.itemsize);
  for (const int64_t e : a.shape) {
    if (e != 0 && expected > UINT64_MAX / 2 / static_cast<uint64_t>(e)) {
      expected = UINT64_MAX;  // overflows: more than any data can hold
      break;
    }
    expected *= static_cast<uint64_t>(e);
  }
  for (const int64_t e : a.shape)
    if (e == 0) expected = 0;
  out.data_bytes = expected;
  return out;
}

// `owned`, when given, holds `bytes` and is consumed: its buffer becomes the array's (the header
// is erased in place) instead of being copied.
NpyArray parse_npy_impl(std::string_view bytes, const std::string& what, std::string* owned) {
  NpyHeader parsed = parse_header(bytes, what);
  NpyArray a = std::move(parsed.array);
  const bool fortran = parsed.fortran_order, big_endian = parsed.big_endian;
  const uint64_t expected = parsed.data_bytes;

  // Data length: exactly numel * itemsize bytes.
  const uint64_t data_start = parsed.data_offset;
  const uint64_t available = bytes.size() - data_start;
  if (expected != available) {
    std::string shape_str = "(";
    for (size_t i = 0; i < a.shape.size(); ++i) shape_str += (i ? ", " : "") + std::to_string(a.shape[i]);
    shape_str += a.shape.size() == 1 ? ",)" : ")";
    raise<ParseError>(what, ": data at byte offset ", data_start, " is ", available, " bytes, expected ",
                      expected == UINT64_MAX ? std::string("more") : std::to_string(expected), " for shape ",
                      shape_str, " of '", a.dtype.descr, "' (", a.dtype.itemsize, " bytes each)");
  }
  if (owned) {
    owned->erase(0, data_start);
    a.bytes = std::move(*owned);
  } else {
    a.bytes.assign(bytes.substr(data_start));
  }
  if (big_endian) byteswap(a.bytes, a.dtype.kind == 'U' ? 4 : a.dtype.itemsize);
  if (fortran && a.shape.size() > 1) a.bytes = fortran_to_c(a.bytes, a.shape, a.dtype.itemsize);
  return a;
}

}  // namespace

NpyHeader parse_npy_header(std::string_view prefix, const std::string& what) {
  return parse_header(prefix, what);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant != 0) {
    // subnormal half: mant * 2^-24, exact in float32
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  } else {
    bits = sign;  // +-0
  }
  return std::bit_cast<float>(bits);
}

NpyArray parse_npy(std::string_view bytes, const std::string& what) {
  return parse_npy_impl(bytes, what, nullptr);
}

NpyArray parse_npy(std::string&& bytes, const std::string& what) {
  std::string owned = std::move(bytes);
  return parse_npy_impl(owned, what, &owned);
}

NpyArray read_npy(const std::filesystem::path& path) { return parse_npy(read_file(path), path.string()); }

std::map<std::string, NpyArray> parse_npz(std::string_view bytes, const std::string& what,
                                          const NpzLimits& limits) {
  ZipLimits zl;
  zl.max_member_bytes = limits.max_member_bytes;
  zl.max_total_bytes = limits.max_total_bytes;
  const ZipArchive zip(bytes, what, zl);
  std::map<std::string, NpyArray> arrays;
  for (const ZipMember& m : zip.members()) {
    constexpr std::string_view kSuffix = ".npy";
    if (m.name.size() <= kSuffix.size() || !m.name.ends_with(kSuffix))
      raise<ParseError>(what, ": member '", m.name, "' (local header at byte offset ", m.local_header_offset,
                        ") is not an .npy array (expected '<key>.npy')");
    const std::string key = m.name.substr(0, m.name.size() - kSuffix.size());
    const std::string name = what + ":" + m.name;
    if (const auto view = zip.stored_view(m)) {
      arrays.emplace(key, parse_npy(*view, name));
    } else {
      arrays.emplace(key, parse_npy(zip.extract(m), name));
    }
  }
  return arrays;
}

std::map<std::string, NpyArray> read_npz(const std::filesystem::path& path, const NpzLimits& limits) {
  return parse_npz(read_file(path), path.string(), limits);
}

}  // namespace edgeattn::data
