// Tiled dot-product attention over patterns whose rows are contiguous source ranges (complete,
// causal, sliding window with dilation 1, padded batches), and over explicit graphs whose rows
// are long and fill enough of their hulls (a row's hull: its first to its last source), with the
// columns that are not edges masked out: the FlashAttention schedule
// (Dao et al. 2022; backward as in FlashAttention-2, Dao 2023) on the CPU with register-blocked
// microkernels (flash_microkernel.hpp), no BLAS call per tile.
//
// Once per call, per head: K^T (pre-multiplied by the score scale) packed into NR-wide panels,
// and the other B operands (V; the backward's V^T panels, K, Q, dO) with widths padded to NR.
// Forward, per (head, tile of TileShape::kRows rows), walking the tile's source hull in blocks
// of kCols columns, and within a block MR-row strips of the tile:
//   S = Q_strip (scale K_block)^T       microkernel, only the NR panels the strip's rows reach
//   per row: mask (-inf) outside the row's range, add bias, online softmax (vector exp, max,
//            sum, rescale of the row's accumulator) or relu, dropout
//   acc_strip += P V_block               microkernel, over the strip's columns only
// Backward, with P recomputed from the saved row log-sum-exp and D_i = <dO_i, O_i>, in one pass
// over the columns (FlashAttention-2's schedule), 5 products:
//   per (head, group of column tiles), per column tile, per row tile it reaches:
//     S, P, dP = dO V^T, dS = P o (dP - D) for the tile (and d bias, written once per edge),
//     dV += P~^T dO, dK += dS^T Q into the column tile's accumulators,
//     dQ_rows += dS K into the group's partial of dQ
//   then dQ = sum of the groups' partials, in group order.
// The GPU kernel adds dQ atomically; here each group (consecutive column tiles, about 32 / H of
// them, a function of the shapes alone) owns a partial over the rows its columns reach, so the
// sum has one order whatever the thread count. Without dK and dV wanted, a row pass per
// (head, row tile) computes dQ instead (S, dP, dQ += dS K: 3 products, no partials); without O,
// the row pass first computes D_i = sum_j P_ij dP_ij (2 more products).
// Masking: blocks outside a tile's hull are skipped, and a strip computes only the panels its rows
// reach, so causal costs about half of complete and only diagonal blocks pay for masked entries.
// A graph's row is scheduled over its hull, from its first to its last source, and the sources
// inside it that are not edges get -inf in the strip epilogue, as entries outside a row's range
// do (a row without an edge in a block contributes zeros there): every score within the reached
// panels is computed, edge or not, at the microkernels' speed. That beats the per-edge kernels when
// the hulls are full enough (masked_tiled_min_fill; a 10%-dense random graph with one head: see
// bench/RESULTS.md), and the graph has no duplicate edge (the mask holds a pair once).
// Bias, dropout and relu run in the same schedule with scalar per-row epilogues (slower than the
// plain softmax, whose epilogue is all vector code).
// Each output element is owned by one task and blocks are visited in a fixed order, so results
// are bit-identical for any thread count. Memory: O(tile) per task plus the packed operands
// (the size of K and V, and in the backward also of Q and dO, each copied per head when H > 1 or
// its width is not a multiple of NR), and the backward's dQ partials (at most 4x dQ or 64 MiB,
// whichever is larger; for complete attention at N = 4096, H = 1, d = 64: 22 MiB). Forward and
// backward take heads in slices, so that their packed operands (two in the forward, five in the
// backward) stay within the larger of 16 MiB and a quarter of their all-heads size (window 256 at
// N = 16384, H = 8: the backward's peak RSS over what the caller holds 1.64x with all heads at
// once, 1.32x in slices of two). `tiled_applies` says when
// the schedule is used; other calls take the per-edge kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "edgeattn/graph/pattern.hpp"
#include "kernels/attention_backend.hpp"

namespace edgeattn::kernels {

/// The microkernel families (flash_microkernel.hpp). `automatic` is the widest compiled in;
/// tests name the others to check each against the reference on one machine.
enum class SimdPath { automatic, portable, avx2, avx512 };

/// True when `path` is compiled into this build (automatic and portable always are).
bool simd_path_available(SimdPath path);
/// The path `automatic` takes: "avx512", "avx2" or "portable".
const char* automatic_simd_path_name();

/// Below this mean row length the per-edge kernels win (tile hulls would be mostly masked).
inline constexpr double kTiledMinMeanRow = 64.0;

/// True for a pattern type whose rows are contiguous at run time (dilated windows are not).
template <class P>
bool has_contiguous_rows(const P& p) {
  if constexpr (std::is_same_v<P, WindowPattern>) {
    return p.dilation() == 1;
  } else {
    return ContiguousRowPattern<P>;
  }
}

/// How full an explicit graph's row hulls must be (num_edges / DegreeStats::row_extent) for the
/// tiled schedule, masked, to beat the per-edge kernels with `heads` heads in forward + backward
/// at d = 64: 0.07 sqrt(heads), measured (7% with one head, 20% with eight).
double masked_tiled_min_fill(int64_t heads);

/// True when the tiled schedule handles this call: dot score, no per-edge weights requested
/// (`want_alpha`), no inf or NaN operand on a masked pattern (KernelArgs::masked_non_finite),
/// rows of mean length >= kTiledMinMeanRow, and either contiguous rows or an explicit graph
/// without duplicate edges whose hulls are at least masked_tiled_min_fill full.
bool tiled_applies(const Pattern& p, const KernelArgs& a, bool want_alpha);

/// `path` must be available (simd_path_available); grads as in BackwardBuffers, except that
/// every element of dq, dk, dv and dbias is written (no zero-fill needed).
void tiled_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out,
                   SimdPath path = SimdPath::automatic);
void tiled_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                    const BackwardBuffers& grads, SimdPath path = SimdPath::automatic);

/// Tests only: caps the backward's dQ partials at `dq_partial_floats` (0: the default, the larger
/// of 16 Mi floats and 4x dQ of a slice of heads) and the forward's and backward's packed operands
/// at `packed_floats` per slice of heads (0: the default, the larger of 4 Mi floats and a quarter
/// of all heads'), so that small shapes reach the fallback to the row pass and the slicing of heads.
void set_tiled_budgets(int64_t dq_partial_floats, int64_t packed_floats);

}  // namespace edgeattn::kernels
