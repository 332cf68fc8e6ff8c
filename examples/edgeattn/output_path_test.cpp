// Tests of the output-path check (built by examples/CMakeLists.txt as tools_output_path_test).
#include "output_path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace edgeattn::cli {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::TempDir;

// The UsageError's message, or "(no error)".
std::string check(const std::string& option, const fs::path& path) {
  try {
    check_output_path(option, path.string());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OutputPath, ANewOrExistingFileInAWritableDirectoryIsAccepted) {
  const TempDir dir;
  EXPECT_EQ(check("save", dir / "new.model"), "(no error)");
  std::ofstream(dir / "old.model") << "x";
  EXPECT_EQ(check("save", dir / "old.model"), "(no error)");
  // The probe file is gone again.
  std::vector<fs::path> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename());
  EXPECT_EQ(left, std::vector<fs::path>{"old.model"});
}

TEST(OutputPath, ARelativeNameWithoutADirectoryMeansTheCurrentOne) {
  const TempDir dir;
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  const std::string message = check("out", "predictions.tsv");
  fs::current_path(cwd);
  EXPECT_EQ(message, "(no error)");
}

TEST(OutputPath, AMissingDirectoryNamesTheOptionThePathAndTheDirectory) {
  EXPECT_EQ(check("save", "/nonexistent/dir/x.model"),
            "--save is '/nonexistent/dir/x.model': expected an existing directory, but directory "
            "'/nonexistent/dir' does not exist");
}

TEST(OutputPath, AFileWhereTheDirectoryShouldBeIsRefused) {
  const TempDir dir;
  std::ofstream(dir / "file") << "x";
  const std::string path = (dir / "file" / "curves.svg").string();
  EXPECT_EQ(check("plot", path), "--plot is '" + path + "': expected '" + (dir / "file").string() +
                                     "' to be a directory, found a file");
}

TEST(OutputPath, AnExistingDirectoryIsNotAFileName) {
  const TempDir dir;
  EXPECT_EQ(check("attention-out", dir.path()), "--attention-out is '" + dir.path().string() +
                                                    "': expected a file name, found an existing directory");
  EXPECT_EQ(
      check("attention-out", dir.path().string() + "/"),
      "--attention-out is '" + dir.path().string() + "/': expected a file name, found an existing directory");
}

TEST(OutputPath, ASpecialFileIsNotReplaced) {
  EXPECT_EQ(check("out", "/dev/null"),
            "--out is '/dev/null': expected a regular file or a new name, found an existing special file");
}

TEST(OutputPath, AnEmptyNameIsRefused) {
  EXPECT_EQ(check("save", ""), "--save needs a file name, got an empty one");
}

TEST(OutputPath, ADirectoryWhereNoFileCanBeCreatedIsRefusedEvenForRoot) {
  // access(2) would say yes to root here; creating a file says no. sysfs refuses new files.
  if (!fs::is_directory("/sys/kernel")) GTEST_SKIP() << "no /sys/kernel on this system";
  const std::string message = check("save", "/sys/kernel/x.model");
  EXPECT_NE(
      message.find("--save is '/sys/kernel/x.model': expected a writable directory, but files cannot be "
                   "created in '/sys/kernel' ("),
      std::string::npos)
      << message;
}

TEST(OutputPath, AReadOnlyDirectoryIsRefused) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write into a mode-0555 directory (see the /sys test)";
  const TempDir dir;
  fs::create_directory(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  const std::string message = check("out", dir / "ro" / "p.tsv");
  fs::permissions(dir / "ro", fs::perms::owner_all);  // so that TempDir can remove it
  EXPECT_NE(message.find("files cannot be created in '" + (dir / "ro").string() + "' (Permission denied)"),
            std::string::npos)
      << message;
}

TEST(OutputPath, OnlyTheGivenOptionsAreChecked) {
  Args args("edgeattn test", "A test command.");
  args.option("save", "FILE", "", "model").option("plot", "FILE", "/nonexistent/default.svg", "curves");
  const std::vector<std::string> argv = {"--save", "/nonexistent/dir/x.model"};
  ASSERT_TRUE(args.parse(argv));
  try {
    check_output_options(args, {"plot", "save"});
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--save is '/nonexistent/dir/x.model'"), std::string::npos)
        << e.what();
  }
  const std::vector<std::string> none;
  Args quiet("edgeattn test", "A test command.");
  quiet.option("save", "FILE", "", "model").option("plot", "FILE", "/nonexistent/default.svg", "curves");
  ASSERT_TRUE(quiet.parse(none));
  EXPECT_NO_THROW(check_output_options(quiet, {"plot", "save"}));  // defaults are not checked
}

}  // namespace
}  // namespace edgeattn::cli
