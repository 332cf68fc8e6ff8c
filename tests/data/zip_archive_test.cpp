#include "data/zip_archive.hpp"

#include <gtest/gtest.h>

#include "edgeattn/core/error.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::make_zip;
using edgeattn::testing::ZipEntry;

void patch16(std::string& s, size_t off, uint32_t v) {
  s[off] = static_cast<char>(v & 0xFF);
  s[off + 1] = static_cast<char>((v >> 8) & 0xFF);
}
void patch32(std::string& s, size_t off, uint32_t v) {
  patch16(s, off, v & 0xFFFF);
  patch16(s, off + 2, v >> 16);
}
/// Offset of the first central directory entry (from the classic end record).
size_t central(const std::string& zip) {
  const size_t eocd = zip.size() - 22;
  const auto* p = reinterpret_cast<const unsigned char*>(zip.data() + eocd + 16);
  return p[0] | (p[1] << 8) | (p[2] << 16) | (size_t{p[3]} << 24);
}

// Two members: "a" stored (local header at 0), "b" deflated.
const std::string kA(300, 'a');
const std::string kB = [] {
  std::string s;
  for (int i = 0; i < 4000; ++i) s += static_cast<char>('0' + i % 7);
  return s;
}();
std::string two_members() {
  return make_zip({{.name = "a", .data = kA}, {.name = "b", .data = kB, .deflate = true}});
}
constexpr size_t kLocalB = 30 + 1 + 300;  // "a": header, name, data

TEST(ZipArchive, ListsAndExtractsStoredAndDeflatedMembers) {
  const std::string zip = two_members();
  const ZipArchive z(zip, "t.zip");
  ASSERT_EQ(z.members().size(), 2u);
  EXPECT_EQ(z.members()[0].name, "a");
  EXPECT_EQ(z.members()[0].method, 0);
  EXPECT_EQ(z.members()[0].data_offset, 31u);
  EXPECT_EQ(z.members()[1].method, 8);
  EXPECT_EQ(z.members()[1].local_header_offset, kLocalB);
  EXPECT_LT(z.members()[1].compressed_size, 100u);
  EXPECT_EQ(z.extract(z.members()[0]), kA);
  EXPECT_EQ(z.extract(z.members()[1]), kB);
}

TEST(ZipArchive, EmptyArchiveHasNoMembers) {
  const std::string zip = make_zip({});
  EXPECT_EQ(zip.size(), 22u);
  EXPECT_TRUE(ZipArchive(zip, "e.zip").members().empty());
}

TEST(ZipArchive, ToleratesAnArchiveComment) {
  std::string zip = two_members();
  patch16(zip, zip.size() - 2, 5);
  zip += "hello";
  EXPECT_EQ(ZipArchive(zip, "c.zip").members().size(), 2u);
}

TEST(ZipArchive, DetectsACorruptedByteThroughTheCrc) {
  std::string zip = two_members();
  zip[31 + 7] = 'x';
  const ZipArchive z(zip, "t.zip");
  expect_throw_naming<ParseError>([&] { z.extract(z.members()[0]); },
                                  {"t.zip", "member 'a'", "byte offset 31", "CRC-32 mismatch"});
}

TEST(ZipArchive, RejectsSomethingThatIsNotAZip) {
  expect_throw_naming<ParseError>([] { (void)ZipArchive(std::string(100, 'x'), "n.zip"); },
                                  {"n.zip", "end-of-central-directory"});
  expect_throw_naming<ParseError>([] { (void)ZipArchive("PK", "s.zip"); }, {"s.zip", "too short"});
  std::string cut = two_members();
  cut.resize(cut.size() - 5);
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(cut, "cut.zip"); },
                                  {"cut.zip", "end-of-central-directory"});
}

TEST(ZipArchive, RejectsUnsupportedMethodsAndEncryption) {
  std::string zip = two_members();
  patch16(zip, central(zip) + 10, 12);  // bzip2
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "m.zip"); },
                                  {"m.zip", "member 'a'", "method 12"});
  zip = two_members();
  patch16(zip, central(zip) + 8, 1);
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "e.zip"); },
                                  {"e.zip", "member 'a'", "encrypted"});
}

TEST(ZipArchive, RejectsLocalHeadersThatDisagreeWithTheCentralDirectory) {
  std::string zip = two_members();
  patch32(zip, 14, 0x12345678);  // local CRC of "a"
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "l.zip"); },
                                  {"l.zip", "member 'a'", "local header at byte offset 0", "CRC-32"});
  zip = two_members();
  zip[kLocalB + 30] = 'c';  // local name of "b"
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "n.zip"); }, {"n.zip", "names 'c'", "'b'"});
  zip = two_members();
  patch16(zip, kLocalB + 8, 0);  // local method of "b"
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "k.zip"); },
                                  {"k.zip", "member 'b'", "stored", "deflate"});
}

TEST(ZipArchive, RejectsOffsetsPastTheEnd) {
  std::string zip = two_members();
  patch32(zip, central(zip) + 42, 0x00FFFFFF);
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "o.zip"); },
                                  {"o.zip", "member 'a'", "byte offset 16777215", "past the end"});
  zip = two_members();
  patch32(zip, zip.size() - 22 + 16, static_cast<uint32_t>(zip.size()));  // central directory offset
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "c.zip"); },
                                  {"c.zip", "central directory", "byte offset"});
}

TEST(ZipArchive, RejectsOverlappingMembers) {
  // "a" claims 400 stored bytes, running into "b"'s local header (the overlapping-zip bomb shape).
  std::string zip = two_members();
  for (const size_t off : {size_t{18}, size_t{22}}) patch32(zip, off, 400);
  for (const size_t off : {central(zip) + 20, central(zip) + 24}) patch32(zip, off, 400);
  expect_throw_naming<ParseError>(
      [&] { (void)ZipArchive(zip, "ov.zip"); },
      {"ov.zip", "byte offset 0", "overlapping the next member", "byte offset 331"});
}

TEST(ZipArchive, RejectsDuplicateNames) {
  const std::string zip = make_zip({{.name = "x", .data = "1"}, {.name = "x", .data = "2"}});
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "d.zip"); },
                                  {"d.zip", "member 'x'", "repeats"});
}

TEST(ZipArchive, RejectsBombLikeDeclaredSizes) {
  std::string zip = two_members();
  const size_t b_central = central(zip) + 46 + 1;
  patch32(zip, b_central + 24, 0x7FFFFFFF);  // "b": 2 GiB from a few dozen bytes
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "bomb.zip"); },
                                  {"bomb.zip", "member 'b'", "maximum ratio"});
  expect_throw_naming<ParseError>(
      [&] { (void)ZipArchive(two_members(), "lim.zip", {.max_member_bytes = 1000}); },
      {"lim.zip", "member 'b'", "4000", "limit of 1000"});
  expect_throw_naming<ParseError>(
      [&] { (void)ZipArchive(two_members(), "tot.zip", {.max_total_bytes = 4100}); },
      {"tot.zip", "4300", "limit of 4100"});
}

TEST(ZipArchive, NeverInflatesPastTheDeclaredSize) {
  std::string zip = two_members();
  patch32(zip, kLocalB + 22, 100);
  patch32(zip, central(zip) + 46 + 1 + 24, 100);
  const ZipArchive z(zip, "more.zip");
  expect_throw_naming<ParseError>([&] { z.extract(z.members()[1]); },
                                  {"more.zip", "member 'b'", "more than the 100"});
}

TEST(ZipArchive, RejectsTruncatedAndCorruptDeflateStreams) {
  std::string zip = two_members();
  const ZipArchive good(zip, "t.zip");
  const uint32_t csize = static_cast<uint32_t>(good.members()[1].compressed_size);
  patch32(zip, kLocalB + 18, csize - 5);
  patch32(zip, central(zip) + 46 + 1 + 20, csize - 5);
  const ZipArchive z(zip, "trunc.zip");
  expect_throw_naming<ParseError>([&] { z.extract(z.members()[1]); },
                                  {"trunc.zip", "member 'b'", "truncated"});
  zip = two_members();
  zip[good.members()[1].data_offset] = '\xff';  // reserved block type 3
  const ZipArchive c(zip, "corrupt.zip");
  expect_throw_naming<ParseError>([&] { c.extract(c.members()[1]); },
                                  {"corrupt.zip", "member 'b'", "corrupt deflate data", "byte offset"});
}

TEST(ZipArchive, ChecksDataDescriptors) {
  std::string zip = make_zip({{.name = "d", .data = kB, .deflate = true, .descriptor = true}});
  const ZipArchive z(zip, "dd.zip");
  EXPECT_EQ(z.extract(z.members()[0]), kB);
  const size_t desc = z.members()[0].data_offset + z.members()[0].compressed_size;
  patch32(zip, desc + 4, 0xDEADBEEF);
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "dd.zip"); },
                                  {"dd.zip", "member 'd'", "data descriptor", "deadbeef"});
}

TEST(ZipArchive, RequiresAZip64LocatorForSaturatedEndFields) {
  std::string zip = two_members();
  patch32(zip, zip.size() - 22 + 16, 0xFFFFFFFF);
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "z.zip"); }, {"z.zip", "ZIP64 locator"});
  zip = make_zip({{.name = "a", .data = "x", .central_zip64 = true}});
  const size_t c = central(zip);
  patch16(zip, c + 30, 0);  // drop the extra field length: the saturated sizes lose their values
  expect_throw_naming<ParseError>([&] { (void)ZipArchive(zip, "z.zip"); }, {"z.zip", "member 'a'"});
}

}  // namespace
}  // namespace edgeattn::data
