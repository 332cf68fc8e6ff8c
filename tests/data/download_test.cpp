// Downloads against a loopback HTTP server (tests/support/http_server.hpp): resume, retry,
// verification, atomic placement, offline mode and the errors a user meets (404, no network,
// a stalled server, a wrong checksum, a full disk).
#include "edgeattn/data/download.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/sha256.hpp"
#include "support/expect_error.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using testing::Behaviour;
using testing::expect_throw_naming;
using testing::HttpServer;

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class Download : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!downloads_available()) GTEST_SKIP() << "built without libcurl/libarchive (EDGEATTN_DOWNLOAD=OFF)";
    body_ = random_bytes(300'000, 7);
    sha_ = sha256_hex(body_);
    options_.offline = false;  // ctest sets EDGEATTN_OFFLINE=1; this server is on loopback
    options_.mirror.clear();
    options_.retry_delay = std::chrono::milliseconds(10);
    options_.progress_bar = false;
  }
  fs::path dest() const { return dir_ / "sub" / "file.bin"; }
  fs::path part() const { return fs::path(dest().string() + ".part"); }

  testing::TempDir dir_;
  std::string body_, sha_;
  DownloadOptions options_;
  HttpServer server_;
};

TEST_F(Download, FetchesVerifiesAndPlacesTheFileThenServesItFromTheCache) {
  server_.serve("/f", body_);
  const DownloadResult r =
      download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_);
  EXPECT_TRUE(r.downloaded);
  EXPECT_FALSE(r.resumed);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.sha256, sha_);
  EXPECT_EQ(read_file(dest()), body_);
  EXPECT_FALSE(fs::exists(part()));
  EXPECT_FALSE(fs::exists(dest().string() + ".lock"));

  // A second call finds the verified file and makes no request, even offline.
  options_.offline = true;
  const DownloadResult again = download_file(server_.url("/f"), dest(), sha_, -1, options_);
  EXPECT_FALSE(again.downloaded);
  EXPECT_EQ(again.sha256, sha_);
  EXPECT_EQ(server_.requests("/f"), 1);
}

TEST_F(Download, WithoutAChecksumTheContentIsAcceptedAndItsDigestReturned) {
  server_.serve("/f", body_);
  const DownloadResult r = download_file(server_.url("/f"), dest(), "", -1, options_);
  EXPECT_EQ(r.sha256, sha_);
  EXPECT_EQ(r.bytes, static_cast<int64_t>(body_.size()));
}

TEST_F(Download, ADroppedConnectionIsResumedWithARangeRequest) {
  server_.serve("/f", body_, {.drop_after = 100'000, .drop_times = 2});
  const DownloadResult r =
      download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server_.range_starts("/f"), (std::vector<int64_t>{0, 100'000, 200'000}));
  EXPECT_EQ(read_file(dest()), body_);
}

TEST_F(Download, AnInterruptedDownloadLeavesNoFileAndTheNextCallResumesIt) {
  server_.serve("/f", body_, {.drop_after = 120'000, .drop_times = 1});
  options_.max_attempts = 1;
  expect_throw_naming<DownloadError>(
      [&] { download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_); },
      {server_.url("/f"), "after 1 try", "120000 bytes kept", ".part"});
  EXPECT_FALSE(fs::exists(dest()));
  EXPECT_EQ(fs::file_size(part()), 120'000u);

  const DownloadResult r =
      download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(server_.range_starts("/f").back(), 120'000);
  EXPECT_EQ(read_file(dest()), body_);
}

TEST_F(Download, AServerThatIgnoresRangesIsReadFromTheStart) {
  server_.serve("/f", body_, {.drop_after = 50'000, .drop_times = 1, .ignore_range = true});
  const DownloadResult r =
      download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_);
  EXPECT_FALSE(r.resumed);
  // The range request is answered with the whole file; the download starts over from byte 0.
  EXPECT_EQ(server_.range_starts("/f"), (std::vector<int64_t>{0, 50'000, 0}));
  EXPECT_EQ(read_file(dest()), body_);
}

TEST_F(Download, AStalePartFileFromAnotherVersionIsDiscardedOnceTheChecksumFails) {
  fs::create_directories(dest().parent_path());
  write_file_atomic(part(), random_bytes(1000, 99));  // not a prefix of body_
  server_.serve("/f", body_);
  const DownloadResult r =
      download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_);
  EXPECT_FALSE(r.resumed);
  EXPECT_EQ(server_.range_starts("/f"), (std::vector<int64_t>{1000, 0}));
  EXPECT_EQ(read_file(dest()), body_);
}

TEST_F(Download, NotFoundIsReportedAtOnceWithoutRetries) {
  server_.serve("/f", body_, {.status = 404});
  try {
    download_file(server_.url("/f"), dest(), sha_, -1, options_);
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.kind(), DownloadError::Kind::http_status);
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_NE(std::string(e.what()).find("HTTP 404 Not Found"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(server_.url("/f")), std::string::npos) << e.what();
  }
  EXPECT_EQ(server_.requests("/f"), 1);
  EXPECT_FALSE(fs::exists(dest()));
  EXPECT_FALSE(fs::exists(part())) << "an empty .part file was left behind";
}

TEST_F(Download, ServerErrorsAreRetriedWithBackOff) {
  server_.serve("/f", body_, {.fail_times = 2});
  const DownloadResult r = download_file(server_.url("/f"), dest(), sha_, -1, options_);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(read_file(dest()), body_);

  server_.serve("/g", body_, {.fail_times = 10});
  options_.max_attempts = 2;
  expect_throw_naming<DownloadError>([&] { download_file(server_.url("/g"), dir_ / "g", "", -1, options_); },
                                     {"HTTP 503", "after 2 tries"});
}

TEST_F(Download, AWrongChecksumDiscardsTheDownloadAndNamesBothDigests) {
  server_.serve("/f", body_);
  const std::string wrong(64, 'a');
  expect_throw_naming<ChecksumError>([&] { download_file(server_.url("/f"), dest(), wrong, -1, options_); },
                                     {wrong, sha_, server_.url("/f"), "not written"});
  EXPECT_FALSE(fs::exists(dest()));
  EXPECT_FALSE(fs::exists(part()));
}

TEST_F(Download, AWrongCachedFileIsDownloadedAgain) {
  fs::create_directories(dest().parent_path());
  write_file_atomic(dest(), "corrupted");
  server_.serve("/f", body_);
  EXPECT_TRUE(download_file(server_.url("/f"), dest(), sha_, -1, options_).downloaded);
  EXPECT_EQ(read_file(dest()), body_);
}

TEST_F(Download, AStalledServerTimesOutAndKeepsWhatArrived) {
  server_.serve("/f", body_, {.stall_after = 40'000});
  options_.max_attempts = 1;
  options_.low_speed_bytes = 1000;
  options_.low_speed_time = std::chrono::seconds(1);
  try {
    download_file(server_.url("/f"), dest(), sha_, static_cast<int64_t>(body_.size()), options_);
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.kind(), DownloadError::Kind::timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("stalled"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dest()));
  EXPECT_EQ(fs::file_size(part()), 40'000u);
}

TEST_F(Download, ASlowServerCompletesAndReportsProgress) {
  const std::string small = body_.substr(0, 60'000);
  server_.serve("/f", small, {.bytes_per_second = 200'000});
  std::vector<int64_t> seen;
  options_.on_progress = [&](const DownloadProgress& p) {
    seen.push_back(p.received);
    EXPECT_EQ(p.total, 60'000);
  };
  download_file(server_.url("/f"), dest(), sha256_hex(small), 60'000, options_);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 60'000);
}

TEST_F(Download, OfflineModeNamesTheFileAndTheUrlAndMakesNoRequest) {
  server_.serve("/f", body_);
  options_.offline = true;
  try {
    download_file(server_.url("/f"), dest(), sha_, 300'000, options_);
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.kind(), DownloadError::Kind::offline);
    EXPECT_NE(std::string(e.what()).find(dest().string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(server_.url("/f")), std::string::npos) << e.what();
  }
  EXPECT_EQ(server_.requests("/f"), 0);
}

TEST_F(Download, OfflineModeComesFromTheEnvironment) {
  ::setenv("EDGEATTN_OFFLINE", "1", 1);
  EXPECT_TRUE(DownloadOptions::offline_from_environment());
  ::setenv("EDGEATTN_OFFLINE", "0", 1);
  EXPECT_FALSE(DownloadOptions::offline_from_environment());
  ::setenv("EDGEATTN_OFFLINE", "1", 1);  // as ctest runs every test
}

TEST_F(Download, AnUnreachableHostSaysSo) {
  // A port that was just free: nothing listens there.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  options_.max_attempts = 2;
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/f";
  try {
    download_file(url, dest(), sha_, -1, options_);
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.kind(), DownloadError::Kind::unreachable) << e.what();
    EXPECT_NE(std::string(e.what()).find("no network"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dest()));
  EXPECT_FALSE(fs::exists(part())) << "an empty .part file was left behind";
}

TEST_F(Download, AFullDiskIsReportedAsSuch) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  // The part file is a link to /dev/full, where every write fails with ENOSPC.
  fs::create_directories(dest().parent_path());
  fs::create_symlink("/dev/full", part());
  server_.serve("/f", body_);
  try {
    download_file(server_.url("/f"), dest(), sha_, -1, options_);
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.kind(), DownloadError::Kind::disk_full) << e.what();
    EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dest()));
}

TEST_F(Download, TooLittleFreeSpaceForTheAnnouncedSizeFailsBeforeDownloading) {
  server_.serve("/f", body_);
  expect_throw_naming<DownloadError>(
      [&] { download_file(server_.url("/f"), dest(), "", int64_t{1} << 62, options_); },
      {"disk full", "free"});
  EXPECT_EQ(server_.requests("/f"), 0);
}

TEST_F(Download, AMirrorReplacesTheUrlPrefix) {
  EXPECT_EQ(apply_mirror("https://snap.stanford.edu/ogb/x.zip",
                         "https://a/=http://b/;https://snap.stanford.edu/=http://m/s/"),
            "http://m/s/ogb/x.zip");
  EXPECT_EQ(apply_mirror("https://other/x", "https://a/=http://b/"), "https://other/x");
  expect_throw_naming<InvalidArgument>([] { apply_mirror("https://a/x", "no-equals-sign"); },
                                       {"no-equals-sign", "FROM=TO"});

  server_.serve("/mirror/f", body_);
  options_.mirror = "https://example.org/=" + server_.url("/mirror/");
  download_file("https://example.org/f", dest(), sha_, -1, options_);
  EXPECT_EQ(read_file(dest()), body_);
}

TEST_F(Download, BadArgumentsAreRejected) {
  options_.max_attempts = 0;
  expect_throw_naming<InvalidArgument>([&] { download_file(server_.url("/f"), dest(), "", -1, options_); },
                                       {"max_attempts"});
  options_.max_attempts = 1;
  expect_throw_naming<InvalidArgument>([&] { download_file("ftp://127.0.0.1/f", dest(), "", -1, options_); },
                                       {"ftp://127.0.0.1/f"});
}

}  // namespace
}  // namespace edgeattn::data
