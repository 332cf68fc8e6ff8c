#include "edgeattn/core/file_io.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "edgeattn/core/error.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn {
namespace {

namespace fs = std::filesystem;
using testing::expect_throw_naming;
using testing::TempDir;

std::string gzip_bytes(const std::string& plain) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, plain.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  zs.avail_in = static_cast<uInt>(plain.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(FileIo, WriteAtomicThenReadRoundTrips) {
  const TempDir dir;
  const fs::path p = dir / "plain.txt";
  write_file_atomic(p, "hello\nworld\n");
  EXPECT_EQ(read_file(p), "hello\nworld\n");
  write_file_atomic(p, "replaced");
  EXPECT_EQ(read_file(p), "replaced");
  for (const auto& entry : fs::directory_iterator(p.parent_path()))  // no temporary left behind
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
}

TEST(FileIo, ReadsGzipTransparently) {
  std::string plain;
  for (int i = 0; i < 100000; ++i) plain += std::to_string(i) + "\t" + std::to_string(i * 7) + "\n";
  const TempDir dir;
  const fs::path p = dir / "edges.txt.gz";
  write_file_atomic(p, gzip_bytes(plain));
  EXPECT_EQ(read_file(p), plain);
}

TEST(FileIo, ReadsConcatenatedGzipMembersAsOneFile) {
  const TempDir dir;
  const fs::path p = dir / "two.gz";
  write_file_atomic(p, gzip_bytes("first\n") + gzip_bytes("second\n"));
  EXPECT_EQ(read_file(p), "first\nsecond\n");
}

TEST(FileIo, TruncatedGzipNamesTheFile) {
  std::string plain(50000, 'x');
  for (size_t i = 0; i < plain.size(); i += 7) plain[i] = static_cast<char>('a' + i % 26);
  std::string gz = gzip_bytes(plain);
  gz.resize(gz.size() / 2);
  const TempDir dir;
  const fs::path p = dir / "truncated.gz";
  write_file_atomic(p, gz);
  expect_throw_naming<ParseError>([&] { read_file(p); }, {"truncated.gz", "truncated"});
}

TEST(FileIo, CorruptGzipNamesTheOffset) {
  std::string gz = gzip_bytes(std::string(1000, 'y'));
  for (size_t i = 10; i < gz.size() - 8; ++i) gz[i] = static_cast<char>(0xff);
  const TempDir dir;
  const fs::path p = dir / "corrupt.gz";
  write_file_atomic(p, gz);
  expect_throw_naming<ParseError>([&] { read_file(p); }, {"corrupt.gz", "offset"});
}

TEST(FileIo, MissingFileIsAnIoErrorNamingThePath) {
  expect_throw_naming<IoError>([] { read_file("/nonexistent/dir/file.bin"); },
                               {"/nonexistent/dir/file.bin", "cannot open"});
}

TEST(FileIo, ADirectoryIsAnIoErrorNotAnAllocationOfItsReportedSize) {
  const TempDir dir;
  expect_throw_naming<IoError>([&] { (void)read_file(dir.path()); }, {dir.path().string(), "is a directory"});
}

TEST(FileIo, AFifoOrADeviceIsRefusedWithoutBlockingOrReadingForever) {
  const TempDir dir;
  const auto fifo = dir / "pipe.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_throw_naming<IoError>([&] { (void)read_file(fifo); },
                               {fifo.string(), "is a FIFO, expected a regular file"});
  expect_throw_naming<IoError>([] { (void)read_file("/dev/zero"); }, {"/dev/zero", "is a character device"});
}

TEST(FileIo, AnEmptyOrDirectoryPathIsNamedAsSuchWhenWriting) {
  expect_throw_naming<IoError>([] { write_file_atomic("", "x"); }, {"the path is empty"});
  const TempDir dir;
  expect_throw_naming<IoError>([&] { write_file_atomic(dir.path().string() + "/", "x"); },
                               {"names a directory"});
}

TEST(FileIo, WriteIntoAMissingDirectoryFailsCleanly) {
  expect_throw_naming<IoError>([] { write_file_atomic("/nonexistent/dir/out.bin", "x"); },
                               {"/nonexistent/dir/out.bin"});
}

TEST(FileIo, ReplacingAFileKeepsItsPermissionBits) {
  const TempDir dir;
  for (const fs::perms mode : {fs::perms(0600), fs::perms(0755), fs::perms(0640)}) {
    const fs::path p = dir / "kept.bin";
    write_file_atomic(p, "old");
    fs::permissions(p, mode);
    write_file_atomic(p, "new");
    EXPECT_EQ(read_file(p), "new");
    EXPECT_EQ(fs::status(p).permissions() & fs::perms::all, mode) << "mode " << std::oct << int(mode);
    fs::remove(p);
  }
}

TEST(FileIo, ASymbolicLinkIsWrittenThroughAndStaysALink) {
  const TempDir dir;
  const fs::path target = dir / "real.txt", link = dir / "link.txt";
  write_file_atomic(target, "before");
  fs::create_symlink("real.txt", link);  // relative, as users make them
  write_file_atomic(link, "after");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read_file(target), "after");
  // A dangling link names the file to create.
  const fs::path dangling = dir / "dangling.txt";
  fs::create_symlink("created.txt", dangling);
  write_file_atomic(dangling, "made");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
  EXPECT_EQ(read_file(dir / "created.txt"), "made");
}

TEST(FileIo, AReadOnlyFileIsRefusedNotReplaced) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write any file (access(2) W_OK succeeds)";
  const TempDir dir;
  const fs::path p = dir / "protected.txt";
  write_file_atomic(p, "keep me");
  fs::permissions(p, fs::perms(0444));
  expect_throw_naming<IoError>([&] { write_file_atomic(p, "lost"); },
                               {p.string(), "is not writable", "left as it is"});
  EXPECT_EQ(read_file(p), "keep me");
}

TEST(FileIo, ADeviceOrFifoIsWrittenToNotReplaced) {
  write_file_atomic("/dev/null", "discarded");  // as root, a rename would replace the device node
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  const TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    received.assign(std::istreambuf_iterator<char>(in), {});
  });
  try {
    write_file_atomic(fifo, "through the pipe");
  } catch (...) {  // release the reader blocked in its open, then fail
    ::close(::open(fifo.c_str(), O_WRONLY));
    reader.join();
    throw;
  }
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
  for (const auto& entry : fs::directory_iterator(dir.path()))  // no temporary left behind
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
}

TEST(FileIo, AnExistingDirectoryIsNotAFileToWrite) {
  const TempDir dir;
  fs::create_directory(dir / "sub");
  expect_throw_naming<IoError>([&] { write_file_atomic(dir / "sub", "x"); },
                               {(dir / "sub").string(), "is a directory"});
  EXPECT_TRUE(fs::is_directory(dir / "sub"));
}

}  // namespace
}  // namespace edgeattn
