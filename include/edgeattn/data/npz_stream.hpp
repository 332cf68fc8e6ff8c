// Reading .npz members front to back without holding them: for arrays larger than memory (OGB's
// ogbn-papers100M stores 1.6 billion edges and 111 million float16 feature rows in one 57 GB
// npz, compressed by np.savez_compressed). data/npy.hpp's read_npz loads whole members; this
// header streams them.
//
//   npz_catalog(path)      every .npy member's key, dtype, shape and sizes, from the ZIP central
//                          directory and each member's first bytes (nothing else is inflated)
//   NpyStream(path, key)   one member's element bytes in order, inflated chunk by chunk (zlib),
//                          CRC-32 checked when the end is reached; skip() moves forward
//
// Memory: the file is memory-mapped and the pages already read are handed back as the stream
// moves on, so a stream holds its chunk plus zlib's 32 KB window. Only C-order little-endian
// members stream (what numpy writes on every common machine); others are a ParseError that says
// so. Errors name the archive and the member: ParseError for a malformed archive or header, a
// member that is not an .npy, a CRC mismatch or a truncated member; InvalidArgument for a key the
// archive does not hold (listing the keys it does); IoError for a missing file.
//
// Example (the sources of papers100M's edges, 1 million at a time):
//   edgeattn::data::NpyStream s("papers100M-bin/raw/data.npz", "edge_index");   // int64 [2, E]
//   const int64_t e = s.info().shape[1];
//   std::vector<int64_t> src(1 << 20);
//   for (int64_t done = 0; done < e;) {
//     const int64_t n = std::min<int64_t>(src.size(), e - done);
//     s.read_exact(std::as_writable_bytes(std::span(src.data(), n)));
//     done += n;   // ... use src[0, n) ...
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/data/npy.hpp"

namespace edgeattn::data {

/// One .npy member of an .npz archive, as its ZIP entry and .npy header describe it.
struct NpzMemberInfo {
  std::string key;  ///< the member name without ".npy"
  NpyDtype dtype;
  std::vector<int64_t> shape;
  uint64_t data_bytes = 0;    ///< numel * itemsize: the element bytes a stream delivers
  uint64_t stored_bytes = 0;  ///< the member's size inside the archive (compressed or not)
  bool compressed = false;    ///< deflated (np.savez_compressed) or stored (np.savez)

  int64_t numel() const;
};

/// The .npy members of an .npz file in archive order, reading only the central directory and the
/// first bytes of each member.
std::vector<NpzMemberInfo> npz_catalog(const std::filesystem::path& path);

/// Streams the element bytes of one member of an .npz file (see the file comment).
class NpyStream {
 public:
  NpyStream(const std::filesystem::path& path, const std::string& key);
  ~NpyStream();
  NpyStream(NpyStream&&) noexcept;
  NpyStream& operator=(NpyStream&&) noexcept;

  const NpzMemberInfo& info() const;
  /// Element bytes delivered (or skipped) so far, and those left.
  uint64_t position() const;
  uint64_t remaining() const;

  /// Reads the next min(out.size(), remaining()) element bytes into `out`; returns how many.
  size_t read(std::span<std::byte> out);
  /// Reads exactly out.size() bytes; ParseError naming the member when fewer remain.
  void read_exact(std::span<std::byte> out);
  /// Moves `bytes` forward (a deflated member is inflated and discarded: it cannot seek).
  /// ParseError when fewer remain.
  void skip(uint64_t bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend std::vector<NpzMemberInfo> npz_catalog(const std::filesystem::path& path);
};

}  // namespace edgeattn::data
