// Internal: a strict reader of the Python-2 pickles (protocol 2) that hold the Planetoid datasets
// (numpy ndarrays, scipy csr_matrix, collections.defaultdict(list)); see datasets/PROVENANCE.md §3.1.
//
// It never executes anything and never constructs arbitrary objects. It accepts exactly the
// opcodes Planetoid uses
//   PROTO GLOBAL BINPUT LONG_BINPUT BINGET MARK STOP EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3
//   EMPTY_DICT SETITEMS EMPTY_LIST APPEND APPENDS NEWOBJ REDUCE BUILD NONE NEWTRUE NEWFALSE
//   BININT BININT1 BININT2 SHORT_BINSTRING BINSTRING
// and exactly these GLOBALs, each only in the one call shape the files use:
//   numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), 'b')   REDUCE, then BUILD (1, shape, dtype,
//   False, raw) numpy.dtype('i4'|'f4'|'i8'|'f8'|'u1'|'b1', 0, 1)                  REDUCE, then BUILD (3,
//   '<'|'|', None, None, None, -1, -1, 0) scipy.sparse.csr.csr_matrix NEWOBJ with (), then BUILD {state dict}
//   collections.defaultdict(__builtin__.list)                         REDUCE, then SETITEMS
// Everything else - another opcode, another global, another call shape - is a ParseError that
// names the file, the byte offset and the opcode (or `module.class`).
//
// The result is a small tree of `Value`s in an arena owned by `Pickle`; values refer to each other
// by pointer, so the memo (BINPUT/BINGET) shares objects as Python does, and hostile input that
// builds cycles cannot leak or recurse (nothing here walks the tree recursively). Byte strings are
// views into the pickle's own copy of the input. Limits (`PickleLimits`) bound the stack, the MARK
// depth and the number of values, so memory stays proportional to the input and every opcode does
// amortised O(1) work: no input can hang the reader.
//
// Example:
//   const Pickle p = parse_pickle(read_file(path), path.string());
//   const CsrMatrix& x = p.root().as_csr(p.name());        // ind.cora.x: [140, 1433]
//   const NdArray& y = p.root().as_ndarray(p.name());      // ind.cora.y: shape {140, 7}, "<i4"
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgeattn/core/sparse_matrix.hpp"

namespace edgeattn::data {

/// Bounds that keep hostile pickles from exhausting memory; defaults are far above what the
/// Planetoid files need (their stack peaks near 2000 entries, MARK depth 3, PubMed's graph makes
/// about 130 thousand values). A value takes about 160 bytes, so the default caps the value tree
/// near 700 MB whatever the input; the byte strings are views and cost nothing extra.
struct PickleLimits {
  int64_t max_stack = int64_t{1} << 20;
  int64_t max_mark_depth = 64;
  int64_t max_values = int64_t{1} << 22;
  int64_t max_line = 256;  ///< longest GLOBAL module or class name
};

/// An ndarray's dtype, shape and raw little-endian C-order element bytes.
struct NdArray {
  std::string dtype;           ///< numpy's descr: "<i4", "<f4", "<i8", "<f8", "|u1" or "|b1"
  std::vector<int64_t> shape;  ///< C order; product(shape) * itemsize == raw.size()
  std::string_view raw;        ///< views into the owning Pickle
  int itemsize = 0;

  int64_t numel() const { return itemsize > 0 ? static_cast<int64_t>(raw.size()) / itemsize : 0; }
  bool is_integer() const { return dtype == "<i4" || dtype == "<i8" || dtype == "|u1" || dtype == "|b1"; }
  /// Element k as an integer (integer dtypes only; the caller checks is_integer()).
  int64_t integer_at(int64_t k) const;
  /// Element k as a double (any dtype).
  double number_at(int64_t k) const;
};

class Value {
 public:
  enum class Kind : uint8_t {
    none,
    boolean,
    integer,
    bytes,
    tuple,
    list,
    dict,
    ndarray,
    dtype,
    csr_matrix,
    defaultdict_list,
    global,  ///< a permitted class or function, only as the callee of REDUCE/NEWOBJ or an argument
  };

  Kind kind = Kind::none;
  /// False between the REDUCE/NEWOBJ that creates an ndarray, dtype or csr_matrix and the BUILD
  /// that fills it in; incomplete values are rejected where a complete one is needed.
  bool complete = true;
  int64_t offset = 0;              ///< byte offset of the opcode that created the value
  bool boolean = false;            ///< boolean
  int64_t integer = 0;             ///< integer
  std::string_view text;           ///< bytes; global: "module.class"; dtype: its descr once built
  std::vector<Value*> items;       ///< tuple, list; dict and defaultdict: key0, value0, key1, ...
  NdArray array;                   ///< ndarray (dtype.text is the descr)
  std::unique_ptr<CsrMatrix> csr;  ///< csr_matrix, validated

  /// "int", "tuple", "numpy.ndarray", ...
  std::string type_name() const;

  /// Typed access; each throws ParseError "<file>: byte <offset>: expected <what>, found <type>"
  /// when the value is of another kind or incomplete.
  int64_t as_int(const std::string& file, std::string_view what = "an int") const;
  const NdArray& as_ndarray(const std::string& file) const;
  const CsrMatrix& as_csr(const std::string& file) const;
  /// The value of a dict whose key is the byte string `key`; nullptr when absent.
  const Value* dict_get(std::string_view key) const;
};

/// A parsed pickle: the input bytes, the value arena and the root value.
class Pickle {
 public:
  const Value& root() const { return *root_; }
  const std::string& name() const { return name_; }
  int64_t num_values() const { return static_cast<int64_t>(arena_.size()); }

 private:
  friend class Unpickler;
  std::string name_;
  std::unique_ptr<std::string> bytes_;  // stable address: values view into it
  std::deque<Value> arena_;
  Value* root_ = nullptr;
};

/// Parses a pickle held in memory; `name` (usually the file path) prefixes every error message.
/// Throws ParseError for anything outside the accepted subset, malformed or truncated input, and
/// input beyond `limits`.
Pickle parse_pickle(std::string_view bytes, const std::string& name, const PickleLimits& limits = {});

/// read_file (so `.gz` works too) + parse_pickle, naming the file by its path.
Pickle read_pickle(const std::filesystem::path& path, const PickleLimits& limits = {});

}  // namespace edgeattn::data
