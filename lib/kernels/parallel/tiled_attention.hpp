// Tiled dot-product attention over patterns whose rows are contiguous source ranges (complete,
// causal, sliding window with dilation 1, padded batches): the FlashAttention schedule
// (Dao et al. 2022; backward as in FlashAttention-2, Dao 2023) on the CPU with BLAS tiles.
//
// Forward, per (head, tile of kRowTile rows), walking the tile's source hull in kColTile blocks:
//   S = scale * Q_tile K_block^T                  (sgemm)
//   per row: mask entries outside the row's range, add bias, online-softmax update, dropout
//   acc = diag(rescale) acc + P V_block             (sgemm)
// Backward, with P recomputed from the saved row log-sum-exp and D_i = <dO_i, O_i>:
//   row pass    per (head, row tile):    dS = P o (dP - D), dQ += scale dS K       (3 sgemm/block)
//   column pass per (head, column tile): dV += P~^T dO, dK += scale dS^T Q       (4 sgemm/block)
// Each output element is owned by one task and blocks are visited in a fixed order, so results
// are bit-identical for any thread count. Memory is O(tile) per task; nothing of size
// edges x features exists. `tiled_applies` says when the schedule is used; other calls take the
// per-edge kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "edgeattn/graph/pattern.hpp"
#include "kernels/attention_backend.hpp"

namespace edgeattn::kernels {

inline constexpr int64_t kRowTile = 64;
inline constexpr int64_t kColTile = 256;
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

/// True when the tiled schedule handles this call: dot score, no per-edge weights requested
/// (`want_alpha`), contiguous rows of mean length >= kTiledMinMeanRow.
bool tiled_applies(const Pattern& p, const KernelArgs& a, bool want_alpha);

void tiled_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out);
void tiled_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                    const BackwardBuffers& grads);

}  // namespace edgeattn::kernels
