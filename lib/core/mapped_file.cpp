#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"

namespace edgeattn::detail {

namespace {

// A file opened read-only, with its stat; closed on scope exit. IoError naming the path.
struct OpenFile {
  int fd;
  struct stat st {};
  explicit OpenFile(const std::filesystem::path& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0) raise<IoError>(path.string(), ": cannot open for reading (", std::strerror(errno), ")");
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      raise<IoError>(path.string(), ": cannot stat (", std::strerror(err), ")");
    }
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() { ::close(fd); }

  char* map(const std::filesystem::path& path, int protection) const {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), protection, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) raise<IoError>(path.string(), ": cannot map (", std::strerror(errno), ")");
    return static_cast<char*>(p);
  }
};

}  // namespace

MappedFile MappedFile::map_or_read(const std::filesystem::path& path) {
  const OpenFile file(path);
  MappedFile f;
  // Pipes, FIFOs and empty files have nothing to map; gzip needs decompressing.
  unsigned char magic[2] = {0, 0};
  const bool regular = S_ISREG(file.st.st_mode) && file.st.st_size > 0;
  if (!regular || ::pread(file.fd, magic, 2, 0) != 2 || (magic[0] == 0x1f && magic[1] == 0x8b)) {
    f.owned_ = read_file(path);
    return f;
  }
  f.mapped_ = file.map(path, PROT_READ);
  f.size_ = static_cast<size_t>(file.st.st_size);
  ::madvise(f.mapped_, f.size_, MADV_SEQUENTIAL);  // a hint: members are read front to back
  return f;
}

MappedFile MappedFile::map_copy_on_write(const std::filesystem::path& path) {
  const OpenFile file(path);
  if (!S_ISREG(file.st.st_mode) || file.st.st_size == 0)
    raise<IoError>(path.string(), ": cannot be memory-mapped: ",
                   S_ISREG(file.st.st_mode) ? "the file is empty" : "not a regular file");
  MappedFile f;
  f.mapped_ = file.map(path, PROT_READ | PROT_WRITE);
  f.size_ = static_cast<size_t>(file.st.st_size);
  f.copy_on_write_ = true;
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : mapped_(std::exchange(other.mapped_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      copy_on_write_(std::exchange(other.copy_on_write_, false)),
      owned_(std::move(other.owned_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (mapped_) ::munmap(mapped_, size_);
    mapped_ = std::exchange(other.mapped_, nullptr);
    size_ = std::exchange(other.size_, 0);
    copy_on_write_ = std::exchange(other.copy_on_write_, false);
    owned_ = std::move(other.owned_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(mapped_, size_);
}

void MappedFile::release(std::string_view range) const {
  if (!mapped_ || copy_on_write_ || range.empty()) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t hi = lo + range.size();
  const auto base = reinterpret_cast<uintptr_t>(mapped_);
  if (lo < base || hi > base + size_) return;  // not ours: nothing to drop
  const uintptr_t first = (lo + page - 1) / page * page, last = hi / page * page;
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // a hint
}

}  // namespace edgeattn::detail
