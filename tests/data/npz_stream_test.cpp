// Streaming .npz members (data/npz_stream.hpp): the catalog from headers alone, streamed bytes
// equal to read_npz's for stored and deflated members in any chunking, skip, float16, and the
// errors: unknown key, CRC mismatch, reading past the end, arrays that cannot stream.
#include "edgeattn/data/npz_stream.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::make_zip;
using edgeattn::testing::npy_bytes;
using edgeattn::testing::raw;

class NpzStream : public ::testing::Test {
 protected:
  void SetUp() override {
    big_.resize(400'000);  // 3.2 MB of int64: several inflate calls and a skip across chunks
    std::iota(big_.begin(), big_.end(), int64_t{-1000});
    write("a.npz",
          {{.name = "big.npy", .data = npy_bytes("<i8", {2, 200'000}, raw(big_)), .deflate = true},
           {.name = "small.npy", .data = npy_bytes("<f4", {3}, raw<float>({1.5f, -2, 3})), .deflate = false},
           {.name = "half.npy",
            .data = npy_bytes("<f2", {2, 2}, raw<uint16_t>({0x3c00, 0xc000, 0x7bff, 0x0001})),
            .deflate = true}});
  }
  std::filesystem::path write(const std::string& name,
                              const std::vector<edgeattn::testing::ZipEntry>& entries) {
    const auto p = dir_ / name;
    write_file_atomic(p, make_zip(entries));
    return p;
  }
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }

  edgeattn::testing::TempDir dir_;
  std::vector<int64_t> big_;
};

TEST_F(NpzStream, TheCatalogComesFromTheHeadersAlone) {
  const std::vector<NpzMemberInfo> c = npz_catalog(path("a.npz"));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].key, "big");
  EXPECT_EQ(c[0].dtype.descr, "<i8");
  EXPECT_EQ(c[0].shape, (std::vector<int64_t>{2, 200'000}));
  EXPECT_EQ(c[0].data_bytes, 3'200'000u);
  EXPECT_TRUE(c[0].compressed);
  EXPECT_LT(c[0].stored_bytes, c[0].data_bytes);  // deflated
  EXPECT_EQ(c[0].numel(), 400'000);
  EXPECT_EQ(c[1].key, "small");
  EXPECT_FALSE(c[1].compressed);
  EXPECT_EQ(c[2].dtype.descr, "<f2");
}

TEST_F(NpzStream, StreamedBytesEqualTheWholeArrayInAnyChunking) {
  for (const size_t chunk : {size_t{7}, size_t{4096}, size_t{1} << 20, size_t{4} << 20}) {
    NpyStream s(path("a.npz"), "big");
    std::vector<std::byte> got;
    std::vector<std::byte> buf(chunk);
    while (const size_t n = s.read(buf))
      got.insert(got.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
    ASSERT_EQ(got.size(), big_.size() * 8) << chunk;
    EXPECT_EQ(std::memcmp(got.data(), big_.data(), got.size()), 0) << chunk;
    EXPECT_EQ(s.remaining(), 0u);
    EXPECT_EQ(s.read(buf), 0u);
  }
  NpyStream stored(path("a.npz"), "small");
  std::vector<float> v(3);
  stored.read_exact(std::as_writable_bytes(std::span(v)));
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2, 3}));
}

TEST_F(NpzStream, SkipMovesForwardAcrossChunks) {
  NpyStream s(path("a.npz"), "big");
  s.skip(200'000 * 8 + 3 * 8);  // row 1, element 3
  EXPECT_EQ(s.position(), 200'003u * 8);
  int64_t v[2];
  s.read_exact(std::as_writable_bytes(std::span(v)));
  EXPECT_EQ(v[0], big_[200'003]);
  EXPECT_EQ(v[1], big_[200'004]);
  expect_throw_naming<ParseError>([&] { s.skip(uint64_t{1} << 40); }, {"a.npz:big.npy", "cannot skip"});
  std::vector<std::byte> too_many(s.remaining() + 1);
  expect_throw_naming<ParseError>([&] { s.read_exact(too_many); }, {"a.npz:big.npy", "only"});
}

TEST_F(NpzStream, HalfPrecisionWidensExactly) {
  EXPECT_EQ(half_to_float(0x3c00), 1.f);
  EXPECT_EQ(half_to_float(0xc000), -2.f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x8000), -0.f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x7c00), INFINITY);
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  // And whole arrays of '<f2' load through read_npz.
  const auto arrays = read_npz(path("a.npz"));
  EXPECT_EQ(arrays.at("half").to_floats(), (std::vector<float>{1, -2, 65504, std::ldexp(1.f, -24)}));
}

TEST_F(NpzStream, ErrorsNameTheArchiveAndMember) {
  expect_throw_naming<InvalidArgument>([&] { NpyStream(path("a.npz"), "nope"); },
                                       {"a.npz", "no member 'nope'", "big, small, half"});
  expect_throw_naming<IoError>([&] { NpyStream(path("missing.npz"), "x"); }, {"missing.npz", "no such file"});
  // A flipped element byte in a stored member: the CRC catches it when the end is reached.
  std::string npy = npy_bytes("<i4", {4}, raw<int32_t>({1, 2, 3, 4}));
  std::string zip = make_zip({{.name = "x.npy", .data = npy}});
  zip[zip.find(npy) + npy.size() - 1] ^= 0x40;
  write_file_atomic(path("bad.npz"), zip);
  NpyStream s(path("bad.npz"), "x");
  std::vector<std::byte> all(16);
  expect_throw_naming<ParseError>([&] { s.read_exact(all); }, {"bad.npz:x.npy", "CRC-32 mismatch"});
  write("fortran.npz", {{.name = "f.npy", .data = npy_bytes("<f4", {2, 2}, raw<float>({1, 2, 3, 4}), true)}});
  expect_throw_naming<ParseError>([&] { NpyStream(path("fortran.npz"), "f"); },
                                  {"fortran.npz:f.npy", "fortran_order"});
  write("big_endian.npz", {{.name = "b.npy", .data = npy_bytes(">i4", {1}, std::string(4, '\0'))}});
  expect_throw_naming<ParseError>([&] { NpyStream(path("big_endian.npz"), "b"); },
                                  {"big_endian.npz:b.npy", "big-endian"});
  write("short.npz", {{.name = "s.npy", .data = npy_bytes("<i8", {4}, raw<int64_t>({1, 2, 3}))}});
  expect_throw_naming<ParseError>([&] { (void)npz_catalog(path("short.npz")); },
                                  {"short.npz:s.npy", "needs 32 element bytes", "has 24"});
  write("other.npz", {{.name = "readme.txt", .data = "hello"}});
  expect_throw_naming<ParseError>([&] { (void)npz_catalog(path("other.npz")); },
                                  {"other.npz", "readme.txt", "not an .npy"});
}

}  // namespace
}  // namespace edgeattn::data
