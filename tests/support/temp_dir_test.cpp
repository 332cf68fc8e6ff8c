// The tests' scratch directory (support/temp_dir.hpp): unique, under $TMPDIR, and always removed.
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>  // setenv

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "edgeattn/core/file_io.hpp"

namespace edgeattn::testing {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, IsAFreshDirectoryNamedAfterTheTestAndRemovedWithItsContents) {
  fs::path where;
  {
    const TempDir dir;
    where = dir.path();
    EXPECT_TRUE(fs::is_directory(where));
    EXPECT_TRUE(fs::is_empty(where));
    EXPECT_NE(where.filename().string().find("edgeattn_TempDir_IsAFreshDirectory"), std::string::npos)
        << where;
    fs::create_directories(dir / "a/b");
    write_file_atomic(dir / "a/b/file.txt", "x");
  }
  EXPECT_FALSE(fs::exists(where)) << where;
}

TEST(TempDir, TwoAreNeverTheSame) {
  const TempDir a, b("tag");
  EXPECT_NE(a.path(), b.path());
  EXPECT_NE(b.path().filename().string().find("_tag_"), std::string::npos) << b.path();
}

TEST(TempDir, IsRemovedWhenAnExceptionLeavesTheScope) {
  fs::path where;
  try {
    const TempDir dir;
    where = dir.path();
    write_file_atomic(dir / "file.txt", "x");
    throw std::runtime_error("test body failed");
  } catch (const std::runtime_error&) {
  }
  ASSERT_FALSE(where.empty());
  EXPECT_FALSE(fs::exists(where)) << where;
}

TEST(TempDir, AMovedDirectoryIsRemovedOnceByItsLastOwner) {
  std::optional<TempDir> first(std::in_place);
  const fs::path where = first->path();
  TempDir second = std::move(*first);
  first.reset();  // the moved-from object owns nothing
  EXPECT_TRUE(fs::is_directory(where));
  EXPECT_EQ(second.path(), where);
}

TEST(TempDir, LivesUnderTmpdir) {
  const TempDir outer;  // stands in for a fresh $TMPDIR
  const char* old = std::getenv("TMPDIR");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("TMPDIR", outer.path().c_str(), 1);
  {
    const TempDir inner;
    EXPECT_EQ(inner.path().parent_path(), outer.path());
  }
  if (saved)
    ::setenv("TMPDIR", saved->c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  EXPECT_TRUE(fs::is_empty(outer.path()));
}

}  // namespace
}  // namespace edgeattn::testing
