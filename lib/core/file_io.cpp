#include "edgeattn/core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "edgeattn/core/error.hpp"

namespace edgeattn {

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view compressed, const std::string& what) {
  std::string out;
  out.resize(std::max<size_t>(compressed.size() * 4, 1 << 16));
  z_stream zs{};
  // 16 + MAX_WBITS: gzip wrapper only (no raw/zlib guessing).
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) raise<IoError>(what, ": cannot initialise zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  size_t produced = 0;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    const size_t room = std::min<size_t>(out.size() - produced, size_t{1} << 30);
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (as `cat a.gz b.gz` makes) are one file.
      if (zs.avail_in > 0 &&
          is_gzip(std::string_view(reinterpret_cast<const char*>(zs.next_in), zs.avail_in))) {
        inflateReset(&zs);
        continue;
      }
      if (zs.avail_in > 0) {
        const size_t offset = compressed.size() - zs.avail_in;
        inflateEnd(&zs);
        raise<ParseError>(what, ": ", zs.avail_in,
                          " bytes of trailing garbage after the gzip stream at offset ", offset);
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const size_t offset = compressed.size() - zs.avail_in;
      const std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      raise<ParseError>(what, ": corrupt gzip data near compressed offset ", offset, " (", msg, ")");
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      raise<ParseError>(what, ": gzip stream is truncated after ", compressed.size(), " compressed bytes (",
                        produced, " bytes decompressed)");
    }
  }
  inflateEnd(&zs);
  out.resize(produced);
  return out;
}

std::optional<std::filesystem::path> find_plain_or_gz(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  std::filesystem::path gz = path;
  gz += ".gz";
  if (std::filesystem::is_regular_file(gz, ec)) return gz;
  return std::nullopt;
}

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);  // follows links
  if (std::filesystem::is_directory(st))  // a stream opens one, and reports its size as 2^63 - 1
    raise<IoError>(path.string(), ": is a directory, expected a file");
  // A FIFO would block the open until a writer came, and a device (/dev/zero) never ends.
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    raise<IoError>(path.string(), ": is ",
                   std::filesystem::is_fifo(st)             ? "a FIFO"
                   : std::filesystem::is_character_file(st) ? "a character device"
                   : std::filesystem::is_block_file(st)     ? "a block device"
                   : std::filesystem::is_socket(st)         ? "a socket"
                                                            : "not a regular file",
                   ", expected a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) raise<IoError>(path.string(), ": cannot open for reading (", std::strerror(errno), ")");
  std::string bytes;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) raise<IoError>(path.string(), ": cannot determine the file size");
  bytes.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(bytes.data(), size);
  if (in.gcount() != size) raise<IoError>(path.string(), ": read ", in.gcount(), " of ", size, " bytes");
  if (is_gzip(bytes)) return gunzip(bytes, path.string());
  return bytes;
}

namespace {

/// Writes all of `bytes` to fd; false with errno set on failure.
bool write_all(int fd, std::string_view bytes, size_t& written) {
  written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<size_t>(n);
  }
  return true;
}

/// A character device or FIFO: opened and written in place (there is nothing to replace).
void write_stream(const std::filesystem::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) raise<IoError>(path.string(), ": cannot open for writing (", std::strerror(errno), ")");
  size_t written = 0;
  const bool ok = write_all(fd, bytes, written);
  const int err = errno;
  ::close(fd);
  if (!ok)
    raise<IoError>(path.string(), ": write failed after ", written, " of ", bytes.size(), " bytes (",
                   std::strerror(err), ")");
}

}  // namespace

void write_file_atomic(const std::filesystem::path& requested, std::string_view bytes) {
  namespace fs = std::filesystem;
  if (requested.empty()) raise<IoError>("write_file_atomic: the path is empty, expected a file name");
  if (!requested.has_filename())
    raise<IoError>(requested.string(), ": names a directory (it ends with '/'), expected a file name");
  // A terminal, /dev/null or a pipe (/dev/stdout) is written to, not replaced. stat follows the
  // links as open would, /proc/self/fd's included.
  struct stat existing {};
  if (::stat(requested.c_str(), &existing) == 0 && (S_ISCHR(existing.st_mode) || S_ISFIFO(existing.st_mode)))
    return write_stream(requested, bytes);
  // A symbolic link is written through: the file it names is replaced, the link stays (as an
  // editor saves). A dangling link names the file to create.
  fs::path path = requested;
  std::error_code ec;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(path, ec)); ++hops) {
    if (hops == 40) raise<IoError>(requested.string(), ": too many levels of symbolic links");
    const fs::path target = fs::read_symlink(path, ec);
    if (ec) raise<IoError>(requested.string(), ": cannot read the symbolic link (", ec.message(), ")");
    path = target.is_absolute() ? target : path.parent_path() / target;
  }
  // An existing file keeps its permission bits (a private 0600 file stays private), and one this
  // process could not open for writing is refused rather than replaced: rename would otherwise
  // swap a read-only file for a new one.
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  if (exists) {
    if (S_ISDIR(existing.st_mode)) raise<IoError>(path.string(), ": is a directory, expected a file");
    if (!S_ISREG(existing.st_mode))
      raise<IoError>(path.string(), ": exists and is not a regular file; it is left as it is");
    if (::access(path.c_str(), W_OK) != 0)
      raise<IoError>(path.string(), ": exists and is not writable (", std::strerror(errno),
                     "); it is left as it is");
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::random_device rd;
  std::string tmp_name = ".";  // built by appends: GCC 12 warns (-Wrestrict) on the operator+ chain
  tmp_name.append(path.filename().string()).append(".tmp-").append(std::to_string(::getpid()));
  tmp_name.append("-").append(std::to_string(rd()));
  const std::filesystem::path tmp = dir / tmp_name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    raise<IoError>(path.string(), ": cannot create temporary file ", tmp.string(), " (", std::strerror(errno),
                   ")");
  size_t written = 0;
  if (!write_all(fd, bytes, written)) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    raise<IoError>(path.string(), ": write failed after ", written, " of ", bytes.size(), " bytes (",
                   std::strerror(err), ")");
  }
  // The existing file's owner (where this process may give it: as root; else the writer owns the
  // new file, as an editor's save does) and its mode bits, not masked by the umask.
  if (exists && (existing.st_uid != ::geteuid() || existing.st_gid != ::getegid()) &&
      ::fchown(fd, existing.st_uid, existing.st_gid) != 0) {
    // EPERM unless root: the new file stays the writer's.
  }
  if (exists && ::fchmod(fd, existing.st_mode & 07777) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    raise<IoError>(path.string(), ": cannot give the temporary file the existing file's permissions (",
                   std::strerror(err), ")");
  }
  const bool synced = ::fsync(fd) == 0;
  const int sync_err = errno;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    const int err = synced ? errno : sync_err;
    ::unlink(tmp.c_str());
    raise<IoError>(path.string(), ": cannot flush the temporary file (", std::strerror(err), ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    raise<IoError>(path.string(), ": cannot rename the temporary file into place (", std::strerror(err), ")");
  }
}

}  // namespace edgeattn
