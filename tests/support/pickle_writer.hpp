// Test support: a tiny writer of Python-2 protocol-2 pickles in exactly the opcode layout of the
// Planetoid files (datasets/PROVENANCE.md §3.1), so tests can make synthetic Planetoid inputs (a
// PubMed allx, small graphs) and hostile variants of them.
//
//   PickleWriter w;                  // low level: one method per opcode
//   w.proto(); w.global("os", "system"); w.stop();
//   std::string x = csr_pickle(2, 3, {0, 1, 3}, {1, 0, 2}, {2.f, 1.f, 3.f});   // scipy csr_matrix
//   std::string y = int32_matrix_pickle(2, 2, {1, 0, 0, 1});                   // numpy int32 [2, 2]
//   std::string g = graph_pickle({{1}, {0, 2}, {1}});                          // defaultdict(list)
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace edgeattn::testing {

class PickleWriter {
 public:
  std::string bytes;

  PickleWriter& op(uint8_t code) {
    bytes += static_cast<char>(code);
    return *this;
  }
  PickleWriter& proto(uint8_t version = 2) { return op(0x80).raw_byte(version); }
  PickleWriter& stop() { return op('.'); }
  PickleWriter& mark() { return op('('); }
  PickleWriter& global(std::string_view module, std::string_view name) {
    op('c');
    bytes.append(module).append("\n").append(name).append("\n");
    return *this;
  }
  /// BINPUT below 256, LONG_BINPUT above (as Python 2's pickler does).
  PickleWriter& put(uint32_t idx) {
    return idx < 256 ? op('q').raw_byte(static_cast<uint8_t>(idx)) : op('r').le(idx, 4);
  }
  PickleWriter& get(uint8_t idx) { return op('h').raw_byte(idx); }
  /// BININT1 / BININT2 / BININT, the smallest that holds v (as Python 2's pickler does).
  PickleWriter& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').raw_byte(static_cast<uint8_t>(v));
    if (v >= 0 && v < 65536) return op('M').le(static_cast<uint64_t>(v), 2);
    return op('J').le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
  }
  /// SHORT_BINSTRING below 256 bytes, BINSTRING otherwise.
  PickleWriter& str(std::string_view s) {
    if (s.size() < 256)
      op('U').raw_byte(static_cast<uint8_t>(s.size()));
    else
      op('T').le(s.size(), 4);
    bytes.append(s);
    return *this;
  }
  PickleWriter& none() { return op('N'); }
  PickleWriter& boolean(bool b) { return op(b ? 0x88 : 0x89); }
  PickleWriter& empty_tuple() { return op(')'); }
  PickleWriter& tuple() { return op('t'); }
  PickleWriter& tuple_n(int n) { return op(static_cast<uint8_t>(0x84 + n)); }  // TUPLE1..3
  PickleWriter& empty_list() { return op(']'); }
  PickleWriter& empty_dict() { return op('}'); }
  PickleWriter& append() { return op('a'); }
  PickleWriter& appends() { return op('e'); }
  PickleWriter& setitems() { return op('u'); }
  PickleWriter& reduce() { return op('R'); }
  PickleWriter& newobj() { return op(0x81); }
  PickleWriter& build() { return op('b'); }

  PickleWriter& raw_byte(uint8_t b) {
    bytes += static_cast<char>(b);
    return *this;
  }
  PickleWriter& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
};

template <class T>
std::string raw_le_bytes(const std::vector<T>& v) {
  std::string out(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());  // the test machines are little-endian
  return out;
}

/// The ndarray layout: _reconstruct(ndarray, (0,), 'b') then BUILD (1, shape, dtype, False, raw).
/// `memo` continues the file's memo numbering; globals are memoised at their first use (indices
/// written to `reconstruct_idx`, `ndarray_idx`, `dtype_idx`) and fetched with BINGET afterwards,
/// exactly as the Planetoid csr pickles do.
struct NdarrayEmitter {
  PickleWriter& w;
  uint32_t memo = 1;
  int reconstruct_idx = -1, ndarray_idx = -1, dtype_global_idx = -1;
  int dtype_i4_idx = -1, dtype_f4_idx = -1;

  void emit(const std::vector<int64_t>& shape, const char* dtype, const std::string& raw) {
    if (reconstruct_idx < 0) {
      w.global("numpy.core.multiarray", "_reconstruct").put(memo);
      reconstruct_idx = static_cast<int>(memo++);
      w.global("numpy", "ndarray").put(memo);
      ndarray_idx = static_cast<int>(memo++);
    } else {
      w.get(static_cast<uint8_t>(reconstruct_idx)).get(static_cast<uint8_t>(ndarray_idx));
    }
    w.integer(0).tuple_n(1).str("b").tuple_n(3).reduce().put(memo++);
    w.mark().integer(1);
    const bool short_tuple = !shape.empty() && shape.size() <= 3;  // TUPLE1..3, else MARK ... TUPLE
    if (!short_tuple) w.mark();
    for (const int64_t d : shape) w.integer(d);
    if (short_tuple)
      w.tuple_n(static_cast<int>(shape.size()));
    else
      w.tuple();
    int& cached = std::string_view(dtype) == "i4" ? dtype_i4_idx : dtype_f4_idx;
    if (cached >= 0) {
      w.get(static_cast<uint8_t>(cached));
    } else {
      if (dtype_global_idx < 0) {
        w.global("numpy", "dtype").put(memo);
        dtype_global_idx = static_cast<int>(memo++);
      } else {
        w.get(static_cast<uint8_t>(dtype_global_idx));
      }
      w.str(dtype).integer(0).integer(1).tuple_n(3).reduce().put(memo);
      cached = static_cast<int>(memo++);
      w.mark().integer(3).str("<").none().none().none().integer(-1).integer(-1).integer(0).tuple().build();
    }
    w.boolean(false).str(raw).tuple().build();
  }
};

/// A scipy csr_matrix pickle as Planetoid's x/tx/allx files lay it out.
inline std::string csr_pickle(int64_t rows, int64_t cols, const std::vector<int32_t>& indptr,
                              const std::vector<int32_t>& indices, const std::vector<float>& data) {
  PickleWriter w;
  w.proto()
      .global("scipy.sparse.csr", "csr_matrix")
      .put(1)
      .empty_tuple()
      .newobj()
      .put(2)
      .empty_dict()
      .put(3)
      .mark();
  NdarrayEmitter nd{w, 4};
  w.str("format").put(nd.memo++).str("csr");
  w.str("_shape").put(nd.memo++).integer(rows).integer(cols).tuple_n(2);
  w.str("indptr").put(nd.memo++);
  nd.emit({static_cast<int64_t>(indptr.size())}, "i4", raw_le_bytes(indptr));
  w.str("_cs_matrix__has_sorted_indices").put(nd.memo++).boolean(true);
  w.str("indices").put(nd.memo++);
  nd.emit({static_cast<int64_t>(indices.size())}, "i4", raw_le_bytes(indices));
  w.str("maxprint").put(nd.memo++).integer(50);
  w.str("data").put(nd.memo++);
  nd.emit({static_cast<int64_t>(data.size())}, "f4", raw_le_bytes(data));
  w.setitems().build().stop();
  return std::move(w.bytes);
}

/// A numpy int32 [rows, cols] ndarray pickle as Planetoid's y/ty/ally files lay it out.
inline std::string int32_matrix_pickle(int64_t rows, int64_t cols, const std::vector<int32_t>& values) {
  PickleWriter w;
  w.proto();
  NdarrayEmitter nd{w, 1};
  nd.emit({rows, cols}, "i4", raw_le_bytes(values));
  w.stop();
  return std::move(w.bytes);
}

/// A defaultdict(list) pickle as Planetoid's graph files lay it out: keys 0..n-1, SETITEMS and
/// APPENDS in batches of 1000, APPEND for one-element lists.
inline std::string graph_pickle(const std::vector<std::vector<int64_t>>& lists) {
  PickleWriter w;
  w.proto()
      .global("collections", "defaultdict")
      .put(1)
      .global("__builtin__", "list")
      .put(2)
      .tuple_n(1)
      .reduce()
      .put(3);
  uint32_t memo = 4;
  for (size_t b = 0; b < lists.size(); b += 1000) {
    w.mark();
    for (size_t k = b; k < lists.size() && k < b + 1000; ++k) {
      w.integer(static_cast<int64_t>(k)).empty_list().put(memo++);
      const auto& l = lists[k];
      if (l.size() == 1) {
        w.integer(l[0]).append();
      } else {
        for (size_t i = 0; i < l.size(); i += 1000) {
          w.mark();
          for (size_t j = i; j < l.size() && j < i + 1000; ++j) w.integer(l[j]);
          w.appends();
        }
      }
    }
    w.setitems();
  }
  w.stop();
  return std::move(w.bytes);
}

}  // namespace edgeattn::testing
