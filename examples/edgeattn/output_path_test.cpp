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

// The UsageError of check_distinct_paths over `argv`, or "(no error)".
std::string distinct(const std::vector<std::string>& argv) {
  Args args("edgeattn test", "A test command.");
  args.option("save", "FILE", "", "model")
      .option("plot", "FILE", "", "curves")
      .option("checkpoint", "FILE", "", "state")
      .option("dataset", "NAME|PATH", "cora", "data")
      .option("features", "FILE", "", "features")
      .option("resume", "FILE", "", "state");
  if (!args.parse(argv)) return "(help)";
  try {
    check_distinct_paths(args, {"save", "plot", "checkpoint"}, {"dataset", "features", "resume"},
                         {{"checkpoint", "resume"}});
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OutputPath, AnOutputNeverReplacesAnInputOrAnotherOutput) {
  const TempDir dir;
  const std::string data = (dir / "graph.npz").string(), feats = (dir / "x.npy").string();
  std::ofstream(data) << "x";
  std::ofstream(feats) << "x";
  EXPECT_EQ(distinct({"--dataset", data, "--save", (dir / "m.model").string()}), "(no error)");
  EXPECT_EQ(distinct({"--dataset", data, "--plot", data}),
            "--plot is '" + data +
                "', the file --dataset reads: writing it would replace your input; give the "
                "output another name");
  // The same file under another spelling, and through a symbolic link.
  const std::string dotted = (dir / "." / "x.npy").string();
  EXPECT_NE(distinct({"--features", feats, "--save", dotted}).find("the file --features reads"),
            std::string::npos);
  fs::create_symlink(feats, dir / "link.npy");
  EXPECT_NE(distinct({"--features", feats, "--save", (dir / "link.npy").string()}).find("--features"),
            std::string::npos);
  // FILE:MEMBER of an .npz names FILE.
  EXPECT_NE(distinct({"--features", data + ":attr_matrix", "--save", data}).find("the file --features reads"),
            std::string::npos);
  // Two outputs, existing or not.
  const std::string out = (dir / "out.bin").string();
  EXPECT_EQ(distinct({"--save", out, "--checkpoint", out}),
            "--save and --checkpoint both name '" + out +
                "': one output would replace the other; give each its own file");
  // A resumed run may keep writing its checkpoint, but not replace it with the model.
  std::ofstream(out) << "x";
  EXPECT_EQ(distinct({"--resume", out, "--checkpoint", out}), "(no error)");
  EXPECT_NE(distinct({"--resume", out, "--save", out}).find("the file --resume reads"), std::string::npos);
  // A dataset name is no file, and a dataset directory holds the files an output may sit among.
  EXPECT_EQ(distinct({"--dataset", "cora", "--save", "cora"}), "(no error)");
  EXPECT_EQ(distinct({"--dataset", dir.path().string(), "--save", (dir / "m.model").string()}), "(no error)");
}

}  // namespace
}  // namespace edgeattn::cli
