// The strict protocol-2 unpickler (see pickle.hpp for the accepted subset).
//
// The machine follows CPython's pickle.py `_Unpickler` with its "metastack": MARK starts a new
// frame, and no opcode may pop below the frame it runs in, which is what makes stack underflow and
// unbalanced MARKs detectable at the opcode that commits them. Every opcode either pushes one new
// value (creating at most one arena entry) or consumes the values it pops, so the work per opcode
// is amortised O(1) and memory is O(input + max_values).
#include "data/pickle.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

namespace edgeattn::data {
namespace {

// Opcode bytes of the accepted subset.
enum Op : uint8_t {
  kMark = '(',
  kStop = '.',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kReduce = 'R',
  kBinString = 'T',
  kShortBinString = 'U',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kEmptyDict = '}',
  kAppends = 'e',
  kBinGet = 'h',
  kEmptyList = ']',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kProto = 0x80,
  kNewObj = 0x81,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
};

// Every opcode of pickle protocols 0-5, so a rejected one is reported by name.
constexpr std::pair<uint8_t, const char*> kOpNames[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

const char* op_name(uint8_t op) {
  for (const auto& [code, name] : kOpNames)
    if (code == op) return name;
  return nullptr;
}

std::string describe_op(uint8_t op) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex = "0x";
  hex += kHex[op >> 4];
  hex += kHex[op & 15];
  const char* name = op_name(op);
  return name ? std::string(name) + " (" + hex + ")" : "unknown opcode " + hex;
}

constexpr uint8_t kAccepted[] = {kMark,      kStop,       kBinInt,         kBinInt1,   kBinInt2, kNone,
                                 kReduce,    kBinString,  kShortBinString, kAppend,    kBuild,   kGlobal,
                                 kEmptyDict, kAppends,    kBinGet,         kEmptyList, kBinPut,  kLongBinPut,
                                 kTuple,     kEmptyTuple, kSetItems,       kProto,     kNewObj,  kTuple1,
                                 kTuple2,    kTuple3,     kNewTrue,        kNewFalse};

// The permitted globals; Value::text of a global views one of these literals.
constexpr std::string_view kReconstruct = "numpy.core.multiarray._reconstruct";
constexpr std::string_view kNdarray = "numpy.ndarray";
constexpr std::string_view kDtype = "numpy.dtype";
constexpr std::string_view kCsrMatrix = "scipy.sparse.csr.csr_matrix";
constexpr std::string_view kDefaultdict = "collections.defaultdict";
constexpr std::string_view kList = "__builtin__.list";
constexpr std::string_view kGlobals[] = {kReconstruct, kNdarray, kDtype, kCsrMatrix, kDefaultdict, kList};

/// Printable rendering of untrusted bytes for an error message (at most 60 characters).
std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 60; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > 60) out += "...";
  return out;
}

uint64_t load_le(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

struct DtypeInfo {
  std::string_view name;  // as passed to numpy.dtype(...)
  int itemsize;
};
constexpr DtypeInfo kDtypes[] = {{"i4", 4}, {"f4", 4}, {"i8", 8}, {"f8", 8}, {"u1", 1}, {"b1", 1}};

bool is_kind(const Value* v, Value::Kind k) { return v->kind == k && v->complete; }
bool is_int(const Value* v, int64_t x) { return v->kind == Value::Kind::integer && v->integer == x; }
bool is_global(const Value* v, std::string_view name) {
  return v->kind == Value::Kind::global && v->text == name;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// NdArray / Value

int64_t NdArray::integer_at(int64_t k) const {
  const char* p = raw.data() + k * itemsize;
  if (dtype == "<i4") return static_cast<int32_t>(static_cast<uint32_t>(load_le(p, 4)));
  if (dtype == "<i8") return static_cast<int64_t>(load_le(p, 8));
  return static_cast<unsigned char>(*p);  // |u1, |b1
}

double NdArray::number_at(int64_t k) const {
  const char* p = raw.data() + k * itemsize;
  if (dtype == "<f4") return std::bit_cast<float>(static_cast<uint32_t>(load_le(p, 4)));
  if (dtype == "<f8") return std::bit_cast<double>(load_le(p, 8));
  return static_cast<double>(integer_at(k));
}

std::string Value::type_name() const {
  std::string t;
  switch (kind) {
    case Kind::none:
      t = "None";
      break;
    case Kind::boolean:
      t = "bool";
      break;
    case Kind::integer:
      t = "int";
      break;
    case Kind::bytes:
      t = "str";
      break;
    case Kind::tuple:
      t = "tuple";
      break;
    case Kind::list:
      t = "list";
      break;
    case Kind::dict:
      t = "dict";
      break;
    case Kind::ndarray:
      t = "numpy.ndarray";
      break;
    case Kind::dtype:
      t = "numpy.dtype";
      break;
    case Kind::csr_matrix:
      t = "scipy.sparse.csr_matrix";
      break;
    case Kind::defaultdict_list:
      t = "collections.defaultdict(list)";
      break;
    case Kind::global:
      t = "global " + std::string(text);
      break;
  }
  return complete ? t : t + " (not yet built)";
}

int64_t Value::as_int(const std::string& file, std::string_view what) const {
  if (kind != Kind::integer)
    raise<ParseError>(file, ": byte ", offset, ": expected ", what, ", found ", type_name());
  return integer;
}

const NdArray& Value::as_ndarray(const std::string& file) const {
  if (!is_kind(this, Kind::ndarray))
    raise<ParseError>(file, ": byte ", offset, ": expected a numpy.ndarray, found ", type_name());
  return array;
}

const CsrMatrix& Value::as_csr(const std::string& file) const {
  if (!is_kind(this, Kind::csr_matrix))
    raise<ParseError>(file, ": byte ", offset, ": expected a scipy.sparse.csr_matrix, found ", type_name());
  return *csr;
}

const Value* Value::dict_get(std::string_view key) const {
  if (kind != Kind::dict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i]->kind == Kind::bytes && items[i]->text == key) return items[i + 1];
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// The machine

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& name, const PickleLimits& limits) : limits_(limits) {
    p_.name_ = name;
    p_.bytes_ = std::make_unique<std::string>(bytes);
    in_ = *p_.bytes_;
  }

  Pickle run() {
    if (in_.empty()) raise<ParseError>(p_.name_, ": byte 0: empty file, expected a pickle (PROTO 2)");
    while (true) {
      if (pos_ >= in_.size())
        raise<ParseError>(p_.name_, ": byte ", in_.size(), ": truncated pickle: the input ends before STOP");
      op_offset_ = pos_;
      op_ = static_cast<uint8_t>(in_[pos_++]);
      if (op_offset_ == 0 && op_ != kProto) fail("expected PROTO 2 as the first opcode");
      if (step()) break;
    }
    return std::move(p_);
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    raise<ParseError>(p_.name_, ": byte ", op_offset_, " (", describe_op(op_),
                      "): ", std::forward<Args>(args)...);
  }

  std::string_view take(size_t n, std::string_view what) {
    if (in_.size() - pos_ < n)
      fail("truncated: ", what, " needs ", n, " bytes, only ", in_.size() - pos_, " remain");
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t take_le(int n, std::string_view what) {
    return load_le(take(static_cast<size_t>(n), what).data(), n);
  }

  std::string_view take_line(std::string_view what) {
    const size_t limit = std::min(in_.size(), pos_ + static_cast<size_t>(limits_.max_line) + 1);
    for (size_t e = pos_; e < limit; ++e) {
      if (in_[e] == '\n') {
        const std::string_view s = in_.substr(pos_, e - pos_);
        pos_ = e + 1;
        return s;
      }
    }
    if (limit == in_.size()) fail("truncated: the ", what, " is not terminated by a newline");
    fail("the ", what, " is longer than ", limits_.max_line, " bytes");
  }

  Value* make(Value::Kind kind) {
    if (static_cast<int64_t>(p_.arena_.size()) >= limits_.max_values)
      fail("the pickle creates more than ", limits_.max_values, " values (limit)");
    Value& v = p_.arena_.emplace_back();
    v.kind = kind;
    v.offset = static_cast<int64_t>(op_offset_);
    return &v;
  }

  size_t frame_base() const { return marks_.empty() ? 0 : marks_.back(); }
  size_t frame_size() const { return stack_.size() - frame_base(); }

  void push(Value* v) {
    if (static_cast<int64_t>(stack_.size()) >= limits_.max_stack)
      fail("the stack grows beyond ", limits_.max_stack, " entries (limit)");
    stack_.push_back(v);
  }
  void need(size_t n) {
    if (frame_size() < n)
      fail("stack underflow: needs ", n, " value", n == 1 ? "" : "s", ", found ", frame_size(),
           marks_.empty() ? "" : " above the last MARK");
  }
  Value* pop() {
    need(1);
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    need(1);
    return stack_.back();
  }
  /// The values above the last MARK, which is removed.
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t base = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
    stack_.resize(base);
    return items;
  }

  void push_tuple(std::vector<Value*> items) {
    Value* t = make(Value::Kind::tuple);
    t->items = std::move(items);
    push(t);
  }

  Value* memo_get(uint64_t idx) {
    const auto it = memo_.find(idx);
    if (it == memo_.end()) fail("memo index ", idx, " was never stored (BINPUT)");
    return it->second;
  }
  void memo_put(uint64_t idx) {
    Value* v = top();
    memo_[idx] = v;
  }

  /// One opcode; true after STOP.
  bool step() {
    if (std::find(std::begin(kAccepted), std::end(kAccepted), op_) == std::end(kAccepted))
      fail("opcode not accepted: Planetoid pickles use only ", accepted_list());
    switch (op_) {
      case kProto: {
        if (op_offset_ != 0) fail("PROTO may only appear at byte 0");
        const auto v = take_le(1, "the protocol number");
        if (v != 2) fail("expected protocol 2, found protocol ", v);
        return false;
      }
      case kStop: {
        if (!marks_.empty()) fail("STOP with ", marks_.size(), " unclosed MARK(s)");
        if (stack_.size() != 1) fail("STOP with ", stack_.size(), " values on the stack, expected exactly 1");
        if (pos_ != in_.size()) fail(in_.size() - pos_, " trailing bytes after STOP");
        p_.root_ = stack_.back();
        return true;
      }
      case kMark:
        if (static_cast<int64_t>(marks_.size()) >= limits_.max_mark_depth)
          fail("MARKs nest deeper than ", limits_.max_mark_depth, " (limit)");
        marks_.push_back(stack_.size());
        return false;
      case kNone:
        push(make(Value::Kind::none));
        return false;
      case kNewTrue:
      case kNewFalse: {
        Value* v = make(Value::Kind::boolean);
        v->boolean = op_ == kNewTrue;
        push(v);
        return false;
      }
      case kBinInt:
      case kBinInt1:
      case kBinInt2: {
        const int n = op_ == kBinInt ? 4 : op_ == kBinInt1 ? 1 : 2;
        const uint64_t raw = take_le(n, "the integer");
        Value* v = make(Value::Kind::integer);
        v->integer = n == 4 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(raw)))
                            : static_cast<int64_t>(raw);
        push(v);
        return false;
      }
      case kShortBinString:
      case kBinString: {
        int64_t len = 0;
        if (op_ == kShortBinString) {
          len = static_cast<int64_t>(take_le(1, "the length"));
        } else {
          len = static_cast<int32_t>(static_cast<uint32_t>(take_le(4, "the length")));
          if (len < 0) fail("negative string length ", len);
        }
        if (static_cast<uint64_t>(len) > in_.size() - pos_)
          fail("the string claims ", len, " bytes but only ", in_.size() - pos_, " remain");
        Value* v = make(Value::Kind::bytes);
        v->text = take(static_cast<size_t>(len), "the string");
        push(v);
        return false;
      }
      case kGlobal: {
        const std::string_view module = take_line("module name");
        const std::string_view cls = take_line("class name");
        const std::string full = std::string(module) + "." + std::string(cls);
        for (const std::string_view g : kGlobals) {
          if (g == full) {
            Value* v = make(Value::Kind::global);
            v->text = g;
            push(v);
            return false;
          }
        }
        std::string allowed;
        for (const std::string_view g : kGlobals) {
          if (!allowed.empty()) allowed += ", ";
          allowed += g;
        }
        fail("GLOBAL ", printable(full), " is not accepted (only ", allowed, ")");
      }
      case kBinPut:
        memo_put(take_le(1, "the memo index"));
        return false;
      case kLongBinPut:
        memo_put(take_le(4, "the memo index"));
        return false;
      case kBinGet:
        push(memo_get(take_le(1, "the memo index")));
        return false;
      case kEmptyTuple:
        push_tuple({});
        return false;
      case kTuple:
        push_tuple(pop_mark());
        return false;
      case kTuple1:
      case kTuple2:
      case kTuple3: {
        const size_t n = op_ - kTuple1 + 1u;
        need(n);
        std::vector<Value*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push_tuple(std::move(items));
        return false;
      }
      case kEmptyList:
        push(make(Value::Kind::list));
        return false;
      case kEmptyDict:
        push(make(Value::Kind::dict));
        return false;
      case kAppend: {
        Value* item = pop();
        Value* list = top();
        if (list->kind != Value::Kind::list) fail("APPEND to a ", list->type_name(), ", expected a list");
        list->items.push_back(item);
        return false;
      }
      case kAppends: {
        std::vector<Value*> items = pop_mark();
        Value* list = top();
        if (list->kind != Value::Kind::list) fail("APPENDS to a ", list->type_name(), ", expected a list");
        list->items.insert(list->items.end(), items.begin(), items.end());
        return false;
      }
      case kSetItems: {
        std::vector<Value*> items = pop_mark();
        Value* dict = top();
        if (dict->kind != Value::Kind::dict && dict->kind != Value::Kind::defaultdict_list)
          fail("SETITEMS on a ", dict->type_name(), ", expected a dict");
        if (items.size() % 2 != 0)
          fail("SETITEMS with an odd number (", items.size(), ") of keys and values");
        for (size_t i = 0; i < items.size(); i += 2)
          if (items[i]->kind != Value::Kind::integer && items[i]->kind != Value::Kind::bytes)
            fail("dict key of type ", items[i]->type_name(), ", expected int or str");
        dict->items.insert(dict->items.end(), items.begin(), items.end());
        return false;
      }
      case kNewObj: {
        Value* args = pop();
        Value* cls = pop();
        if (!is_global(cls, kCsrMatrix))
          fail("NEWOBJ of ", cls->type_name(), ", only scipy.sparse.csr.csr_matrix is accepted");
        if (args->kind != Value::Kind::tuple || !args->items.empty())
          fail("NEWOBJ csr_matrix with arguments ", args->type_name(), ", expected ()");
        Value* v = make(Value::Kind::csr_matrix);
        v->complete = false;
        push(v);
        return false;
      }
      case kReduce:
        reduce();
        return false;
      case kBuild:
        build();
        return false;
      default:
        fail("opcode not accepted");  // unreachable: kAccepted and the cases agree
    }
  }

  static std::string accepted_list() {
    std::string s;
    for (const uint8_t op : kAccepted) {
      if (!s.empty()) s += ' ';
      s += op_name(op);
    }
    return s;
  }

  void reduce() {
    Value* args = pop();
    Value* fn = pop();
    if (args->kind != Value::Kind::tuple)
      fail("REDUCE with arguments of type ", args->type_name(), ", expected a tuple");
    const auto& a = args->items;
    if (is_global(fn, kReconstruct)) {
      // numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), 'b'): an empty array BUILD fills.
      const bool ok = a.size() == 3 && is_global(a[0], kNdarray) && a[1]->kind == Value::Kind::tuple &&
                      a[1]->items.size() == 1 && is_int(a[1]->items[0], 0) &&
                      a[2]->kind == Value::Kind::bytes && a[2]->text == "b";
      if (!ok) fail("_reconstruct expects (numpy.ndarray, (0,), 'b')");
      Value* v = make(Value::Kind::ndarray);
      v->complete = false;
      push(v);
      return;
    }
    if (is_global(fn, kDtype)) {
      // numpy.dtype('<name>', 0, 1): align=0, copy=1.
      if (a.size() != 3 || a[0]->kind != Value::Kind::bytes || !is_int(a[1], 0) || !is_int(a[2], 1))
        fail("numpy.dtype expects ('<type>', 0, 1)");
      for (const auto& d : kDtypes) {
        if (d.name == a[0]->text) {
          Value* v = make(Value::Kind::dtype);
          v->complete = false;
          v->array.dtype = std::string(d.name);
          v->array.itemsize = d.itemsize;
          push(v);
          return;
        }
      }
      fail("numpy dtype '", printable(a[0]->text), "' is not accepted (only i4 f4 i8 f8 u1 b1)");
    }
    if (is_global(fn, kDefaultdict)) {
      if (a.size() != 1 || !is_global(a[0], kList)) fail("defaultdict expects (__builtin__.list,)");
      push(make(Value::Kind::defaultdict_list));
      return;
    }
    fail("REDUCE of ", fn->type_name(), " is not accepted");
  }

  void build() {
    Value* state = pop();
    Value* obj = top();
    if (obj->complete || (obj->kind != Value::Kind::ndarray && obj->kind != Value::Kind::dtype &&
                          obj->kind != Value::Kind::csr_matrix))
      fail("BUILD on a ", obj->type_name(), ", expected a new numpy.ndarray, numpy.dtype or csr_matrix");
    if (obj->kind == Value::Kind::dtype)
      build_dtype(obj, state);
    else if (obj->kind == Value::Kind::ndarray)
      build_ndarray(obj, state);
    else
      build_csr(obj, state);
    obj->complete = true;
  }

  void build_dtype(Value* obj, const Value* state) {
    // (3, byteorder, subarray None, names None, fields None, elsize -1, alignment -1, flags 0)
    const auto& s = state->items;
    const bool shape_ok = state->kind == Value::Kind::tuple && s.size() == 8 && is_int(s[0], 3) &&
                          s[1]->kind == Value::Kind::bytes && s[2]->kind == Value::Kind::none &&
                          s[3]->kind == Value::Kind::none && s[4]->kind == Value::Kind::none &&
                          is_int(s[5], -1) && is_int(s[6], -1) && is_int(s[7], 0);
    if (!shape_ok) fail("dtype state must be (3, '<', None, None, None, -1, -1, 0)");
    const std::string_view order = s[1]->text;
    const bool one_byte = obj->array.itemsize == 1;
    if (!(one_byte ? order == "|" : order == "<"))
      fail("dtype ", obj->array.dtype, " with byte order '", printable(order), "', expected '",
           one_byte ? "|" : "<", "'");
    obj->array.dtype = std::string(order) + obj->array.dtype;
  }

  void build_ndarray(Value* obj, const Value* state) {
    // (version 1, shape, dtype, fortran_order False, raw bytes)
    const auto& s = state->items;
    if (state->kind != Value::Kind::tuple || s.size() != 5 || !is_int(s[0], 1))
      fail("ndarray state must be (1, shape, dtype, False, bytes), found a ", state->type_name(), " of ",
           state->items.size(), " items");
    if (s[1]->kind != Value::Kind::tuple)
      fail("ndarray shape is a ", s[1]->type_name(), ", expected a tuple");
    if (!is_kind(s[2], Value::Kind::dtype))
      fail("ndarray dtype is a ", s[2]->type_name(), ", expected a numpy.dtype");
    if (s[3]->kind != Value::Kind::boolean || s[3]->boolean)
      fail("only C-order ndarrays (fortran_order False) are accepted");
    if (s[4]->kind != Value::Kind::bytes)
      fail("ndarray data is a ", s[4]->type_name(), ", expected a str of raw bytes");
    NdArray& a = obj->array;
    a.dtype = s[2]->array.dtype;
    a.itemsize = s[2]->array.itemsize;
    a.raw = s[4]->text;
    uint64_t numel = 1;
    const uint64_t max_numel = a.raw.size() / static_cast<uint64_t>(a.itemsize);
    for (const Value* d : s[1]->items) {
      if (d->kind != Value::Kind::integer || d->integer < 0)
        fail("ndarray shape entry is not a non-negative int");
      a.shape.push_back(d->integer);
      // Saturate above the byte count: the product is only ever compared with it.
      const auto e = static_cast<uint64_t>(d->integer);
      numel = (e != 0 && numel > max_numel / e) ? max_numel + 1 : numel * e;
      if (numel > max_numel) numel = max_numel + 1;
    }
    if (numel * static_cast<uint64_t>(a.itemsize) != a.raw.size()) {
      std::string shape;
      for (const int64_t d : a.shape) {
        if (!shape.empty()) shape += ", ";
        shape += std::to_string(d);
      }
      fail("ndarray of shape (", shape, ") and dtype ", a.dtype, " has ", a.raw.size(),
           " data bytes, expected prod(shape) * ", a.itemsize);
    }
    if (a.dtype == "|b1")
      for (const char c : a.raw)
        if (c != 0 && c != 1) fail("bool ndarray holds a byte other than 0 or 1");
  }

  void build_csr(Value* obj, const Value* state) {
    if (state->kind != Value::Kind::dict)
      fail("csr_matrix state is a ", state->type_name(), ", expected a dict");
    const Value *format = nullptr, *shape = nullptr, *indptr = nullptr, *indices = nullptr, *data = nullptr;
    const auto& it = state->items;
    for (size_t i = 0; i + 1 < it.size(); i += 2) {
      if (it[i]->kind != Value::Kind::bytes) fail("csr_matrix state has a key of type ", it[i]->type_name());
      const std::string_view key = it[i]->text;
      const Value* v = it[i + 1];
      const Value** slot = key == "format"    ? &format
                           : key == "_shape"  ? &shape
                           : key == "indptr"  ? &indptr
                           : key == "indices" ? &indices
                           : key == "data"    ? &data
                                              : nullptr;
      if (slot != nullptr) {
        if (*slot != nullptr) fail("csr_matrix state repeats the key '", key, "'");
        *slot = v;
      } else if (key == "_cs_matrix__has_sorted_indices") {
        if (v->kind != Value::Kind::boolean)
          fail("csr_matrix '", key, "' is a ", v->type_name(), ", expected a bool");
      } else if (key == "maxprint") {
        if (v->kind != Value::Kind::integer)
          fail("csr_matrix 'maxprint' is a ", v->type_name(), ", expected an int");
      } else {
        fail("csr_matrix state has the unexpected key '", printable(key), "'");
      }
    }
    for (const auto& [ptr, key] : {std::pair{format, "format"},
                                   {shape, "_shape"},
                                   {indptr, "indptr"},
                                   {indices, "indices"},
                                   {data, "data"}})
      if (ptr == nullptr) fail("csr_matrix state lacks the key '", key, "'");
    if (format->kind != Value::Kind::bytes || format->text != "csr") fail("csr_matrix 'format' is not 'csr'");
    if (shape->kind != Value::Kind::tuple || shape->items.size() != 2 ||
        shape->items[0]->kind != Value::Kind::integer || shape->items[1]->kind != Value::Kind::integer ||
        shape->items[0]->integer < 0 || shape->items[1]->integer < 0)
      fail("csr_matrix '_shape' must be a tuple of two non-negative ints");
    const int64_t rows = shape->items[0]->integer, cols = shape->items[1]->integer;
    if (cols > std::numeric_limits<int32_t>::max())
      fail("csr_matrix has ", cols, " columns, more than int32 indices hold");
    const auto vector_of = [&](const Value* v, std::string_view key, bool integer) -> const NdArray& {
      if (!is_kind(v, Value::Kind::ndarray))
        fail("csr_matrix '", key, "' is a ", v->type_name(), ", expected an ndarray");
      const NdArray& a = v->array;
      if (a.shape.size() != 1) fail("csr_matrix '", key, "' has ", a.shape.size(), " dimensions, expected 1");
      if (integer && a.dtype != "<i4" && a.dtype != "<i8")
        fail("csr_matrix '", key, "' has dtype ", a.dtype, ", expected <i4 or <i8");
      if (!integer && a.dtype != "<f4" && a.dtype != "<f8")
        fail("csr_matrix 'data' has dtype ", a.dtype, ", expected <f4 or <f8");
      return a;
    };
    const NdArray& ip = vector_of(indptr, "indptr", true);
    const NdArray& ix = vector_of(indices, "indices", true);
    const NdArray& dv = vector_of(data, "data", false);
    if (ip.numel() != rows + 1)
      fail("csr_matrix 'indptr' has ", ip.numel(), " entries, expected rows + 1 = ", rows + 1);
    const int64_t nnz = ix.numel();
    if (dv.numel() != nnz) fail("csr_matrix has ", nnz, " column indices but ", dv.numel(), " values");

    std::vector<int64_t> ptr(static_cast<size_t>(rows) + 1);
    for (int64_t r = 0; r <= rows; ++r) {
      ptr[static_cast<size_t>(r)] = ip.integer_at(r);
      const int64_t prev = r == 0 ? 0 : ptr[static_cast<size_t>(r) - 1];
      if ((r == 0 && ptr[0] != 0) || ptr[static_cast<size_t>(r)] < prev || ptr[static_cast<size_t>(r)] > nnz)
        fail("csr_matrix 'indptr'[", r, "] is ", ptr[static_cast<size_t>(r)],
             ", expected non-decreasing from 0 to nnz = ", nnz);
    }
    if (ptr.back() != nnz) fail("csr_matrix 'indptr'[", rows, "] is ", ptr.back(), ", expected nnz = ", nnz);
    std::vector<int32_t> col(static_cast<size_t>(nnz));
    std::vector<float> val(static_cast<size_t>(nnz));
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t c = ix.integer_at(k);
      if (c < 0 || c >= cols) fail("csr_matrix 'indices'[", k, "] is ", c, ", expected [0, ", cols, ")");
      col[static_cast<size_t>(k)] = static_cast<int32_t>(c);
      val[static_cast<size_t>(k)] = static_cast<float>(dv.number_at(k));
    }
    // Every csr pickle shipped with Planetoid (x, tx, allx of Cora, CiteSeer, PubMed) has sorted
    // rows and `_cs_matrix__has_sorted_indices` True; we checked all of them. scipy also allows
    // unsorted rows, so rather than trust the flag, a row found out of order is sorted here
    // (values follow their columns). Repeated columns (scipy's non-canonical form) are rejected.
    for (int64_t r = 0; r < rows; ++r) {
      const auto b = static_cast<size_t>(ptr[static_cast<size_t>(r)]),
                 e = static_cast<size_t>(ptr[static_cast<size_t>(r) + 1]);
      if (std::is_sorted(col.begin() + static_cast<std::ptrdiff_t>(b),
                         col.begin() + static_cast<std::ptrdiff_t>(e))) {
        for (size_t k = b + 1; k < e; ++k)
          if (col[k] == col[k - 1]) fail("csr_matrix row ", r, " repeats column ", col[k]);
        continue;
      }
      std::vector<std::pair<int32_t, float>> row;
      for (size_t k = b; k < e; ++k) row.emplace_back(col[k], val[k]);
      std::stable_sort(row.begin(), row.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t k = b; k < e; ++k) {
        col[k] = row[k - b].first;
        val[k] = row[k - b].second;
        if (k > b && col[k] == col[k - 1]) fail("csr_matrix row ", r, " repeats column ", col[k]);
      }
    }
    try {
      obj->csr = std::make_unique<CsrMatrix>(rows, cols, std::move(ptr), std::move(col), std::move(val),
                                             "csr_matrix");
    } catch (const Error& e) {  // unreachable after the checks above; kept so the error names the file
      fail(e.what());
    }
  }

  PickleLimits limits_;
  Pickle p_;
  std::string_view in_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  uint8_t op_ = 0;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
};

Pickle parse_pickle(std::string_view bytes, const std::string& name, const PickleLimits& limits) {
  return Unpickler(bytes, name, limits).run();
}

Pickle read_pickle(const std::filesystem::path& path, const PickleLimits& limits) {
  return parse_pickle(read_file(path), path.string(), limits);
}

}  // namespace edgeattn::data
