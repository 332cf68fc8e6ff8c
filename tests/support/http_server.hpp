// Test support: an HTTP/1.1 server on 127.0.0.1 (an ephemeral port, nothing else is ever
// contacted) that serves in-memory files and can misbehave on purpose, for the download tests:
// a 404 or 503, a connection dropped after N body bytes, a slow or stalled sender, a server that
// ignores Range requests. One connection at a time, closed after each response; the server stops
// in its destructor (and never runs longer than its owner's test), and it answers at most
// `kMaxRequests` requests.
//
// Example:
//   edgeattn::testing::HttpServer server;
//   server.serve("/data/x.bin", bytes, {.drop_after = 1000, .drop_times = 1});
//   download_file(server.url("/data/x.bin"), dest);     // resumes at byte 1000 on the second try
//   server.requests("/data/x.bin");                     // 2
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace edgeattn::testing {

struct Behaviour {
  int status = 200;              ///< e.g. 404; the body is then a short error text
  int fail_times = 0;            ///< answer 503 to the first `fail_times` requests
  int64_t drop_after = -1;       ///< close the connection after this many body bytes ...
  int drop_times = 0;            ///< ... for the first `drop_times` requests
  int64_t bytes_per_second = 0;  ///< throttle the body (0 = as fast as possible)
  int64_t stall_after = -1;      ///< send this many body bytes, then nothing until the client leaves
  bool ignore_range = false;     ///< answer 200 with the whole body to range requests
};

class HttpServer {
 public:
  static constexpr int kMaxRequests = 1000;

  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Serves `body` at `path` ("/..."), replacing what was there.
  void serve(const std::string& path, std::string body, Behaviour behaviour = {});
  /// "http://127.0.0.1:<port>" + path.
  std::string url(const std::string& path) const;
  /// "http://127.0.0.1:<port>"
  std::string base() const { return url(""); }
  int port() const { return port_; }
  /// Requests seen for `path`, and the start offset each asked for (0 without a Range header).
  int requests(const std::string& path) const;
  std::vector<int64_t> range_starts(const std::string& path) const;

 private:
  struct File {
    std::string body;
    Behaviour behaviour;
    int seen = 0;
    std::vector<int64_t> starts;
  };
  void run();
  void handle(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  int handled_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, File> files_;
  std::thread thread_;
};

}  // namespace edgeattn::testing
