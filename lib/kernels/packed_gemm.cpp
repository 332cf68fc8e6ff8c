#include "kernels/packed_gemm.hpp"

#include <algorithm>
#include <cstring>

#include "core/prefetch.hpp"
#include "edgeattn/core/error.hpp"
#include "kernels/parallel/flash_microkernel.hpp"

namespace edgeattn::kernels {
namespace {

using P = flash::Best;
using Wide = flash::WideTile<P>;
using Narrow = flash::NarrowTile<P>;
constexpr int64_t kWideNR = int64_t{Wide::kVecs} * P::kLanes;
constexpr int64_t kNarrowNR = int64_t{Narrow::kVecs} * P::kLanes;

// The tile for an operand side of n columns: the narrow one where it has one and n fits its panel
// (n <= 16 on AVX-512: an output layer's classes), the wide one where it has one and n needs no
// more padding in its panels than in the policy's (n = 33-64, 97-128, ...), else the policy's.
PanelTile tile_for(int64_t n) {
  if (Narrow::kEnabled && n <= kNarrowNR) return PanelTile::narrow;
  if (Wide::kEnabled && flash::round_up_panel<P, kWideNR>(n) == flash::round_up_panel<P>(n))
    return PanelTile::wide;
  return PanelTile::policy;
}

int64_t padded_width(PanelTile tile, int64_t n) {
  switch (tile) {
    case PanelTile::narrow:
      return flash::round_up_panel<P, kNarrowNR>(n);
    case PanelTile::wide:
      return flash::round_up_panel<P, kWideNR>(n);
    default:
      return flash::round_up_panel<P>(n);
  }
}

// f.template operator()<MR, NV>() with the tile's strip height and vectors per row.
template <class F>
void with_tile(PanelTile tile, F&& f) {
  switch (tile) {
    case PanelTile::narrow:
      f.template operator()<Narrow::kRows, Narrow::kVecs>();
      break;
    case PanelTile::wide:
      f.template operator()<Wide::kRows, Wide::kVecs>();
      break;
    default:
      f.template operator()<P::kRows, P::kVecs>();
  }
}

// The rows of A that multiply prefetches, this many rows ahead of the strip it computes (two of
// the policy's strips, whichever tile runs). A strip's rows are met once, by its first panel,
// which otherwise waits on them: A streams from memory (a layer's input, 100-512 floats a row)
// while the packed panels stay in cache. Measured on [237k, 100] x [100, 64], 2 threads, 2-core
// Zen 3: 31-34 ms without, 27-29 ms two strips ahead (one ahead gave the same on some runs and
// 43 ms on others: the lines arrive late).
constexpr int64_t kPrefetchRows = 2 * P::kRows;
static_assert(kPackedBlockRows % P::kRows == 0 && kPackedBlockRows % Wide::kRows == 0 &&
                  kPackedBlockRows % Narrow::kRows == 0,
              "row blocks are whole tile strips");
// Rows per slab of TransposeAccumulator::add: both operands' slabs (up to 512 floats a row) stay in
// L2 while every strip and panel of the sum meets them.
constexpr int64_t kTransposeSlab = 256;

// The multiple-of-NR padding work of holding a sum of `rows` x `cols` (cols the panel side):
// tile strips and panels the microkernel computes, counting a partial strip as a whole one.
int64_t padded_work(int64_t rows, int64_t cols) {
  return flash::round_up_panel<P>(cols) * ((rows + P::kRows - 1) / P::kRows * P::kRows);
}

// Asks for the n floats of a row read from memory, into L1: every line, and the last one when
// the row starts mid-line.
void prefetch_row_lines(const float* row, int64_t n) {
  for (int64_t x = 0; x < n; x += 16) detail::prefetch_read<3>(row + x);
  detail::prefetch_read<3>(row + n - 1);
}

// c [rows, NR-padded width] (+)= a [rows, k] times the packed panels, strips of MR rows outside and
// panels inside: a strip of A (MR x k) stays in L1 across panels. The strip kPrefetchRows ahead is
// prefetched: A streams from memory (a layer's input, 100-512 floats a row) while the panels stay
// in cache.
template <int MR, int NV>
void multiply_strips(int64_t rows, int64_t k, int64_t padded_n, const float* panels, const float* a,
                     int64_t lda, float* c, int64_t ldc, bool accumulate) {
  constexpr int64_t NR = int64_t{NV} * P::kLanes;
  static constexpr auto kTail = flash::micro_table<P, false, NV>(std::make_index_sequence<MR>());
  static constexpr auto kTailAcc = flash::micro_table<P, true, NV>(std::make_index_sequence<MR>());
  for (int64_t i = 0; i < rows; i += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - i);
    if (const int64_t ahead = i + kPrefetchRows; ahead < rows) {
      const int64_t strip_rows = std::min<int64_t>(MR, rows - ahead);
      for (int64_t r = 0; r < strip_rows; ++r) prefetch_row_lines(a + (ahead + r) * lda, k);
    }
    for (int64_t j = 0; j < padded_n; j += NR) {
      const float* panel = panels + j * k;
      float* out = c + i * ldc + j;
      if (mr == MR) {
        if (accumulate)
          flash::micro<P, MR, true, NV>(k, a + i * lda, lda, 1, panel, NR, out, ldc);
        else
          flash::micro<P, MR, false, NV>(k, a + i * lda, lda, 1, panel, NR, out, ldc);
      } else {
        (accumulate ? kTailAcc : kTail)[static_cast<size_t>(mr - 1)](k, a + i * lda, lda, 1, panel, NR, out,
                                                                     ldc);
      }
    }
  }
}

}  // namespace

PackedRight::PackedRight(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n)
    : k_(k),
      n_(n),
      tile_(tile_for(n)),
      padded_n_(padded_width(tile_, n)),
      panels_(static_cast<size_t>(padded_n_ * k)) {
  with_tile(tile_, [&]<int MR, int NV>() {
    constexpr int64_t nr = int64_t{NV} * P::kLanes;
    if (trans_b) {  // b [n, k]: panel p holds rows p*NR.. of b, transposed
      flash::pack_transposed_panels<P, nr>(n, k, b, ldb, 1.f, panels_.data());
      return;
    }
    for (int64_t p0 = 0; p0 < padded_n_; p0 += nr) {  // b [k, n]: panel p holds columns p*NR..
      float* panel = panels_.data() + p0 * k;
      const int64_t cols = std::min(nr, n - p0);
      for (int64_t kk = 0; kk < k; ++kk) {
        std::copy_n(b + kk * ldb + p0, cols, panel + kk * nr);
        std::fill(panel + kk * nr + cols, panel + (kk + 1) * nr, 0.f);
      }
    }
  });
}

int64_t PackedRight::scratch_floats(int64_t rows) const { return n_ == padded_n_ ? 0 : rows * padded_n_; }

void PackedRight::multiply(int64_t rows, const float* a, int64_t lda, float* c, int64_t ldc, bool accumulate,
                           float* scratch) const {
  if (rows <= 0) return;
  // C itself when its width is whole panels; else a padded copy, written back after.
  const bool direct = n_ == padded_n_;
  float* target = direct ? c : scratch;
  const int64_t ldt = direct ? ldc : padded_n_;
  if (!direct && accumulate)
    for (int64_t r = 0; r < rows; ++r) std::copy_n(c + r * ldc, n_, target + r * ldt);
  with_tile(tile_, [&]<int MR, int NV>() {
    multiply_strips<MR, NV>(rows, k_, padded_n_, panels_.data(), a, lda, target, ldt, accumulate);
  });
  if (!direct)
    for (int64_t r = 0; r < rows; ++r) std::copy_n(target + r * ldt, n_, c + r * ldc);
}

TransposeAccumulator::TransposeAccumulator(int64_t m, int64_t n) : m_(m), n_(n) {
  if (!suits(m, n))
    raise<InvalidArgument>("TransposeAccumulator: C is [", m, ", ", n,
                           "], expected both extents in [1, 512]");
  // Hold C [m, n] (b's rows as panels) unless C^T [n, m] wastes less of the padded tiles.
  transposed_ = padded_work(n, m) < padded_work(m, n);
  rows_ = transposed_ ? n : m;
  cols_ = transposed_ ? m : n;
  tile_ = tile_for(cols_);
  padded_cols_ = padded_width(tile_, cols_);
  sum_.assign(static_cast<size_t>(rows_ * padded_cols_), 0.f);
  if (padded_cols_ != cols_) pad_.assign(static_cast<size_t>(kTransposeSlab * padded_cols_), 0.f);
  with_tile(tile_, [&]<int MR, int NV>() {
    q_pack_.assign(static_cast<size_t>((rows_ + MR - 1) / MR * MR * kTransposeSlab), 0.f);
  });
}

void TransposeAccumulator::reset() { std::fill(sum_.begin(), sum_.end(), 0.f); }

void TransposeAccumulator::add(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb) {
  // The held sum S [rows_, cols_] += Q^T Pn: Q the broadcast operand, Pn the panel operand.
  const float* q = transposed_ ? b : a;
  const float* panels = transposed_ ? a : b;
  const int64_t ldq = transposed_ ? ldb : lda, ldp = transposed_ ? lda : ldb;
  for (int64_t k0 = 0; k0 < k; k0 += kTransposeSlab) {
    const int64_t len = std::min(kTransposeSlab, k - k0);
    const float* qs = q + k0 * ldq;
    const float* ps = panels + k0 * ldp;
    with_tile(tile_, [&]<int MR, int NV>() {
      constexpr int64_t nr = int64_t{NV} * P::kLanes;
      int64_t lds = ldp;
      const float* rows = ps;
      if (!pad_.empty()) {  // the panel operand's rows padded with zeros to whole panels
        flash::pack_rows<P, nr>(len, cols_, ps, ldp, pad_.data());
        rows = pad_.data();
        lds = padded_cols_;
      }
      // S(i, j) += sum over the slab's rows r of Q(r, i) Pn(r, j). Read in place, the
      // microkernel's A(i, r) = q[r * ldq + i] would take one cache line a row for a strip's MR
      // values; the slab of Q is packed first as MR-row strips, [strip][r][MR] (zeros past
      // rows_), so a strip's values are contiguous. The same values in the same order: the same
      // bits.
      //
      // The panel operand read in place (a gradient dy streaming from memory) is prefetched row
      // by row as Q is packed: its lines then arrive together while the pack runs, where the
      // first strip of each panel had waited on them one row at a time (weight gradient
      // [237k, 64]^T x [237k, 100] on the 2-core Zen 3: 35-40 ms before, 28-30 ms with this
      // and the pack's whole-strip copies; kernels_packed_gemm_bench).
      const int64_t strips = (rows_ + MR - 1) / MR, full_strips = rows_ / MR;
      float* packed = q_pack_.data();
      for (int64_t r = 0; r < len; ++r) {
        const float* src = qs + r * ldq;
        if (pad_.empty()) prefetch_row_lines(ps + r * ldp, cols_);
        for (int64_t s = 0; s < full_strips; ++s)  // a copy of MR floats: a few vector moves
          std::memcpy(packed + (s * len + r) * MR, src + s * MR, MR * sizeof(float));
        if (full_strips < strips) {
          float* dst = packed + (full_strips * len + r) * MR;
          const int64_t n = rows_ - full_strips * MR;
          for (int64_t x = 0; x < n; ++x) dst[x] = src[full_strips * MR + x];
          for (int64_t x = n; x < MR; ++x) dst[x] = 0.f;
        }
      }
      static constexpr auto kTail = flash::micro_table<P, true, NV>(std::make_index_sequence<MR>());
      for (int64_t j = 0; j < padded_cols_; j += nr)
        for (int64_t s = 0; s < strips; ++s) {
          const int64_t i = s * MR, m = std::min<int64_t>(MR, rows_ - i);
          const float* a = packed + s * len * MR;
          float* c = sum_.data() + i * padded_cols_ + j;
          if (m == MR)
            flash::micro<P, MR, true, NV>(len, a, 1, MR, rows + j, lds, c, padded_cols_);
          else
            kTail[static_cast<size_t>(m - 1)](len, a, 1, MR, rows + j, lds, c, padded_cols_);
        }
    });
  }
}

void TransposeAccumulator::write(float* c, int64_t ldc, bool accumulate) const {
  for (int64_t i = 0; i < m_; ++i)
    for (int64_t j = 0; j < n_; ++j) {
      const float s = transposed_ ? sum_[static_cast<size_t>(j * padded_cols_ + i)]
                                  : sum_[static_cast<size_t>(i * padded_cols_ + j)];
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + s : s;
    }
}

}  // namespace edgeattn::kernels
