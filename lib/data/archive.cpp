// Archive extraction over libarchive's reader: libarchive parses the container and the
// compression, and this file decides which members are written and where (never through
// archive_write_disk, so no path, link or permission from the archive reaches the file system
// unchecked).
#include "edgeattn/data/archive.hpp"

#if EDGEATTN_HAVE_DOWNLOAD
#include <archive.h>
#include <archive_entry.h>
#endif
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/download.hpp"

namespace edgeattn::data {
namespace fs = std::filesystem;

#if EDGEATTN_HAVE_DOWNLOAD

namespace {

struct Reader {
  archive* a = archive_read_new();
  Reader() {
    if (a == nullptr) raise<IoError>("libarchive: archive_read_new failed");
    archive_read_support_filter_all(a);
    archive_read_support_format_zip(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_gnutar(a);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() { archive_read_free(a); }
};

// "a/./b//c" -> "a/b/c"; empty for a path that is absolute or climbs out with "..".
std::string safe_relative(const std::string& name) {
  if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos) return {};
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return {};
    out += (out.empty() ? "" : "/") + part;
  }
  return out;
}

void write_member(archive* a, const fs::path& archive_path, const std::string& member, const fs::path& target,
                  int64_t& bytes) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) raise<IoError>(target.parent_path().string(), ": cannot create directory: ", ec.message());
  const fs::path tmp = fs::path(target.string() + ".extracting");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) raise<IoError>(tmp.string(), ": cannot create: ", std::strerror(errno));
  auto fail_write = [&](int err) {
    ::close(fd);
    fs::remove(tmp, ec);
    if (err == ENOSPC || err == EDQUOT)
      throw DownloadError(DownloadError::Kind::disk_full,
                          detail::message("extracting ", member, " from ", archive_path.string(), " to ",
                                          target.string(), ": disk full (", std::strerror(err), ")"));
    raise<IoError>(target.string(), ": cannot write (extracting ", member, " from ", archive_path.string(),
                   "): ", std::strerror(err));
  };
  bytes = 0;
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  for (;;) {
    const int r = archive_read_data_block(a, &block, &size, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      const std::string why = archive_error_string(a) != nullptr ? archive_error_string(a) : "unknown error";
      ::close(fd);
      fs::remove(tmp, ec);
      raise<ParseError>(archive_path.string(), ": member ", member, ": ", why,
                        " (corrupt or truncated archive)");
    }
    // Sparse tar members give offsets with holes: pwrite keeps them.
    size_t done = 0;
    while (done < size) {
      const ssize_t w = ::pwrite(fd, static_cast<const char*>(block) + done, size - done,
                                 static_cast<off_t>(offset) + static_cast<off_t>(done));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_write(errno);
      }
      done += static_cast<size_t>(w);
    }
    bytes = std::max<int64_t>(bytes, static_cast<int64_t>(offset) + static_cast<int64_t>(size));
  }
  if (::ftruncate(fd, bytes) != 0 || ::fsync(fd) != 0) fail_write(errno);
  if (::close(fd) != 0) fail_write(errno);
  fs::rename(tmp, target, ec);
  if (ec) raise<IoError>("cannot rename ", tmp.string(), " to ", target.string(), ": ", ec.message());
}

}  // namespace

std::vector<ExtractedFile> extract_archive(const fs::path& archive_path, const fs::path& dir,
                                           const ExtractOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(archive_path, ec)) raise<IoError>(archive_path.string(), ": no such archive file");
  Reader reader;
  if (archive_read_open_filename(reader.a, archive_path.c_str(), 1 << 16) != ARCHIVE_OK)
    raise<ParseError>(
        archive_path.string(), ": not a readable zip or tar archive: ",
        archive_error_string(reader.a) != nullptr ? archive_error_string(reader.a) : "unknown error");

  std::map<std::string, std::string> wanted(options.members.begin(), options.members.end());
  std::vector<ExtractedFile> written;
  archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(reader.a, &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
      raise<ParseError>(
          archive_path.string(), ": ",
          archive_error_string(reader.a) != nullptr ? archive_error_string(reader.a) : "unknown error",
          " after ", written.size(), " members (corrupt or truncated archive?)");
    const char* raw_name = archive_entry_pathname(entry);
    const std::string name = raw_name != nullptr ? raw_name : "";
    if (archive_entry_filetype(entry) != AE_IFREG) continue;  // directories, links, devices
    const std::string rel = safe_relative(name);
    if (rel.empty())
      raise<ParseError>(archive_path.string(), ": member '", name,
                        "' has an absolute path or climbs out with '..'; refusing to extract it");
    if (!options.strip_prefix.empty() &&
        rel.compare(0, options.strip_prefix.size(), options.strip_prefix) != 0)
      continue;
    const std::string inner = rel.substr(options.strip_prefix.size());
    if (inner.empty()) continue;
    fs::path target;
    if (!wanted.empty()) {
      const auto it = wanted.find(inner);
      if (it == wanted.end()) continue;
      target = dir / it->second;
      wanted.erase(it);
    } else {
      target = dir / inner;
    }
    ExtractedFile f;
    f.member = name;
    f.path = target;
    write_member(reader.a, archive_path, name, target, f.bytes);
    written.push_back(std::move(f));
  }
  if (!wanted.empty()) {
    std::string missing;
    for (const auto& [member, to] : wanted)
      missing += (missing.empty() ? "" : ", ") + options.strip_prefix + member;
    raise<IoError>(archive_path.string(), ": the archive does not hold ", missing);
  }
  return written;
}

#else  // built without libarchive

std::vector<ExtractedFile> extract_archive(const fs::path& archive_path, const fs::path& /*dir*/,
                                           const ExtractOptions& /*options*/) {
  raise<IoError>(archive_path.string(), ": cannot unpack: this edgeattn was built without libarchive ",
                 "(EDGEATTN_DOWNLOAD=OFF or libarchive not found)");
}

#endif  // EDGEATTN_HAVE_DOWNLOAD

}  // namespace edgeattn::data
