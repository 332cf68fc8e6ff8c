// NumPy's .npy arrays and .npz archives (a ZIP of .npy members), read without Python.
//
// An .npy file is: the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the header
// length (uint16 for 1.0, uint32 for 2.0/3.0), an ASCII (3.0: UTF-8) Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2708, 1433), }
// padded with spaces and a '\n', then the raw element bytes. The header is parsed strictly as a
// literal (never evaluated): exactly the three keys, a dtype string, True/False, a tuple of
// non-negative integers (Python 2's `10L` accepted).
//
// Supported dtypes: <f2 <f4 <f8, <i1 <i2 <i4 <i8 (|i1), <u1 <u2 <u4 <u8 (|u1), |b1, fixed-width
// unicode <U<n> (UTF-32LE, NUL-padded) and byte strings |S<n>. Big-endian ('>') arrays are
// byte-swapped on load; fortran_order arrays are transposed to C order on load, so an NpyArray
// always holds little-endian, C-order (row-major) bytes. Pickled objects ('|O') are rejected:
// edgeattn never unpickles. Structured dtypes and complex are rejected clearly. float16 (OGB's
// ogbn-papers100M features) converts exactly to float32.
//
// Errors: ParseError naming the file (and, inside an .npz, the member) and the byte offset or the
// header field, with what was expected and what was found; IoError for a missing file.
//
// Example:
//   auto arrays = edgeattn::data::read_npz("datasets/cora/npz/cora.npz");
//   const NpyArray& labels = arrays.at("labels");   // shape [2708], dtype |i1
//   std::vector<int64_t> y = labels.to_int64s();
//   std::vector<std::string> names = arrays.at("class_names").to_strings();
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgeattn::data {

/// An element type, normalised to little-endian.
struct NpyDtype {
  /// 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool, 'U' UTF-32 string, 'S' byte string.
  char kind = 'f';
  /// Bytes per element (for 'U': 4 x the character count).
  int64_t itemsize = 4;
  /// The descriptor as the file wrote it, e.g. "<f4", ">i8", "<U7".
  std::string descr;

  bool is_numeric() const { return kind == 'f' || kind == 'i' || kind == 'u' || kind == 'b'; }
  bool is_string() const { return kind == 'U' || kind == 'S'; }
};

/// One array: its dtype, shape and little-endian C-order element bytes.
struct NpyArray {
  std::string name;  ///< names the array in errors: "<file>" or "<archive>:<member>"
  NpyDtype dtype;
  std::vector<int64_t> shape;  ///< empty for a 0-d (scalar) array
  std::string bytes;           ///< [numel() * dtype.itemsize]

  /// Product of the extents (1 for a 0-d array).
  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }

  /// Element values converted to float32 (any numeric dtype; float64 is rounded). Throws
  /// ParseError for string dtypes.
  std::vector<float> to_floats() const;
  /// The same values written into `out` ([numel()]), e.g. straight into a Tensor's storage.
  /// Throws InvalidArgument when `out` has another size.
  void to_floats(std::span<float> out) const;
  /// Element values as float64 (any numeric dtype).
  std::vector<double> to_doubles() const;
  /// Element values as int64: integer and bool dtypes; float dtypes only when every value is a
  /// whole number in range. Throws ParseError naming the array and the first offending index.
  std::vector<int64_t> to_int64s() const;
  /// Element values as UTF-8 strings, trailing NULs removed ('U' and 'S' dtypes). Throws
  /// ParseError for numeric dtypes and for 'U' values that are not Unicode code points.
  std::vector<std::string> to_strings() const;
};

/// What an .npy header says, parsed from the file's first bytes alone (streaming readers:
/// data/npz_stream.hpp). `array` has name, dtype and shape but no bytes.
struct NpyHeader {
  NpyArray array;
  bool fortran_order = false;
  bool big_endian = false;   ///< the elements are stored big-endian
  uint64_t data_offset = 0;  ///< where the elements start
  uint64_t data_bytes = 0;   ///< numel * itemsize (UINT64_MAX if that overflows)
};
/// ParseError naming `what` when `prefix` is not an NPY header or ends inside it.
NpyHeader parse_npy_header(std::string_view prefix, const std::string& what);

/// IEEE half precision bits -> float32 (exact; inf and NaN kept).
float half_to_float(uint16_t bits);

/// Parses one .npy file's bytes; `what` names it in errors.
NpyArray parse_npy(std::string_view bytes, const std::string& what);
/// The same, taking over `bytes`' buffer for the elements instead of copying them.
NpyArray parse_npy(std::string&& bytes, const std::string& what);
inline NpyArray parse_npy(const char* bytes, const std::string& what) {
  return parse_npy(std::string_view(bytes), what);
}
/// Reads and parses an .npy file (gzip-compressed copies load too).
NpyArray read_npy(const std::filesystem::path& path);

/// Limits on what an .npz archive may expand to (zip-bomb guard).
struct NpzLimits {
  uint64_t max_member_bytes = uint64_t{16} << 30;
  uint64_t max_total_bytes = uint64_t{64} << 30;
};

/// Parses an .npz archive held in memory: key (member name without ".npy") -> array. Members not
/// ending in ".npy" are rejected; `what` names the archive in errors.
std::map<std::string, NpyArray> parse_npz(std::string_view bytes, const std::string& what,
                                          const NpzLimits& limits = {});
/// Reads and parses an .npz file.
std::map<std::string, NpyArray> read_npz(const std::filesystem::path& path, const NpzLimits& limits = {});

}  // namespace edgeattn::data
