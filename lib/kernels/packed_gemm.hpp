// Internal: products C [rows, n] (+)= A [rows, k] op(B) with a small right operand (a layer's
// weight: k <= 512, n <= 256), computed by the register-blocked microkernel of the tiled
// attention kernels (kernels/parallel/flash_microkernel.hpp: 6 x 16 tiles on AVX2, 12 x 32 on
// AVX-512) instead of one BLAS call per row block. op(B) is packed once, as NR-wide column
// panels that stay in L1/L2 while every row block streams past them; BLAS repacks both operands
// on every call, which costs it about a third of the time at these shapes (bench/RESULTS.md).
//
//   PackedRight w(b, ldb, trans_b, k, n);         // op(B): b [k, n] or, transposed, b [n, k]
//   w.multiply(rows, a, lda, c, ldc, accumulate, scratch);   // any rows; call from any thread
//
// Every element of C is one fused multiply-add chain over kk = 0, 1, ..., k-1 starting from 0
// (or from C when accumulating), whatever the row block or tile it falls in: results do not
// depend on the blocking or the thread count, and two products of the same operands agree bit
// for bit. The serial oracle is kernels/reference/reference_matmul.cpp.
#pragma once

#include <cstdint>
#include <vector>

namespace edgeattn::kernels {

class PackedRight {
 public:
  /// Whether a right operand [k, n] is small enough for this path.
  static bool suits(int64_t k, int64_t n) { return k >= 1 && k <= 512 && n >= 1 && n <= 256; }

  /// Packs op(B) [k, n]: b is [k, n] (row stride ldb), or [n, k] when trans_b.
  PackedRight(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);

  /// Floats of scratch that multiply needs when n is not a multiple of the panel width (else 0).
  int64_t scratch_floats(int64_t rows) const;

  /// c [rows, n] (row stride ldc) = (accumulate ? c : 0) + a [rows, k] (row stride lda) op(B).
  /// `scratch` holds scratch_floats(rows) floats (may be null when that is 0).
  void multiply(int64_t rows, const float* a, int64_t lda, float* c, int64_t ldc, bool accumulate,
                float* scratch) const;

 private:
  int64_t k_, n_, padded_n_;
  std::vector<float> panels_;  // [padded_n / NR][k][NR]
};

/// Rows per task of a product split into row blocks: a multiple of every policy's tile height,
/// about 128 rows (a block of A up to 512 wide stays in L2 while it meets every panel).
inline constexpr int64_t kPackedBlockRows = 132;

}  // namespace edgeattn::kernels
