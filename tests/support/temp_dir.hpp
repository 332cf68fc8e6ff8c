// A scratch directory for one test, removed with everything in it when the object goes away.
//
// Tests must leave nothing behind in the temporary directory (`./run test` checks this: see
// scripts/test.sh). Every test that writes files writes them under a TempDir:
//
//   TEST(Checkpoint, SaveThenLoad) {
//     const edgeattn::testing::TempDir dir;            // $TMPDIR/edgeattn_Checkpoint_SaveThenLoad_XXXXXX
//     save_parameters(dir / "roundtrip.model", ...);
//   }                                                  // removed here, also after a failed ASSERT_*
//                                                      // (which returns) or an escaping exception
//
// The directory lies under std::filesystem::temp_directory_path(), i.e. $TMPDIR when it is set
// (else /tmp), and is created with mkdtemp, so tests running in parallel (ctest -j, one process per
// test) never share one.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace edgeattn::testing {

class TempDir {
 public:
  /// Creates `<temp>/edgeattn_<Suite>_<Test>[_<tag>]_XXXXXX` (the running test's names; "edgeattn_"
  /// alone outside a test). Throws std::system_error naming the template if it cannot.
  explicit TempDir(const std::string& tag = {}) {
    std::string name = "edgeattn_";
    if (const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info())
      name += sanitize(std::string(info->test_suite_name()) + "_" + info->name());
    if (!tag.empty()) name.append("_").append(sanitize(tag));  // not "_" + ...: GCC 12's -Wstringop-overflow
    std::string templ = (std::filesystem::temp_directory_path() / (name + "_XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr)
      throw std::system_error(errno, std::generic_category(), "TempDir: mkdtemp(" + templ + ")");
    path_ = templ;
  }
  ~TempDir() { remove(); }

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&& other) noexcept {
    if (this != &other) {
      remove();
      path_ = std::exchange(other.path_, {});
    }
    return *this;
  }

  /// The directory (absolute).
  const std::filesystem::path& path() const { return path_; }
  /// A path inside the directory: `dir / "a.model"`, `dir / "cora/planetoid"`.
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }

 private:
  // Parameterised tests are named "Suite/0" and "Name/param": keep the file name one component.
  static std::string sanitize(std::string s) {
    for (char& c : s)
      if (c == '/' || c == ' ') c = '_';
    return s;
  }
  void remove() noexcept {
    if (path_.empty()) return;
    std::error_code ec;  // a destructor must not throw; a failure is reported, not hidden
    std::filesystem::remove_all(path_, ec);
    if (ec) ADD_FAILURE() << "TempDir: could not remove " << path_ << ": " << ec.message();
    path_.clear();
  }

  std::filesystem::path path_;
};

}  // namespace edgeattn::testing
