// HTTP(S) downloads with libcurl: resume, retry, verification and atomic placement.
//
// One transfer is a loop of tries. Each try appends to `dest.part` from the offset the part file
// already has (an HTTP range request), hashing the bytes as they are written; the part file's
// existing prefix is hashed first, so a resumed transfer is verified exactly like a fresh one.
// When the content is complete (the expected size, or the end of a response without one), it is
// checked, fsync'd and renamed over `dest`, and the directory is fsync'd: the rename is the only
// moment `dest` appears, and it appears whole.
#include "edgeattn/data/download.hpp"

#if EDGEATTN_HAVE_DOWNLOAD
#include <curl/curl.h>
#endif
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/sha256.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;
using Kind = DownloadError::Kind;

bool DownloadOptions::offline_from_environment() {
  const char* v = std::getenv("EDGEATTN_OFFLINE");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

std::string DownloadOptions::mirror_from_environment() {
  const char* v = std::getenv("EDGEATTN_MIRROR");
  return v != nullptr ? std::string(v) : std::string();
}

std::string apply_mirror(const std::string& url, const std::string& mirror) {
  size_t start = 0;
  while (start < mirror.size()) {
    size_t end = mirror.find(';', start);
    if (end == std::string::npos) end = mirror.size();
    const std::string rule = mirror.substr(start, end - start);
    start = end + 1;
    if (rule.empty()) continue;
    const size_t eq = rule.find('=');
    if (eq == std::string::npos || eq == 0)
      raise<InvalidArgument>("mirror rule '", rule,
                             "': expected FROM=TO (EDGEATTN_MIRROR or DownloadOptions::mirror)");
    const std::string from = rule.substr(0, eq);
    if (url.compare(0, from.size(), from) == 0) return rule.substr(eq + 1) + url.substr(from.size());
  }
  return url;
}

bool downloads_available() { return EDGEATTN_HAVE_DOWNLOAD != 0; }

fs::path default_cache_dir() {
  if (const char* v = std::getenv("EDGEATTN_DATA"); v != nullptr && *v != '\0') return fs::path(v);
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v != nullptr && *v != '\0')
    return fs::path(v) / "edgeattn";
  if (const char* v = std::getenv("HOME"); v != nullptr && *v != '\0')
    return fs::path(v) / ".cache" / "edgeattn";
  return fs::temp_directory_path() / "edgeattn-cache";
}

#if EDGEATTN_HAVE_DOWNLOAD

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) raise<IoError>("libcurl: curl_global_init failed");
  });
}

// An fd that closes itself.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct CurlHandle {
  CURL* h = curl_easy_init();
  CurlHandle() {
    if (h == nullptr) raise<IoError>("libcurl: curl_easy_init failed");
  }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
  ~CurlHandle() { curl_easy_cleanup(h); }
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000.0 && u < 4) {
    b /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

// What one try writes to and reports.
struct Transfer {
  int fd = -1;
  Sha256* hash = nullptr;
  int64_t received = 0;  // bytes in the part file
  int64_t expected = -1;
  bool write_failed = false;
  int write_errno = 0;
  const DownloadOptions* options = nullptr;
  DownloadProgress progress;
  bool bar = false;
  std::chrono::steady_clock::time_point last_report{};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  int64_t received_at_start = 0;
  std::string label;
};

void draw_bar(Transfer& t, bool final_line) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t.started).count();
  const double rate = secs > 0 ? static_cast<double>(t.received - t.received_at_start) / secs : 0.0;
  if (t.expected > 0) {
    const double frac = std::min(1.0, static_cast<double>(t.received) / static_cast<double>(t.expected));
    const int width = 30, filled = static_cast<int>(frac * width);
    std::fprintf(stderr, "\r%-28.28s [%.*s%*s] %5.1f%% %s / %s  %s/s ", t.label.c_str(), filled,
                 "##############################", width - filled, "", 100.0 * frac,
                 human_bytes(static_cast<double>(t.received)).c_str(),
                 human_bytes(static_cast<double>(t.expected)).c_str(), human_bytes(rate).c_str());
  } else {
    std::fprintf(stderr, "\r%-28.28s %s  %s/s ", t.label.c_str(),
                 human_bytes(static_cast<double>(t.received)).c_str(), human_bytes(rate).c_str());
  }
  if (final_line) std::fputc('\n', stderr);
  std::fflush(stderr);
}

void report(Transfer& t, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - t.last_report < std::chrono::milliseconds(100)) return;
  t.last_report = now;
  t.progress.received = t.received;
  t.progress.total = t.expected;
  if (t.options->on_progress) t.options->on_progress(t.progress);
  if (t.bar) draw_bar(t, false);
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const size_t n = size * count;
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(t.fd, data + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      t.write_failed = true;
      t.write_errno = errno;
      return 0;  // makes libcurl abort with CURLE_WRITE_ERROR
    }
    done += static_cast<size_t>(w);
  }
  t.hash->update(std::string_view(data, n));
  t.received += static_cast<int64_t>(n);
  report(t, false);
  return n;
}

int on_xfer(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t, curl_off_t) {
  report(*static_cast<Transfer*>(user), false);
  return 0;
}

// Hashes the first `n` bytes of `fd` (the part file's prefix) into `hash`.
void hash_prefix(int fd, int64_t n, Sha256& hash, const fs::path& part) {
  std::string buf(1 << 20, '\0');
  int64_t off = 0;
  while (off < n) {
    const ssize_t r =
        ::pread(fd, buf.data(), static_cast<size_t>(std::min<int64_t>(n - off, buf.size())), off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) raise<IoError>(part.string(), ": cannot read the partial download: ", std::strerror(errno));
    hash.update(std::string_view(buf.data(), static_cast<size_t>(r)));
    off += r;
  }
}

std::string file_sha256(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) raise<IoError>(p.string(), ": cannot open: ", std::strerror(errno));
  Fd guard(fd);
  struct stat st {};
  ::fstat(fd, &st);
  Sha256 h;
  hash_prefix(fd, st.st_size, h, p);
  return h.hex_digest();
}

bool disk_full_errno(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG; }

[[noreturn]] void raise_disk_full(const std::string& url, const fs::path& dest, const std::string& why) {
  throw DownloadError(Kind::disk_full,
                      detail::message("downloading ", url, " to ", dest.string(), ": disk full (", why,
                                      "); free space in ", dest.parent_path().string(), " and retry"));
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

bool retryable_status(long status) { return status == 408 || status == 429 || status >= 500; }

const char* status_reason(long status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 410:
      return "Gone";
    case 416:
      return "Range Not Satisfiable";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

}  // namespace

DownloadResult download_file(const std::string& url, const fs::path& dest, const std::string& sha256,
                             int64_t bytes, const DownloadOptions& options) {
  if (options.max_attempts < 1)
    raise<InvalidArgument>("DownloadOptions::max_attempts: expected >= 1, found ", options.max_attempts);
  if (dest.empty() || !dest.has_filename())
    raise<InvalidArgument>("download_file: destination '", dest.string(), "' names no file");

  DownloadResult result;
  result.path = dest;
  auto cached = [&]() -> bool {
    std::error_code ec;
    if (!fs::is_regular_file(dest, ec)) return false;
    const std::string digest = file_sha256(dest);
    if (!sha256.empty() && digest != sha256) return false;
    result.sha256 = digest;
    result.bytes = static_cast<int64_t>(fs::file_size(dest));
    return true;
  };
  if (cached()) return result;

  const std::string source = apply_mirror(url, options.mirror);
  if (options.offline)
    throw DownloadError(
        Kind::offline,
        detail::message(
            dest.string(), " is not downloaded yet and downloads are off (offline mode: ",
            "EDGEATTN_OFFLINE or --offline); it comes from ", source,
            bytes >= 0 ? detail::message(" (", human_bytes(static_cast<double>(bytes)), ")") : ""));

  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec)
    raise<IoError>(dest.parent_path().string(), ": cannot create the download directory: ", ec.message());

  // One process at a time per destination; a second one waits and then finds the file.
  const fs::path lock_path = fs::path(dest.string() + ".lock");
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0)
    raise<IoError>(lock_path.string(), ": cannot create the download lock: ", std::strerror(errno));
  Fd lock_guard(lock_fd);
  while (::flock(lock_fd, LOCK_EX) != 0) {
    if (errno != EINTR) raise<IoError>(lock_path.string(), ": cannot lock: ", std::strerror(errno));
  }
  struct Unlink {
    fs::path p;
    ~Unlink() {
      std::error_code e;
      fs::remove(p, e);
    }
  } unlink_lock{lock_path};
  if (cached()) return result;

  global_init();
  const fs::path part = fs::path(dest.string() + ".part");
  std::string last_error;
  Kind last_kind = Kind::interrupted;
  bool restarted_after_mismatch = false;
  bool no_ranges = false;  // the server answered a range request with the whole file
  bool skip_delay = false;
  bool tries_left_unused = false;
  int attempts_made = options.max_attempts;
  std::chrono::milliseconds delay = options.retry_delay;

  for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
    if (attempt > 1 && !std::exchange(skip_delay, false)) {
      std::this_thread::sleep_for(delay);
      delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(30));
    }
    result.attempts = attempt;
    const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (disk_full_errno(errno)) raise_disk_full(source, dest, std::strerror(errno));
      raise<IoError>(part.string(), ": cannot open the partial download: ", std::strerror(errno));
    }
    Fd part_guard(fd);
    struct stat st {};
    ::fstat(fd, &st);
    int64_t offset = S_ISREG(st.st_mode) ? st.st_size : 0;
    if (offset > 0 && (no_ranges || (bytes >= 0 && offset > bytes))) {  // cannot be resumed: start over
      if (::ftruncate(fd, 0) != 0) raise<IoError>(part.string(), ": cannot truncate: ", std::strerror(errno));
      offset = 0;
    }
    if (bytes >= 0) {
      struct statvfs vfs {};
      if (::statvfs(dest.parent_path().c_str(), &vfs) == 0) {
        const double free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
        if (free_bytes < static_cast<double>(bytes - offset))
          raise_disk_full(source, dest,
                          detail::message("needs ", human_bytes(static_cast<double>(bytes - offset)), ", ",
                                          human_bytes(free_bytes), " free"));
      }
    }
    Sha256 hash;
    if (offset > 0) hash_prefix(fd, offset, hash, part);
    if (S_ISREG(st.st_mode) && ::lseek(fd, offset, SEEK_SET) < 0)
      raise<IoError>(part.string(), ": cannot seek: ", std::strerror(errno));

    Transfer t;
    t.fd = fd;
    t.hash = &hash;
    t.received = t.received_at_start = offset;
    t.expected = bytes;
    t.options = &options;
    t.progress.url = source;
    t.progress.attempt = attempt;
    t.bar = options.progress_bar && ::isatty(STDERR_FILENO) != 0;
    t.label = dest.filename().string();
    const bool resuming = offset > 0 && (bytes < 0 || offset < bytes);
    if (resuming) result.resumed = true;

    CurlHandle curl;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl.h, CURLOPT_URL, source.c_str());
    curl_easy_setopt(curl.h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl.h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl.h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl.h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl.h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl.h, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(curl.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.h, CURLOPT_USERAGENT, "edgeattn/0.1 (libcurl)");
    curl_easy_setopt(curl.h, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(curl.h, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_bytes));
    curl_easy_setopt(curl.h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count()));
    curl_easy_setopt(curl.h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl.h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl.h, CURLOPT_XFERINFOFUNCTION, on_xfer);
    curl_easy_setopt(curl.h, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(curl.h, CURLOPT_NOPROGRESS, 0L);
    if (offset > 0) curl_easy_setopt(curl.h, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));

    const CURLcode rc = curl_easy_perform(curl.h);
    long status = 0;
    curl_easy_getinfo(curl.h, CURLINFO_RESPONSE_CODE, &status);
    if (t.bar && t.received > t.received_at_start) draw_bar(t, true);
    if (options.on_progress) report(t, true);

    if (t.write_failed) {
      if (disk_full_errno(t.write_errno)) raise_disk_full(source, dest, std::strerror(t.write_errno));
      raise<IoError>(part.string(), ": cannot write the download: ", std::strerror(t.write_errno));
    }
    const std::string detail_text =
        errbuf[0] != '\0' ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
    if (rc == CURLE_HTTP_RETURNED_ERROR || (rc == CURLE_OK && status >= 400)) {
      if (status == 416 && offset > 0) {
        // The part file already holds everything the server has (or is stale): verify it below
        // if its size is the expected one, otherwise start over.
        if (bytes >= 0 && offset == bytes) {
          t.received = offset;
        } else {
          if (::ftruncate(fd, 0) != 0)
            raise<IoError>(part.string(), ": cannot truncate: ", std::strerror(errno));
          last_error = "HTTP 416 for a resumed range; starting over";
          last_kind = Kind::interrupted;
          continue;
        }
      } else if (retryable_status(status)) {
        last_error = detail::message("HTTP ", status, " ", status_reason(status));
        last_kind = Kind::http_status;
        continue;
      } else {
        std::error_code e;
        if (offset == 0) fs::remove(part, e);  // opened for this try and empty: not a resumable part
        throw DownloadError(
            Kind::http_status,
            detail::message("downloading ", source, ": the server answered HTTP ", status, " ",
                            status_reason(status),
                            status == 404 ? " (the file is not there: check the URL or the mirror)" : "",
                            "; nothing was written to ", dest.string()),
            status);
      }
    } else if (rc == CURLE_RANGE_ERROR) {
      // libcurl saw a 200 where it asked for a range and wrote nothing: start over at once.
      no_ranges = true;
      result.resumed = false;
      last_error = detail_text;
      last_kind = Kind::interrupted;
      --attempt;  // not a failed try (and it happens once: no range is asked for again)
      skip_delay = true;
      continue;
    } else if (rc != CURLE_OK) {
      switch (rc) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
          // Name resolution failing twice is a missing network, not a hiccup: stop waiting.
          if (attempt >= 2 && options.max_attempts > 2) tries_left_unused = true;
          [[fallthrough]];
        case CURLE_COULDNT_CONNECT:
          last_kind = Kind::unreachable;
          break;
        case CURLE_OPERATION_TIMEDOUT:
          last_kind = Kind::timeout;
          break;
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
          raise<InvalidArgument>("download URL '", source, "': ", detail_text);
        default:
          last_kind = Kind::interrupted;
      }
      last_error = detail_text;
      if (tries_left_unused) {
        attempts_made = attempt;
        break;
      }
      continue;
    }

    // The response ended cleanly (a connection that breaks off mid-body is CURLE_PARTIAL_FILE,
    // retried above), so what arrived is what the server has: a size other than the manifest's
    // is a different file, handled like a checksum mismatch below.
    const std::string digest = hash.hex_digest();
    if ((bytes >= 0 && t.received != bytes) || (!sha256.empty() && digest != sha256)) {
      if (::ftruncate(fd, 0) != 0) raise<IoError>(part.string(), ": cannot truncate: ", std::strerror(errno));
      if (resuming && !restarted_after_mismatch) {
        // The prefix may have come from an older version of the file: try once from zero.
        restarted_after_mismatch = true;
        result.resumed = false;
        last_error = "checksum mismatch after resuming";
        continue;
      }
      std::error_code e;
      fs::remove(part, e);
      raise<ChecksumError>("downloading ", source, ": the content has sha256 ", digest, " and ", t.received,
                           " bytes, expected ", sha256.empty() ? std::string("(no checksum)") : sha256,
                           " and ", bytes, " bytes; the download was discarded and ", dest.string(),
                           " not written");
    }
    if (::fsync(fd) != 0) {
      if (disk_full_errno(errno)) raise_disk_full(source, dest, std::strerror(errno));
      raise<IoError>(part.string(), ": fsync failed: ", std::strerror(errno));
    }
    fs::rename(part, dest, ec);
    if (ec) raise<IoError>("cannot rename ", part.string(), " to ", dest.string(), ": ", ec.message());
    fsync_dir(dest.parent_path());
    result.sha256 = digest;
    result.bytes = t.received;
    result.downloaded = true;
    return result;
  }

  const char* hint = last_kind == Kind::unreachable ? " (no network, or the host is down?)"
                     : last_kind == Kind::timeout   ? " (the server stalled or is too slow)"
                                                    : "";
  std::error_code e;
  const auto kept = fs::is_regular_file(part, e) ? fs::file_size(part, e) : 0;
  if (kept == 0) fs::remove(part, e);  // nothing to resume from: leave no empty .part behind
  throw DownloadError(
      last_kind,
      detail::message(
          "downloading ", source, " to ", dest.string(), " failed after ", attempts_made,
          attempts_made == 1 ? " try" : " tries", ": ", last_error, hint,
          kept > 0 ? detail::message("; ", kept, " bytes kept in ", part.string(), " to resume next time")
                   : std::string()));
}

#else  // built without libcurl / libarchive

DownloadResult download_file(const std::string& url, const fs::path& dest, const std::string& sha256,
                             int64_t /*bytes*/, const DownloadOptions& options) {
  DownloadResult result;
  std::error_code ec;
  if (fs::is_regular_file(dest, ec)) {
    result.path = dest;
    result.sha256 = sha256_hex(read_file(dest));
    result.bytes = static_cast<int64_t>(fs::file_size(dest));
    if (sha256.empty() || result.sha256 == sha256) return result;
  }
  throw DownloadError(
      options.offline ? Kind::offline : Kind::unreachable,
      detail::message(dest.string(), " is not downloaded yet, and this edgeattn was built without ",
                      "downloads (EDGEATTN_DOWNLOAD=OFF or libcurl/libarchive not found); fetch ",
                      apply_mirror(url, options.mirror), " by hand and place it there"));
}

#endif  // EDGEATTN_HAVE_DOWNLOAD

}  // namespace edgeattn::data
