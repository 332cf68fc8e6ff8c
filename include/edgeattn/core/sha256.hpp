// SHA-256 (FIPS 180-4), for verifying dataset files against the manifest and for checksumming
// saved models.
//
// Example:
//   edgeattn::Sha256 h;
//   h.update(bytes);
//   std::string hex = h.hex_digest();       // 64 lowercase hex digits
//   edgeattn::sha256_hex("abc");            // "ba7816bf..."
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace edgeattn {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  /// Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  uint64_t length_ = 0;  // bytes hashed so far
  size_t buffered_ = 0;
};

/// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace edgeattn
