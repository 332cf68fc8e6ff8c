// Downloads over HTTP(S) into a cache, verified and placed atomically (libcurl).
//
// `download_file(url, dest, sha256, bytes)` is the one way edgeattn fetches anything:
//   - a file already at `dest` whose content has the expected sha256 is returned without any
//     network access (a wrong one is downloaded again);
//   - bytes arrive in `dest.part` beside the target; an interrupted transfer (dropped connection,
//     timeout, Ctrl-C, crash) leaves only that part file, and the next call resumes it with an HTTP
//     range request (starting over when the server ignores ranges);
//   - transient failures (connection refused or reset, timeouts, a stalled server, HTTP 408, 429
//     and 5xx) are retried with exponential back-off; 4xx answers are not;
//   - the complete content is checked against the expected size and sha256 before it is flushed
//     and renamed to `dest`, so `dest` either does not exist or holds exactly the published bytes.
//     A mismatch deletes the part file (the next try starts from zero) and raises ChecksumError;
//   - two processes fetching the same `dest` take turns (an advisory lock on `dest.lock`), and the
//     second finds the first one's file;
//   - a progress bar is drawn on standard error when it is a terminal.
//
// Offline mode (`DownloadOptions::offline`, on by default when EDGEATTN_OFFLINE is set to anything
// but "" or "0") forbids every network access: a file not yet in the cache raises DownloadError
// with kind offline, naming the file and the URL it would come from.
//
// Errors: DownloadError (an IoError) with a `kind()`: offline, unreachable (name resolution or
// connection failed on every try: "no network?"), http_status (404 and other refusals, with
// `http_status()`), timeout (too slow or stalled on every try), disk_full (ENOSPC or EDQUOT while
// writing, or too little free space for the announced size), interrupted (the transfer broke
// off on every try). ChecksumError when the bytes differ from the manifest. Each message names the
// URL, the destination and the cause.
//
// Example:
//   edgeattn::data::DownloadOptions opt;                    // 5 attempts, progress on a terminal
//   auto r = edgeattn::data::download_file(
//       "https://github.com/kimiyoung/planetoid/raw/master/data/ind.pubmed.allx",
//       edgeattn::data::default_cache_dir() / "pubmed/planetoid/ind.pubmed.allx",
//       "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e", 7578385, opt);
//   r.downloaded;   // false when the verified file was already there
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "edgeattn/core/error.hpp"

namespace edgeattn::data {

/// A download that could not complete; see the header comment for the kinds.
class DownloadError : public IoError {
 public:
  enum class Kind { offline, unreachable, http_status, timeout, disk_full, interrupted };
  DownloadError(Kind kind, const std::string& message, long http_status = 0)
      : IoError(message), kind_(kind), http_status_(http_status) {}
  Kind kind() const { return kind_; }
  /// The server's status code for Kind::http_status, else 0.
  long http_status() const { return http_status_; }

 private:
  Kind kind_;
  long http_status_;
};

/// Where a transfer stands, for DownloadOptions::on_progress.
struct DownloadProgress {
  std::string url;
  int64_t received = 0;  ///< bytes in the part file so far, including a resumed prefix
  int64_t total = -1;    ///< expected bytes; -1 while unknown
  int attempt = 1;
};

struct DownloadOptions {
  /// Forbid network access (see above). Default: EDGEATTN_OFFLINE.
  bool offline = offline_from_environment();
  /// Tries per file, the first included (>= 1).
  int max_attempts = 5;
  /// Pause before the second try; doubled for each further try, at most 30 s.
  std::chrono::milliseconds retry_delay{1000};
  std::chrono::seconds connect_timeout{30};
  /// A try fails when fewer than `low_speed_bytes` per second arrive for `low_speed_time`
  /// (a stalled server); it is then retried, resuming where it stopped.
  int64_t low_speed_bytes = 1024;
  std::chrono::seconds low_speed_time{60};
  /// Draw a progress bar on standard error when it is a terminal.
  bool progress_bar = true;
  /// Called as bytes arrive (at most ~10 times a second) and once at the end of each try.
  std::function<void(const DownloadProgress&)> on_progress;
  /// Prefix substitutions "FROM=TO" applied to every URL, e.g. an institutional mirror
  /// "https://snap.stanford.edu/=https://mirror.example.org/snap/". Default: EDGEATTN_MIRROR,
  /// several separated by ';'.
  std::string mirror = mirror_from_environment();

  static bool offline_from_environment();
  static std::string mirror_from_environment();
};

struct DownloadResult {
  std::filesystem::path path;
  std::string sha256;  ///< of the content, computed while it arrived (or read from the cache)
  int64_t bytes = 0;
  bool downloaded = false;  ///< false when a verified file was already at the destination
  bool resumed = false;     ///< a part file from an earlier, interrupted transfer was continued
  int attempts = 0;         ///< network tries made (0 when nothing was downloaded)
};

/// Fetches `url` into `dest` (see the header comment). `sha256` may be empty and `bytes` -1 when
/// not known: the content is then accepted as served, and its sha256 is returned for the caller
/// to report. Parent directories are created.
DownloadResult download_file(const std::string& url, const std::filesystem::path& dest,
                             const std::string& sha256 = {}, int64_t bytes = -1,
                             const DownloadOptions& options = {});

/// True when this build can download (libcurl and libarchive were found: EDGEATTN_DOWNLOAD).
bool downloads_available();

/// The URL after DownloadOptions::mirror's substitutions.
std::string apply_mirror(const std::string& url, const std::string& mirror);

/// The per-user download cache: $EDGEATTN_DATA when set, else $XDG_CACHE_HOME/edgeattn, else
/// $HOME/.cache/edgeattn.
std::filesystem::path default_cache_dir();

}  // namespace edgeattn::data
