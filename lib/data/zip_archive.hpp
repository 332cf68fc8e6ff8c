// Internal: a reader for ZIP archives held in memory, enough for numpy's .npz files.
//
// Supported: members stored (method 0) or deflated (method 8, raw deflate via zlib); ZIP64 end of
// central directory records and ZIP64 extra fields (numpy >= 1.15 writes every member with
// force_zip64, so its local headers carry 0xFFFFFFFF sizes and a ZIP64 extra field); data
// descriptors (general-purpose flag bit 3). Every member's CRC-32 is verified when it is
// extracted.
//
// Not supported, rejected with a ParseError: encryption, other compression methods, multi-disk
// archives. Every inconsistency (an offset or size past the end of the archive, local and central
// headers that disagree, members that overlap each other or the central directory, a member that
// inflates to more or fewer bytes than declared, a CRC mismatch) is a ParseError naming the
// archive, the member and the byte offset.
//
// Zip bombs: a member is never inflated beyond its declared size, declared sizes are bounded by
// `ZipLimits`, and a deflated member may not declare more than deflate's maximum expansion
// (1032:1) of its compressed size; members may not overlap, so a small archive cannot expand to
// more than ~1000x its own size.
//
// Usage:
//   ZipArchive zip(bytes, "cora.npz");
//   for (const ZipMember& m : zip.members()) {
//     std::string data = zip.extract(m);   // verified bytes of the member
//   }
//   // or, for a stored member, without a copy: zip.stored_view(m)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeattn::data {

/// Upper bounds a caller places on what an archive may expand to.
struct ZipLimits {
  uint64_t max_member_bytes = uint64_t{16} << 30;  ///< uncompressed size of one member
  uint64_t max_total_bytes = uint64_t{64} << 30;   ///< uncompressed size of all members together
  uint64_t max_members = 1u << 20;
};

/// One member as described by the central directory (ZIP64 fields resolved).
struct ZipMember {
  std::string name;
  uint16_t method = 0;  ///< 0 stored, 8 deflated
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;  ///< where the member's local header starts
  uint64_t data_offset = 0;          ///< where its (compressed) data starts
};

class ZipArchive {
 public:
  /// Parses and cross-checks the central directory and every local header. `bytes` must outlive
  /// the archive; `what` names it in errors (usually the file path).
  ZipArchive(std::string_view bytes, std::string what, const ZipLimits& limits = {});

  /// Members in central-directory order.
  const std::vector<ZipMember>& members() const { return members_; }
  /// The member's uncompressed bytes, CRC-checked.
  std::string extract(const ZipMember& member) const;
  /// A stored (method 0) member's bytes in place, CRC-checked, without a copy; nullopt for a
  /// deflated member (use extract). The view lives as long as the archive's bytes.
  std::optional<std::string_view> stored_view(const ZipMember& member) const;

 private:
  std::string_view bytes_;
  std::string what_;
  std::vector<ZipMember> members_;
};

}  // namespace edgeattn::data
