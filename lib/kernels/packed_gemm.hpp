// Internal: products C [rows, n] (+)= A [rows, k] op(B) with a small right operand (a layer's
// weight: k <= 512, n <= 256), computed by the register-blocked microkernel of the tiled
// attention kernels (kernels/parallel/flash_microkernel.hpp: 6 x 16 tiles on AVX2, 12 x 32 on
// AVX-512, or there 6 x 64 when n fills 64-column panels as well as 32-column ones, WideTile, and
// 12 x 16 when n <= 16, NarrowTile) instead of one BLAS call per row block. op(B) is packed once,
// as NR-wide column panels that stay in L1/L2 while every row block streams past them; BLAS
// repacks both operands on every call, which costs it about a third of the time at these shapes
// (bench/RESULTS.md).
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

/// Which register tile a product's panels are cut for (kernels/parallel/flash_microkernel.hpp):
/// the vector policy's own, or on AVX-512 the wide 6 x 64 or the narrow 12 x 16 one.
enum class PanelTile : uint8_t { policy, wide, narrow };

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
  int64_t k_, n_;
  PanelTile tile_;  // whose panels: flash::WideTile, flash::NarrowTile or the policy's
  int64_t padded_n_;
  std::vector<float> panels_;  // [padded_n / NR][k][NR]
};

/// Transposed products summed over row slabs, C [m, n] = sum of a^T b with a [k, m] and b [k, n]:
/// a weight gradient dW [out, in] = dy^T x over a chunk of rows, fed slab by slab (a dropped
/// slab of x built in a buffer just before, say). The same microkernel as PackedRight, with the
/// slab's rows as its inner index: one operand is read as NR-wide row panels in place (padded
/// through a copy only when neither width is whole panels; prefetched a slab at a time while
/// the other is packed), the other broadcast column by column, packed per slab as MR-row
/// strips, and the sum stays in a padded block that fits in L2 (m, n <= 512). BLAS would
/// repack both operands on every slab.
///
///   TransposeAccumulator acc(out, in);
///   for (each slab of rows) acc.add(rows, dy + r0 * out, out, x_slab, in);   // C += dy^T x
///   acc.write(dw, in, /*accumulate=*/true);                                  // dw += C
///
/// Every element of C is one fused multiply-add chain over the rows in the order they were
/// added, starting from 0, whatever the slab sizes: results depend on the rows alone, so fixed
/// chunks summed in order give a weight gradient that is bit-identical for any thread count.
/// One accumulator per thread. The serial oracle is reference_matmul (trans_a).
class TransposeAccumulator {
 public:
  /// Whether C [m, n] is small enough for this path.
  static bool suits(int64_t m, int64_t n) { return m >= 1 && m <= 512 && n >= 1 && n <= 512; }

  /// C [m, n] = 0.
  TransposeAccumulator(int64_t m, int64_t n);
  /// C = 0 again.
  void reset();
  /// C += a^T b over k rows: a [k, m] (row stride lda), b [k, n] (row stride ldb).
  void add(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb);
  /// c [m, n] (row stride ldc) = (accumulate ? c : 0) + C.
  void write(float* c, int64_t ldc, bool accumulate) const;

 private:
  int64_t m_, n_;
  bool transposed_;                     // the sum is held as C^T [n, m]: a is the panel operand
  int64_t rows_, cols_;                 // of the held sum: the broadcast operand's width, the panel operand's
  PanelTile tile_ = PanelTile::policy;  // the tile for the panel operand's side
  int64_t padded_cols_;                 // cols_ rounded up to whole panels
  std::vector<float> sum_;              // [rows_, padded_cols_]
  std::vector<float> pad_;     // a slab of the panel operand, padded (when cols_ is not whole panels)
  std::vector<float> q_pack_;  // a slab of the broadcast operand as MR-row strips
};

/// Rows per task of a product split into row blocks: a multiple of every policy's tile height,
/// about 128 rows (a block of A up to 512 wide stays in L2 while it meets every panel).
inline constexpr int64_t kPackedBlockRows = 132;

}  // namespace edgeattn::kernels
