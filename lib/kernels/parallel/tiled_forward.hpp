// Tiled forward for dot-product attention over patterns whose rows are contiguous source ranges
// (complete, causal, sliding window with dilation 1, padded batches): the FlashAttention
// schedule (Dao et al. 2022) on the CPU with BLAS tiles. For each (head, tile of kRowTile rows)
// the kernel walks the tile's source hull in blocks of kColTile columns:
//   S = scale * Q_tile K_block^T                  (sgemm, kRowTile x kColTile)
//   per row: mask entries outside the row's range, add bias, online-softmax update, dropout
//   acc = diag(rescale) acc + P V_block             (sgemm)
// so the work runs at GEMM speed while memory stays O(tile) per task and nothing of size
// edges x features exists. Rows of a tile must share most of their range for this to pay off;
// `tiled_forward_applies` says when it is used.
#pragma once

#include "edgeattn/graph/pattern.hpp"
#include "kernels/attention_backend.hpp"

namespace edgeattn::kernels {

/// True when the tiled kernel handles this call: dot score, no per-edge weights requested, and a
/// pattern with contiguous rows whose mean row length is at least a few tiles' worth of work.
bool tiled_forward_applies(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out);

void tiled_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out);

}  // namespace edgeattn::kernels
