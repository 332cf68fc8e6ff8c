// Unpacking zip and tar.gz archives: prefixes, chosen members, and archives that try to write
// outside the target or are damaged.
#include "edgeattn/data/archive.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/download.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::gzip;
using edgeattn::testing::make_tar;
using edgeattn::testing::make_zip;

class Archive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!downloads_available()) GTEST_SKIP() << "built without libarchive (EDGEATTN_DOWNLOAD=OFF)";
  }
  fs::path write(const std::string& name, const std::string& bytes) {
    write_file_atomic(dir_ / name, bytes);
    return dir_ / name;
  }
  edgeattn::testing::TempDir dir_;
};

TEST_F(Archive, AZipUnpacksUnderItsPrefixWithDeflatedAndStoredMembers) {
  const std::string big(100'000, 'x');
  const fs::path zip =
      write("arxiv.zip", make_zip({{.name = "arxiv/raw/edge.csv.gz", .data = gzip("0,1\n")},
                                   {.name = "arxiv/split/time/train.csv", .data = big, .deflate = true},
                                   {.name = "other/ignored.txt", .data = "no"}}));
  ExtractOptions opt;
  opt.strip_prefix = "arxiv/";
  const auto files = extract_archive(zip, dir_ / "out", opt);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].member, "arxiv/raw/edge.csv.gz");
  EXPECT_EQ(read_file(dir_ / "out/raw/edge.csv.gz"), "0,1\n");  // read_file gunzips
  EXPECT_EQ(read_file(dir_ / "out/split/time/train.csv"), big);
  EXPECT_EQ(files[1].bytes, 100'000);
  EXPECT_FALSE(fs::exists(dir_ / "out/ignored.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "out/other"));
}

TEST_F(Archive, ATarGzGivesTheChosenMembersUnderTheirNewNamesAndSkipsLinks) {
  const fs::path tgz =
      write("cora.tgz", gzip(make_tar({{.name = "cora/README", .data = "readme"},
                                       {.name = "cora/cora.cites", .data = "1 2\n"},
                                       {.name = "cora/link", .data = "/etc/passwd", .typeflag = '2'}})));
  ExtractOptions opt;
  opt.members = {{"cora/cora.cites", "linqs/cora.cites"}};
  const auto files = extract_archive(tgz, dir_ / "out", opt);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(read_file(dir_ / "out/linqs/cora.cites"), "1 2\n");
  EXPECT_FALSE(fs::exists(dir_ / "out/cora/README"));

  // Everything: the regular files only; the symbolic link is not created.
  extract_archive(tgz, dir_ / "all");
  EXPECT_EQ(read_file(dir_ / "all/cora/README"), "readme");
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_ / "all/cora/link")));
}

TEST_F(Archive, MembersTheArchiveLacksAreListed) {
  const fs::path zip = write("a.zip", make_zip({{.name = "a/x", .data = "1"}}));
  ExtractOptions opt;
  opt.strip_prefix = "a/";
  opt.members = {{"x", "x"}, {"y", "y"}, {"z", "z"}};
  expect_throw_naming<IoError>([&] { extract_archive(zip, dir_ / "out", opt); }, {"a.zip", "a/y, a/z"});
}

TEST_F(Archive, AMemberThatClimbsOutOfTheTargetIsRefused) {
  for (const std::string name : {"../evil.txt", "a/../../evil.txt", "/tmp/evil.txt"}) {
    const fs::path tar = write("evil.tar", make_tar({{.name = name, .data = "pwned"}}));
    expect_throw_naming<ParseError>([&] { extract_archive(tar, dir_ / "out"); },
                                    {"evil.tar", name, "refusing"});
  }
  EXPECT_FALSE(fs::exists(dir_ / "evil.txt"));
  EXPECT_FALSE(fs::exists("/tmp/evil.txt") && read_file("/tmp/evil.txt") == "pwned");
}

TEST_F(Archive, ATruncatedOrCorruptArchiveIsAParseErrorNamingIt) {
  const std::string data(200'000, 'y');
  const std::string tgz = gzip(make_tar({{.name = "d/big", .data = data}}));
  const fs::path cut = write("cut.tar.gz", tgz.substr(0, tgz.size() / 2));
  expect_throw_naming<ParseError>([&] { extract_archive(cut, dir_ / "out"); }, {"cut.tar.gz"});
  EXPECT_FALSE(fs::exists(dir_ / "out/d/big"));  // no half file under the final name

  const fs::path junk = write("junk.zip", std::string(1000, 'j'));
  EXPECT_THROW(extract_archive(junk, dir_ / "out"), Error);
  expect_throw_naming<IoError>([&] { extract_archive(dir_ / "missing.zip", dir_ / "out"); }, {"missing.zip"});
}

}  // namespace
}  // namespace edgeattn::data
