#include "data/pickle.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "edgeattn/core/file_io.hpp"
#include "support/expect_error.hpp"
#include "support/pickle_writer.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::PickleWriter;

std::string planetoid_file(const std::string& ds, const std::string& object) {
  return std::string(EDGEATTN_SOURCE_DIR) + "/datasets/" + ds + "/planetoid/ind." + ds + "." + object;
}

std::vector<int32_t> as_int32(std::span<const int64_t> v) { return {v.begin(), v.end()}; }
std::vector<int32_t> as_int32(std::span<const int32_t> v) { return {v.begin(), v.end()}; }

// --- the shipped files -------------------------------------------------------------------------

TEST(Pickle, CoraYIsAOneHotInt32MatrixWithTwentyNodesPerClass) {
  const Pickle p = read_pickle(planetoid_file("cora", "y"));
  const NdArray& y = p.root().as_ndarray(p.name());
  EXPECT_EQ(y.dtype, "<i4");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{140, 7}));
  std::vector<int64_t> per_class(7, 0);
  for (int64_t r = 0; r < 140; ++r) {
    int64_t ones = 0;
    for (int64_t c = 0; c < 7; ++c) {
      const int64_t v = y.integer_at(r * 7 + c);
      ASSERT_TRUE(v == 0 || v == 1);
      ones += v;
      per_class[static_cast<size_t>(c)] += v;
    }
    EXPECT_EQ(ones, 1) << "row " << r;
  }
  EXPECT_EQ(per_class, std::vector<int64_t>(7, 20));
}

TEST(Pickle, PlanetoidFeatureMatricesHaveTheRecordedShapesAndNnz) {
  struct Expected {
    const char* ds;
    const char* object;
    int64_t rows, cols, nnz;
  };
  const Expected cases[] = {
      {"cora", "x", 140, 1433, 2647},        {"cora", "tx", 1000, 1433, 17955},
      {"cora", "allx", 1708, 1433, 31261},   {"citeseer", "x", 120, 3703, 3778},
      {"citeseer", "tx", 1000, 3703, 31992}, {"citeseer", "allx", 2312, 3703, 73173},
      {"pubmed", "x", 60, 500, 2819},        {"pubmed", "tx", 1000, 500, 50140},
  };
  for (const auto& e : cases) {
    SCOPED_TRACE(std::string(e.ds) + "." + e.object);
    const Pickle p = read_pickle(planetoid_file(e.ds, e.object));
    const CsrMatrix& m = p.root().as_csr(p.name());
    EXPECT_EQ(m.rows(), e.rows);
    EXPECT_EQ(m.cols(), e.cols);
    EXPECT_EQ(m.nnz(), e.nnz);
  }
}

TEST(Pickle, CoraTxRowZeroHoldsTheWordsPythonReads) {
  // Read independently with Python's pickle module (numpy/scipy stubbed out) from ind.cora.tx.
  const Pickle p = read_pickle(planetoid_file("cora", "tx"));
  const CsrMatrix& tx = p.root().as_csr(p.name());
  const std::vector<int32_t> row0 = {311,  314,  353,  505,  510,  621,  1075, 1132,
                                     1171, 1226, 1230, 1301, 1379, 1389, 1392};
  EXPECT_EQ(as_int32(tx.row_indices(0)), row0);
  for (const float v : tx.row_values(0)) EXPECT_EQ(v, 1.f);
  EXPECT_EQ(as_int32(tx.row_indices(999)),
            (std::vector<int32_t>{30,  65,  432,  548,  570,  610,  690,  720,  724,  749,
                                  763, 993, 1058, 1143, 1150, 1170, 1177, 1205, 1274, 1392}));
}

TEST(Pickle, PubmedTxKeepsItsFloat32TfIdfValues) {
  const Pickle p = read_pickle(planetoid_file("pubmed", "tx"));
  const CsrMatrix& tx = p.root().as_csr(p.name());
  ASSERT_EQ(tx.row_indices(0).size(), 65u);
  EXPECT_EQ(tx.row_indices(0)[0], 2);
  EXPECT_EQ(tx.row_values(0)[0], 0.01934375986456871f);
  EXPECT_EQ(tx.row_indices(0)[64], 454);
  EXPECT_EQ(tx.row_values(0)[64], 0.027822621166706085f);
}

TEST(Pickle, CoraGraphIsADefaultdictOfLists) {
  const Pickle p = read_pickle(planetoid_file("cora", "graph"));
  const Value& g = p.root();
  ASSERT_EQ(g.kind, Value::Kind::defaultdict_list);
  ASSERT_EQ(g.items.size(), 2u * 2708);
  EXPECT_EQ(g.items[0]->as_int(p.name()), 0);
  const Value& first = *g.items[1];
  ASSERT_EQ(first.kind, Value::Kind::list);
  ASSERT_EQ(first.items.size(), 3u);
  EXPECT_EQ(first.items[0]->integer, 633);
  EXPECT_EQ(first.items[1]->integer, 1862);
  EXPECT_EQ(first.items[2]->integer, 2582);
  EXPECT_EQ(g.items[2 * 2707]->integer, 2707);
}

// The test writer reproduces the shipped files byte for byte, so the synthetic pickles other tests
// write (PubMed's allx) have exactly the Planetoid layout.
TEST(Pickle, WriterReproducesTheShippedFilesByteForByte) {
  {
    const std::string bytes = read_file(planetoid_file("cora", "x"));
    const Pickle p = parse_pickle(bytes, "ind.cora.x");
    const CsrMatrix& x = p.root().as_csr(p.name());
    EXPECT_EQ(testing::csr_pickle(x.rows(), x.cols(), as_int32(x.indptr()), as_int32(x.indices()),
                                  std::vector<float>(x.values().begin(), x.values().end())),
              bytes);
  }
  {
    const std::string bytes = read_file(planetoid_file("citeseer", "ty"));
    const Pickle p = parse_pickle(bytes, "ind.citeseer.ty");
    const NdArray& y = p.root().as_ndarray(p.name());
    std::vector<int32_t> v(static_cast<size_t>(y.numel()));
    for (int64_t k = 0; k < y.numel(); ++k) v[static_cast<size_t>(k)] = static_cast<int32_t>(y.integer_at(k));
    EXPECT_EQ(testing::int32_matrix_pickle(y.shape[0], y.shape[1], v), bytes);
  }
  {
    const std::string bytes = read_file(planetoid_file("cora", "graph"));
    const Pickle p = parse_pickle(bytes, "ind.cora.graph");
    std::vector<std::vector<int64_t>> lists;
    for (size_t i = 0; i < p.root().items.size(); i += 2) {
      auto& l = lists.emplace_back();
      for (const Value* v : p.root().items[i + 1]->items) l.push_back(v->integer);
    }
    EXPECT_EQ(testing::graph_pickle(lists), bytes);
  }
}

// --- truncation --------------------------------------------------------------------------------

void expect_every_prefix_rejected(const std::string& object) {
  const std::string bytes = read_file(planetoid_file("cora", object));
  ASSERT_NO_THROW((void)parse_pickle(bytes, "whole"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      (void)parse_pickle(std::string_view(bytes).substr(0, n), "prefix");
      ADD_FAILURE() << "prefix of " << n << " bytes was accepted";
    } catch (const ParseError& e) {
      ASSERT_NE(std::string(e.what()).find("prefix: byte "), std::string::npos) << e.what();
    }
  }
}

TEST(Pickle, EveryPrefixOfCoraYIsRejected) { expect_every_prefix_rejected("y"); }
TEST(Pickle, EveryPrefixOfCoraXIsRejected) { expect_every_prefix_rejected("x"); }

TEST(Pickle, TruncationNamesTheOffsetAndWhatIsMissing) {
  const std::string bytes = read_file(planetoid_file("cora", "y"));
  // ind.cora.y's BINSTRING opcode is at byte 126 (pickletools.dis); cut inside its payload.
  expect_throw_naming<ParseError>(
      [&] { (void)parse_pickle(std::string_view(bytes).substr(0, 200), "ind.cora.y"); },
      {"ind.cora.y: byte 126", "BINSTRING", "claims 3920 bytes", "only 69 remain"});
  expect_throw_naming<ParseError>(
      [&] { (void)parse_pickle(std::string_view(bytes).substr(0, bytes.size() - 1), "ind.cora.y"); },
      {"ends before STOP"});
}

// --- hostile input -----------------------------------------------------------------------------

TEST(Pickle, RejectsAGlobalOutsideTheAllowList) {
  PickleWriter w;
  w.proto().global("os", "system").str("echo pwned").tuple_n(1).reduce().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(w.bytes, "evil.pkl"); },
                                  {"evil.pkl: byte 2", "GLOBAL", "os.system", "not accepted"});
}

TEST(Pickle, RejectsAnAllowedGlobalCalledInAnotherWay) {
  PickleWriter w;  // numpy.dtype('O', 0, 1): an object dtype
  w.proto().global("numpy", "dtype").str("O").integer(0).integer(1).tuple_n(3).reduce().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(w.bytes, "f"); }, {"REDUCE", "dtype 'O'"});
  PickleWriter v;  // defaultdict(ndarray)
  v.proto().global("collections", "defaultdict").global("numpy", "ndarray").tuple_n(1).reduce().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(v.bytes, "f"); }, {"defaultdict expects"});
  PickleWriter u;  // list() called through REDUCE
  u.proto().global("__builtin__", "list").empty_tuple().reduce().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(u.bytes, "f"); },
                                  {"REDUCE of global __builtin__.list"});
}

TEST(Pickle, RejectsOpcodesOutsideTheSubsetByName) {
  PickleWriter w;
  w.proto().op('X').le(3, 4).raw_byte('a').raw_byte('b').raw_byte('c').stop();  // BINUNICODE
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(w.bytes, "f"); },
                                  {"f: byte 2", "BINUNICODE (0x58)", "not accepted"});
  PickleWriter v;
  v.proto().op(0xff).stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(v.bytes, "f"); },
                                  {"byte 2", "unknown opcode 0xff"});
  PickleWriter u;
  u.proto().op('j').le(0, 4).stop();  // LONG_BINGET is a real opcode Planetoid never uses
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(u.bytes, "f"); }, {"LONG_BINGET"});
}

TEST(Pickle, RequiresProtocolTwoAtTheStartAndNothingAfterStop) {
  expect_throw_naming<ParseError>([] { (void)parse_pickle("N.", "f"); }, {"byte 0", "expected PROTO 2"});
  expect_throw_naming<ParseError>([] { (void)parse_pickle("\x80\x03N.", "f"); }, {"protocol 3"});
  expect_throw_naming<ParseError>([] { (void)parse_pickle("\x80\x02N.N", "f"); },
                                  {"byte 3", "STOP", "1 trailing bytes"});
  expect_throw_naming<ParseError>([] { (void)parse_pickle("", "f"); }, {"empty file"});
}

TEST(Pickle, RejectsHugeClaimedLengths) {
  PickleWriter w;
  w.proto().op('T').le(0x7fffffff, 4).raw_byte('x').stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(w.bytes, "f"); },
                                  {"byte 2", "BINSTRING", "claims 2147483647 bytes"});
  PickleWriter n;
  n.proto().op('T').le(0xfffffff0, 4).stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(n.bytes, "f"); }, {"negative string length -16"});
}

std::string ndarray_with_shape(std::vector<int64_t> shape, const std::string& raw) {
  PickleWriter w;
  w.proto();
  testing::NdarrayEmitter nd{w, 1};
  nd.emit(shape, "i4", raw);
  w.stop();
  return w.bytes;
}

TEST(Pickle, ChecksNdarrayByteLengthAgainstItsShape) {
  EXPECT_NO_THROW((void)parse_pickle(ndarray_with_shape({2, 3}, std::string(24, '\0')), "f"));
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(ndarray_with_shape({2, 3}, std::string(20, '\0')), "f");
      },
      {"BUILD", "shape (2, 3)", "has 20 data bytes"});
  // A product that overflows 64 bits must not wrap around to the byte count.
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(ndarray_with_shape({int64_t{1} << 30, int64_t{1} << 30, int64_t{1} << 30, 16},
                                              std::string(16, '\0')),
                           "f");
      },
      {"has 16 data bytes"});
}

TEST(Pickle, RejectsMemoIndicesThatWereNeverStored) {
  PickleWriter w;
  w.proto().none().put(1).get(7).stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(w.bytes, "f"); },
                                  {"byte 5", "BINGET", "memo index 7"});
}

TEST(Pickle, RejectsStackUnderflowAndUnbalancedMarks) {
  PickleWriter a;
  a.proto().none().tuple_n(2).stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(a.bytes, "f"); },
                                  {"TUPLE2", "stack underflow", "needs 2 values, found 1"});
  PickleWriter b;
  b.proto().empty_list().mark().append().stop();  // APPEND may not reach below the MARK
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(b.bytes, "f"); },
                                  {"APPEND", "above the last MARK"});
  PickleWriter c;
  c.proto().none().tuple().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(c.bytes, "f"); }, {"TUPLE", "no MARK"});
  PickleWriter d;
  d.proto().mark().none().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(d.bytes, "f"); }, {"STOP", "1 unclosed MARK"});
  PickleWriter e;
  e.proto().none().none().stop();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(e.bytes, "f"); },
                                  {"STOP", "2 values on the stack"});
  PickleWriter f;
  f.proto().put(0);
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(f.bytes, "f"); }, {"BINPUT", "stack underflow"});
}

TEST(Pickle, DeepNestingIsBoundedOrHarmless) {
  PickleLimits limits;
  limits.max_mark_depth = 8;
  PickleWriter marks;
  marks.proto();
  for (int i = 0; i < 9; ++i) marks.mark();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(marks.bytes, "f", limits); },
                                  {"byte 10", "MARKs nest deeper than 8"});

  // 100000 nested lists parse without recursion (nothing walks the tree recursively, and the
  // arena frees it flat).
  PickleWriter lists;
  lists.proto();
  for (int i = 0; i < 100000; ++i) lists.empty_list();
  for (int i = 0; i < 99999; ++i) lists.append();
  lists.stop();
  const Pickle p = parse_pickle(lists.bytes, "f");
  EXPECT_EQ(p.root().kind, Value::Kind::list);
  expect_throw_naming<ParseError>([&] { (void)p.root().as_csr(p.name()); },
                                  {"f: byte 2", "expected a scipy.sparse.csr_matrix, found list"});
}

TEST(Pickle, StackAndValueCountsAreLimited) {
  PickleLimits limits;
  limits.max_stack = 100;
  PickleWriter w;
  w.proto();
  for (int i = 0; i < 101; ++i) w.none();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(w.bytes, "f", limits); },
                                  {"stack grows beyond 100"});
  limits = {};
  limits.max_values = 50;
  PickleWriter v;
  v.proto().empty_list();
  for (int i = 0; i < 60; ++i) v.none().append();
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(v.bytes, "f", limits); }, {"more than 50 values"});
}

TEST(Pickle, SelfReferencingListsNeitherLeakNorLoop) {
  PickleWriter w;  // l = []; l.append(l)
  w.proto().empty_list().put(1).get(1).append().stop();
  const Pickle p = parse_pickle(w.bytes, "f");
  ASSERT_EQ(p.root().items.size(), 1u);
  EXPECT_EQ(p.root().items[0], &p.root());
}

// --- csr_matrix state ----------------------------------------------------------------------------

TEST(Pickle, SortsUnsortedCsrRowsWithTheirValues) {
  const Pickle p =
      parse_pickle(testing::csr_pickle(2, 4, {0, 3, 4}, {3, 0, 2, 1}, {1.f, 2.f, 3.f, 4.f}), "f");
  const CsrMatrix& m = p.root().as_csr(p.name());
  EXPECT_EQ(as_int32(m.row_indices(0)), (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(std::vector<float>(m.row_values(0).begin(), m.row_values(0).end()),
            (std::vector<float>{2.f, 3.f, 1.f}));
  EXPECT_EQ(as_int32(m.row_indices(1)), (std::vector<int32_t>{1}));
}

TEST(Pickle, RejectsInconsistentCsrArrays) {
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(testing::csr_pickle(2, 4, {0, 2, 2}, {1, 1}, {1.f, 1.f}), "m.pkl");
      },
      {"m.pkl: byte", "BUILD", "row 0 repeats column 1"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(testing::csr_pickle(2, 4, {0, 1, 2}, {1, 4}, {1.f, 1.f}), "m.pkl");
      },
      {"'indices'[1] is 4", "[0, 4)"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(testing::csr_pickle(3, 4, {0, 1, 2}, {1, 2}, {1.f, 1.f}), "m.pkl");
      },
      {"'indptr' has 3 entries, expected rows + 1 = 4"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(testing::csr_pickle(2, 4, {0, 2, 1}, {1, 2}, {1.f, 1.f}), "m.pkl");
      },
      {"'indptr'[2] is 1"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_pickle(testing::csr_pickle(2, 4, {0, 1, 2}, {1, 2}, {1.f}), "m.pkl");
      },
      {"2 column indices but 1 values"});
}

TEST(Pickle, RejectsUnexpectedCsrStateKeysAndASecondBuild) {
  std::string bytes = testing::csr_pickle(1, 1, {0, 0}, {}, {});
  const size_t at = bytes.find("maxprint");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 8, "maxprinT");
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(bytes, "f"); }, {"unexpected key 'maxprinT'"});

  std::string twice = testing::csr_pickle(1, 1, {0, 0}, {}, {});
  twice.insert(twice.size() - 1, "}b");  // EMPTY_DICT BUILD on the finished matrix
  expect_throw_naming<ParseError>([&] { (void)parse_pickle(twice, "f"); },
                                  {"BUILD on a scipy.sparse.csr_matrix"});
}

}  // namespace
}  // namespace edgeattn::data
