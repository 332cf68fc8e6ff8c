#include "support/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace edgeattn::testing {

namespace {

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Waits up to `ms` for `fd` to become readable; true when it did.
bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

}  // namespace

HttpServer::HttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("HttpServer: socket() failed");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // 127.0.0.1 only
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("HttpServer: cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

HttpServer::~HttpServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void HttpServer::serve(const std::string& path, std::string body, Behaviour behaviour) {
  std::lock_guard<std::mutex> lock(mutex_);
  File& f = files_[path];
  f.body = std::move(body);
  f.behaviour = behaviour;
}

std::string HttpServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

int HttpServer::requests(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = files_.find(path);
  return it == files_.end() ? 0 : it->second.seen;
}

std::vector<int64_t> HttpServer::range_starts(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = files_.find(path);
  return it == files_.end() ? std::vector<int64_t>{} : it->second.starts;
}

void HttpServer::run() {
  while (!stop_ && handled_ < kMaxRequests) {
    if (!readable(listen_fd_, 50)) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++handled_;
    handle(fd);
    ::close(fd);
  }
}

void HttpServer::handle(int fd) {
  // Read the request head (bounded: 16 KiB, 5 s).
  std::string head;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 16384) {
    if (stop_ || std::chrono::steady_clock::now() > deadline) return;
    if (!readable(fd, 50)) continue;
    char buf[4096];
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) return;
    head.append(buf, static_cast<size_t>(r));
  }
  const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return;
  const std::string path = head.substr(sp1 + 1, sp2 - sp1 - 1);
  int64_t start = 0;
  if (const size_t r = head.find("\r\nRange: bytes="); r != std::string::npos)
    start = std::stoll(head.substr(r + 15));

  std::string body;
  Behaviour b;
  int seen = 0;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = files_.find(path);
    if (it != files_.end()) {
      found = true;
      File& f = it->second;
      seen = ++f.seen;
      f.starts.push_back(start);
      body = f.body;
      b = f.behaviour;
    }
  }
  auto reply_status = [&](int status, const char* reason) {
    const std::string text = std::to_string(status) + " " + reason + "\n";
    const std::string msg = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                            "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(text.size()) +
                            "\r\nConnection: close\r\n\r\n" + text;
    send_all(fd, msg.data(), msg.size());
  };
  if (!found || b.status == 404) return reply_status(404, "Not Found");
  if (b.status != 200) return reply_status(b.status, "Error");
  if (seen <= b.fail_times) return reply_status(503, "Service Unavailable");

  const int64_t size = static_cast<int64_t>(body.size());
  const bool partial = start > 0 && !b.ignore_range;
  if (partial && start >= size) {
    const std::string msg = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" +
                            std::to_string(size) + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(fd, msg.data(), msg.size());
    return;
  }
  const int64_t from = partial ? start : 0;
  std::string header = partial ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n";
  header += "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\nContent-Length: " +
            std::to_string(size - from) + "\r\n";
  if (partial)
    header += "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(size - 1) + "/" +
              std::to_string(size) + "\r\n";
  header += "Connection: close\r\n\r\n";
  if (!send_all(fd, header.data(), header.size())) return;

  int64_t limit = size - from;
  if (b.drop_after >= 0 && seen <= b.fail_times + b.drop_times) limit = std::min(limit, b.drop_after);
  if (b.stall_after >= 0) limit = std::min(limit, b.stall_after);
  const int64_t chunk = b.bytes_per_second > 0 ? std::max<int64_t>(1, b.bytes_per_second / 20) : (1 << 16);
  for (int64_t sent = 0; sent < limit && !stop_;) {
    const int64_t n = std::min(chunk, limit - sent);
    if (!send_all(fd, body.data() + from + sent, static_cast<size_t>(n))) return;
    sent += n;
    if (b.bytes_per_second > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (b.stall_after >= 0) {
    // Hold the connection open, sending nothing, until the client gives up (or the server stops).
    while (!stop_) {
      if (readable(fd, 50)) {
        char buf[256];
        if (::recv(fd, buf, sizeof buf, 0) <= 0) return;
      }
    }
  }
}

}  // namespace edgeattn::testing
