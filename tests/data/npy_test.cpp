#include "edgeattn/data/npy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::make_zip;
using edgeattn::testing::npy_bytes;
using edgeattn::testing::raw;

const std::string kCora = std::string(EDGEATTN_SOURCE_DIR) + "/datasets/cora/npz/cora.npz";

// --- .npy -------------------------------------------------------------------------------------

TEST(Npy, ParsesAFloat32Matrix) {
  const NpyArray a = parse_npy(npy_bytes("<f4", {2, 3}, raw<float>({1, 2, 3, 4, 5, 6.5f})), "m.npy");
  EXPECT_EQ(a.dtype.kind, 'f');
  EXPECT_EQ(a.dtype.itemsize, 4);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(a.to_floats(), (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
  expect_throw_naming<ParseError>([&] { (void)a.to_int64s(); }, {"m.npy", "element 5", "6.5"});
}

TEST(Npy, ConvertsEveryIntegerDtypeToInt64) {
  EXPECT_EQ(parse_npy(npy_bytes("|i1", {3}, raw<int8_t>({-1, 0, 127})), "a").to_int64s(),
            (std::vector<int64_t>{-1, 0, 127}));
  EXPECT_EQ(parse_npy(npy_bytes("<i1", {1}, raw<int8_t>({-128})), "a").to_int64s(),
            (std::vector<int64_t>{-128}));
  EXPECT_EQ(parse_npy(npy_bytes("<i2", {2}, raw<int16_t>({-300, 300})), "a").to_int64s(),
            (std::vector<int64_t>{-300, 300}));
  EXPECT_EQ(parse_npy(npy_bytes("<i4", {2}, raw<int32_t>({-70000, 70000})), "a").to_int64s(),
            (std::vector<int64_t>{-70000, 70000}));
  EXPECT_EQ(parse_npy(npy_bytes("<i8", {1}, raw<int64_t>({-5000000000})), "a").to_int64s(),
            (std::vector<int64_t>{-5000000000}));
  EXPECT_EQ(parse_npy(npy_bytes("|u1", {1}, raw<uint8_t>({255})), "a").to_int64s(),
            (std::vector<int64_t>{255}));
  EXPECT_EQ(parse_npy(npy_bytes("<u1", {1}, raw<uint8_t>({200})), "a").to_int64s(),
            (std::vector<int64_t>{200}));
  EXPECT_EQ(parse_npy(npy_bytes("<u2", {1}, raw<uint16_t>({65535})), "a").to_int64s(),
            (std::vector<int64_t>{65535}));
  EXPECT_EQ(parse_npy(npy_bytes("<u4", {1}, raw<uint32_t>({4000000000u})), "a").to_int64s(),
            (std::vector<int64_t>{4000000000}));
  EXPECT_EQ(parse_npy(npy_bytes("<u8", {1}, raw<uint64_t>({1ull << 40})), "a").to_int64s(),
            (std::vector<int64_t>{int64_t{1} << 40}));
  EXPECT_EQ(parse_npy(npy_bytes("|b1", {3}, raw<uint8_t>({1, 0, 1})), "a").to_int64s(),
            (std::vector<int64_t>{1, 0, 1}));
}

TEST(Npy, WholeFloatsConvertToInt64ButFractionsAndNanDoNot) {
  EXPECT_EQ(parse_npy(npy_bytes("<f8", {2}, raw<double>({3.0, -1.0})), "y.npy").to_int64s(),
            (std::vector<int64_t>{3, -1}));
  const NpyArray frac = parse_npy(npy_bytes("<f4", {2}, raw<float>({1.f, 2.5f})), "y.npy");
  expect_throw_naming<ParseError>([&] { (void)frac.to_int64s(); }, {"y.npy", "element 1", "2.5", "whole"});
  const NpyArray nan = parse_npy(npy_bytes("<f8", {1}, raw<double>({std::nan("")})), "y.npy");
  expect_throw_naming<ParseError>([&] { (void)nan.to_int64s(); }, {"y.npy", "element 0"});
  const NpyArray big = parse_npy(npy_bytes("<u8", {1}, raw<uint64_t>({~0ull})), "u.npy");
  expect_throw_naming<ParseError>([&] { (void)big.to_int64s(); }, {"u.npy", "int64"});
}

TEST(Npy, Float16WholeNumbersConvertToInt64ReadingTwoBytesEach) {
  // float16 1.0, -2.0, 2048.0: 0x3c00, 0xc000, 0x6800. They were read as 8-byte doubles, past
  // the array's end (a segfault on a large member).
  EXPECT_EQ(parse_npy(npy_bytes("<f2", {3}, raw<uint16_t>({0x3c00, 0xc000, 0x6800})), "h.npy").to_int64s(),
            (std::vector<int64_t>{1, -2, 2048}));
  const NpyArray half =
      parse_npy(npy_bytes("<f2", {2}, raw<uint16_t>({0x3c00, 0x3e00})), "h.npy");  // 1.0, 1.5
  expect_throw_naming<ParseError>([&] { (void)half.to_int64s(); }, {"h.npy", "element 1", "1.5", "whole"});
  // A long float16 array: every element read in bounds (under ASan a past-the-end read fails).
  const std::vector<uint16_t> zeros(100000, 0);
  const std::vector<int64_t> got =
      parse_npy(npy_bytes("<f2", {100000}, raw<uint16_t>(zeros)), "z.npy").to_int64s();
  EXPECT_EQ(got, std::vector<int64_t>(100000, 0));
}

TEST(Npy, Float64AndIntegersConvertToFloats) {
  EXPECT_EQ(parse_npy(npy_bytes("<f8", {2}, raw<double>({0.5, -2.0})), "a").to_floats(),
            (std::vector<float>{0.5f, -2.f}));
  EXPECT_EQ(parse_npy(npy_bytes("<i2", {2}, raw<int16_t>({-3, 7})), "a").to_floats(),
            (std::vector<float>{-3.f, 7.f}));
  EXPECT_EQ(parse_npy(npy_bytes("|b1", {2}, raw<uint8_t>({0, 1})), "a").to_doubles(),
            (std::vector<double>{0.0, 1.0}));
}

TEST(Npy, DecodesUnicodeAndByteStrings) {
  // "é" is U+00E9, "€" U+20AC, "😀" U+1F600: 2, 3 and 4 UTF-8 bytes.
  const std::vector<uint32_t> cps = {'a', 'b', 0, 0, 0xE9, 0x20AC, 0x1F600, 0, 0, 0, 0, 0};
  const NpyArray u = parse_npy(npy_bytes("<U4", {3}, raw<uint32_t>(cps)), "names.npy");
  EXPECT_EQ(u.dtype.itemsize, 16);
  EXPECT_EQ(u.to_strings(), (std::vector<std::string>{"ab", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", ""}));
  const NpyArray s = parse_npy(npy_bytes("|S3", {2}, std::string("ab\0xyz", 6)), "s.npy");
  EXPECT_EQ(s.to_strings(), (std::vector<std::string>{"ab", "xyz"}));
  expect_throw_naming<ParseError>([&] { (void)u.to_floats(); }, {"names.npy", "numeric", "<U4"});
  const NpyArray f = parse_npy(npy_bytes("<f4", {1}, raw<float>({1})), "f.npy");
  expect_throw_naming<ParseError>([&] { (void)f.to_strings(); }, {"f.npy", "string", "<f4"});
  const NpyArray bad = parse_npy(npy_bytes("<U1", {1}, raw<uint32_t>({0xD800})), "bad.npy");
  expect_throw_naming<ParseError>([&] { (void)bad.to_strings(); }, {"bad.npy", "element 0", "d800"});
}

TEST(Npy, SwapsBigEndianArrays) {
  const std::string be_i4("\x00\x00\x01\x02\xff\xff\xff\xfe", 8);  // 258, -2
  EXPECT_EQ(parse_npy(npy_bytes(">i4", {2}, be_i4), "a").to_int64s(), (std::vector<int64_t>{258, -2}));
  const std::string be_f8("\x3f\xf8\x00\x00\x00\x00\x00\x00", 8);  // 1.5
  EXPECT_EQ(parse_npy(npy_bytes(">f8", {1}, be_f8), "a").to_doubles(), (std::vector<double>{1.5}));
  const std::string be_u("\x00\x00\x00\x68\x00\x00\x00\x69", 8);  // "hi"
  EXPECT_EQ(parse_npy(npy_bytes(">U2", {1}, be_u), "a").to_strings(), (std::vector<std::string>{"hi"}));
}

TEST(Npy, TransposesFortranOrderToRowMajor) {
  // Fortran order of [[1, 2, 3], [4, 5, 6]] is 1 4 2 5 3 6.
  const NpyArray a = parse_npy(npy_bytes("<i4", {2, 3}, raw<int32_t>({1, 4, 2, 5, 3, 6}), true), "f.npy");
  EXPECT_EQ(a.to_int64s(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  // 3-d [2, 2, 2]: element (i, j, k) has value 100i + 10j + k; Fortran order varies i fastest.
  std::vector<int32_t> f;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) f.push_back(100 * i + 10 * j + k);
  const NpyArray b = parse_npy(npy_bytes("<i4", {2, 2, 2}, raw<int32_t>(f), true), "f3.npy");
  EXPECT_EQ(b.to_int64s(), (std::vector<int64_t>{0, 1, 10, 11, 100, 101, 110, 111}));
}

TEST(Npy, ReadsVersions2And3AndScalarsAndEmptyArrays) {
  EXPECT_EQ(parse_npy(npy_bytes("<i8", {2}, raw<int64_t>({7, 8}), false, 2), "v2").to_int64s(),
            (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(parse_npy(npy_bytes("<i8", {1}, raw<int64_t>({9}), false, 3), "v3").to_int64s(),
            (std::vector<int64_t>{9}));
  const NpyArray scalar = parse_npy(npy_bytes("<f8", {}, raw<double>({2.5})), "s");
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.to_doubles(), (std::vector<double>{2.5}));
  const NpyArray empty = parse_npy(npy_bytes("<f4", {0, 5}, ""), "e");
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.to_floats().empty());
}

TEST(Npy, AcceptsPython2LongExtentsAndAnyKeyOrder) {
  std::string header = "{'shape': (2L,), 'fortran_order': False, 'descr': '<i2'}";
  header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
  const std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' +
                            header + raw<int16_t>({5, 6});
  EXPECT_EQ(parse_npy(bytes, "py2").to_int64s(), (std::vector<int64_t>{5, 6}));
}

TEST(Npy, RejectsPickledObjectsWithoutUnpickling) {
  expect_throw_naming<ParseError>([] { (void)parse_npy(npy_bytes("|O", {1}, "\x80\x02N."), "obj.npy"); },
                                  {"obj.npy", "'|O'", "pickled", "never unpickles"});
}

TEST(Npy, RejectsMalformedHeadersNamingTheProblem) {
  expect_throw_naming<ParseError>([] { (void)parse_npy("PK\x03\x04 not npy", "x.npy"); },
                                  {"x.npy", "magic", "byte offset 0"});
  expect_throw_naming<ParseError>(
      [] {
        std::string b = npy_bytes("<f4", {1}, raw<float>({1}));
        b[6] = 4;
        parse_npy(b, "v.npy");
      },
      {"v.npy", "version 4.0"});
  auto with_header = [](std::string header) {
    header += "\n";
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  };
  expect_throw_naming<ParseError>(
      [&] { (void)parse_npy(with_header("{'descr': '<f4', 'shape': (0,)}"), "h.npy"); },
      {"h.npy", "missing key 'fortran_order'"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), 'x': 1}"),
                        "h.npy");
      },
      {"h.npy", "unexpected header key 'x'"});
  expect_throw_naming<ParseError>(
      [&] { (void)parse_npy(with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (0,)}"), "h.npy"); },
      {"h.npy", "True or False"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"), "h.npy");
      },
      {"h.npy", "non-negative integer"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (0,)}"),
                        "h.npy");
      },
      {"h.npy", "structured"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': '<f16', 'fortran_order': False, 'shape': (0,)}"), "h.npy");
      },
      {"h.npy", "'<f16'", "float16 ('<f2'), float32"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (0,)}"), "h.npy");
      },
      {"h.npy", "'<c8'", "not a supported dtype"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': '|i4', 'fortran_order': False, 'shape': (0,)}"), "h.npy");
      },
      {"h.npy", "byte order"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)parse_npy(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0,)} junk"), "h.npy");
      },
      {"h.npy", "after the header dict"});
}

TEST(Npy, RejectsDataWhoseLengthDisagreesWithTheShape) {
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_npy(npy_bytes("<f4", {2, 3}, raw<float>({1, 2, 3, 4, 5})), "d.npy");
      },
      {"d.npy", "20 bytes, expected 24", "(2, 3)", "'<f4'"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_npy(npy_bytes("<i8", {2}, raw<int64_t>({1, 2, 3})), "d.npy");
      },
      {"d.npy", "24 bytes, expected 16"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_npy(npy_bytes("<i8", {1000000000, 1000000000, 1000000000}, raw<int64_t>({1})), "d.npy");
      },
      {"d.npy", "expected more"});
  std::string truncated = npy_bytes("<f4", {1}, raw<float>({1}));
  truncated.resize(20);
  expect_throw_naming<ParseError>([&] { (void)parse_npy(truncated, "t.npy"); },
                                  {"t.npy", "header", "declares"});
}

// --- .npz -------------------------------------------------------------------------------------

TEST(Npz, ReadsTheShippedCoraArchive) {
  const auto arrays = read_npz(kCora);
  ASSERT_EQ(arrays.size(), 11u);
  EXPECT_EQ(arrays.at("adj_shape").to_int64s(), (std::vector<int64_t>{2708, 2708}));
  EXPECT_EQ(arrays.at("adj_indices").numel(), 5429);
  EXPECT_EQ(arrays.at("attr_shape").to_int64s(), (std::vector<int64_t>{2708, 1433}));
  EXPECT_EQ(arrays.at("attr_data").numel(), 49216);
  EXPECT_EQ(arrays.at("labels").dtype.descr, "|i1");
  EXPECT_EQ(arrays.at("node_names").dtype.descr, "<U7");
  const auto classes = arrays.at("class_names").to_strings();
  ASSERT_EQ(classes.size(), 7u);
  EXPECT_EQ(std::count(classes.begin(), classes.end(), "Neural_Networks"), 1);
  EXPECT_EQ(arrays.at("labels").to_int64s().size(), 2708u);
}

TEST(Npz, StoredDeflatedAndZip64MembersReadTheSame) {
  const std::string a = npy_bytes("<f8", {3}, raw<double>({1.5, 2.5, -3}));
  const std::string b = npy_bytes("<i4", {2, 2}, raw<int32_t>({1, 2, 3, 4}));
  const std::vector<std::vector<edgeattn::testing::ZipEntry>> layouts = {
      {{.name = "a.npy", .data = a}, {.name = "b.npy", .data = b}},
      {{.name = "a.npy", .data = a, .deflate = true}, {.name = "b.npy", .data = b, .deflate = true}},
      {{.name = "a.npy", .data = a, .local_zip64 = true},
       {.name = "b.npy", .data = b, .deflate = true, .local_zip64 = true}},
      {{.name = "a.npy", .data = a, .deflate = true, .local_zip64 = true, .central_zip64 = true},
       {.name = "b.npy", .data = b, .central_zip64 = true}},
      {{.name = "a.npy", .data = a, .deflate = true, .descriptor = true},
       {.name = "b.npy", .data = b, .deflate = true, .local_zip64 = true, .descriptor = true}},
  };
  for (size_t i = 0; i < layouts.size(); ++i) {
    for (const bool zip64_end : {false, true}) {
      SCOPED_TRACE("layout " + std::to_string(i) + (zip64_end ? " with a ZIP64 end record" : ""));
      const auto arrays = parse_npz(make_zip(layouts[i], zip64_end), "t.npz");
      ASSERT_EQ(arrays.size(), 2u);
      EXPECT_EQ(arrays.at("a").to_doubles(), (std::vector<double>{1.5, 2.5, -3}));
      EXPECT_EQ(arrays.at("b").shape, (std::vector<int64_t>{2, 2}));
      EXPECT_EQ(arrays.at("b").to_int64s(), (std::vector<int64_t>{1, 2, 3, 4}));
      EXPECT_EQ(arrays.at("b").name, "t.npz:b.npy");
    }
  }
}

TEST(Npz, ReadsArchivesWrittenByPythonZipfileAsNumpyDoes) {
  // Written by Python's zipfile with force_zip64=True, as numpy.savez does (the streamed one to a
  // non-seekable file, so it carries data descriptors); see tests/data/fixtures/npz/README.md.
  for (const char* file : {"tiny_stored.npz", "tiny_deflated.npz", "tiny_streamed.npz"}) {
    SCOPED_TRACE(file);
    const auto arrays = read_npz(std::string(EDGEATTN_SOURCE_DIR) + "/tests/data/fixtures/npz/" + file);
    ASSERT_EQ(arrays.size(), 11u);
    EXPECT_EQ(arrays.at("adj_data").to_floats(), (std::vector<float>{1, 1, 1, 2.5f, 1}));
    EXPECT_EQ(arrays.at("adj_indptr").to_int64s(), (std::vector<int64_t>{0, 1, 3, 4, 5}));
    EXPECT_EQ(arrays.at("node_names").to_strings(), (std::vector<std::string>{"n0", "n1",
                                                                              "n\xC3\xA9"
                                                                              "2",
                                                                              "n3"}));
  }
}

TEST(Npz, RejectsMembersThatAreNotNpy) {
  const std::string zip = make_zip({{.name = "readme.txt", .data = "hello"}});
  expect_throw_naming<ParseError>([&] { (void)parse_npz(zip, "r.npz"); },
                                  {"r.npz", "readme.txt", "not an .npy array"});
}

TEST(Npz, MissingFileIsAnIoErrorNamingIt) {
  expect_throw_naming<IoError>([] { (void)read_npz("/nonexistent/dir/x.npz"); }, {"/nonexistent/dir/x.npz"});
}

TEST(Npy, ToFloatsIntoASpanMatchesTheVectorFormAndChecksTheSize) {
  const NpyArray f8 = parse_npy(npy_bytes("<f8", {3}, raw<double>({0.1, -2.5, 1e40})), "d");
  const NpyArray i8 = parse_npy(npy_bytes("<i8", {2}, raw<int64_t>({-3, 16777217})), "i");
  for (const NpyArray* a : {&f8, &i8}) {
    std::vector<float> out(static_cast<size_t>(a->numel()));
    a->to_floats(out);
    EXPECT_EQ(out, a->to_floats());
  }
  std::vector<float> short_out(2);
  expect_throw_naming<InvalidArgument>([&] { f8.to_floats(short_out); }, {"d", "2", "3"});
}

TEST(Npy, ParsingAnOwnedBufferEqualsParsingAView) {
  const std::string bytes = npy_bytes(">i4", {2, 2}, raw<int32_t>({0x01000000, 2, 3, 4}), true);
  const NpyArray viewed = parse_npy(std::string_view(bytes), "v");
  const NpyArray owned = parse_npy(std::string(bytes), "v");
  EXPECT_EQ(owned.bytes, viewed.bytes);
  EXPECT_EQ(owned.shape, viewed.shape);
  EXPECT_EQ(owned.to_int64s(), viewed.to_int64s());
}

}  // namespace
}  // namespace edgeattn::data
