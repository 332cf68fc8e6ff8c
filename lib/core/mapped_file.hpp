// Internal: a read-only memory map of a whole file, for binary loaders that read large members in
// place (npz) instead of copying the file into a buffer first.
//
// The mapped pages count towards resident memory only once touched, and `release(range)` hands
// the touched pages of a range back (MADV_DONTNEED: the page cache keeps them, so a later read
// just faults them in again). A loader that converts a member and then releases it holds at most
// that member's pages at a time, not the file.
//
// gzip files cannot be mapped usefully: `map_or_read` maps a plain file and decompresses a gzip
// one into memory, so callers get the bytes either way.
//
// Caveat of every mmap: if another process truncates the file while it is mapped, reading the
// lost pages raises SIGBUS. Datasets are read-only inputs, so loaders accept this.
//
//   MappedFile f = MappedFile::map_or_read("graph.npz");
//   std::string_view bytes = f.bytes();
//   ... parse member m at bytes.substr(off, len) ...
//   f.release(bytes.substr(off, len));
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace edgeattn::detail {

class MappedFile {
 public:
  /// Maps `path` read-only; a gzip file (recognised by its magic bytes) is decompressed into an
  /// owned buffer instead. Throws IoError naming the path when it cannot be opened or mapped.
  static MappedFile map_or_read(const std::filesystem::path& path);

  /// Maps `path` privately and copy-on-write (PROT_READ | PROT_WRITE, MAP_PRIVATE), for data used
  /// in place as tensors: a write changes this process's copy of that page only, never the file.
  /// Unlike map_or_read it never reads the file into memory: IoError when `path` is not a
  /// regular, non-empty file (a gzip file is mapped as is; callers check the magic).
  static MappedFile map_copy_on_write(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view bytes() const {
    return mapped_ ? std::string_view(mapped_, size_) : std::string_view(owned_);
  }
  bool is_mapped() const { return mapped_ != nullptr; }
  /// The mapping's bytes, writable: only for map_copy_on_write (nullptr otherwise).
  char* copy_on_write_data() const { return copy_on_write_ ? mapped_ : nullptr; }

  /// Drops the resident pages wholly inside `range` (a sub-view of bytes()); the bytes stay
  /// readable. A no-op for an owned buffer and for a copy-on-write mapping (whose private copies
  /// of written pages it would discard).
  void release(std::string_view range) const;

 private:
  char* mapped_ = nullptr;
  size_t size_ = 0;
  bool copy_on_write_ = false;
  std::string owned_;
};

}  // namespace edgeattn::detail
