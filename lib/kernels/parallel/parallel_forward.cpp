// Fused graph-attention forward: one pass per destination row with an online softmax (two passes
// for GAT's additive score, see below).
//
// For row i and head h, edges arrive in CSR order; the kernel keeps the running maximum m, the
// running sum l of exp(s - m) and the running weighted sum acc of values, rescaling both by
// exp(m_old - m_new) when the maximum grows (Milakov & Gimelshein 2018, "Online normalizer
// calculation for softmax"; the same recurrence as FlashAttention, Dao et al. 2022). At the end
// out = acc / l and the row log-sum-exp m + log(l) is saved for backward. Nothing of size
// edges x features is stored; with dropout, the value sum uses the masked weights while l uses all
// of them, so the kept weights are alpha * mask / (1 - p) exactly as in the reference.
//
// Rows are processed in parallel over the pattern's edge-balanced row chunks (pull style: each
// row is written by one task, no atomics), so results are identical for any thread count.
// The update is branch-free per head (two exps) so that loops over heads and features vectorise.
// For the additive score (a gather and an add per edge) the row is walked twice instead: first
// for the maximum, then for exp(s - max) with no rescaling, which takes the exp -> rescale
// dependency chain off the edges.
#include <cfloat>
#include <cmath>
#include <type_traits>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/parallel/edge_scores.hpp"
#include "kernels/parallel/tiled_attention.hpp"

namespace edgeattn::kernels {
namespace {

template <bool kSoftmax, class Dm, class P, class S>
void forward_rows(const P& pattern, const S& score, const KernelArgs& a, const ForwardBuffers& out) {
  const int64_t heads = Dm::heads > 0 ? Dm::heads : a.heads;
  const int64_t dv = Dm::dv > 0 ? Dm::dv : a.dv;
  const int64_t lanes = padded_heads(heads);
  const float keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
  parallel_for_chunks(pattern.partition(), [&](size_t, int64_t row_begin, int64_t row_end) {
    // Scratch, per task: s (score), w (weight), c (rescale), m (max), l (sum) [lanes] each; acc [H, dv].
    std::vector<float> scratch(static_cast<size_t>(6 * lanes + heads * dv));
    float* s = scratch.data();
    float* w = s + lanes;
    float* c = w + lanes;
    float* m = c + lanes;
    float* l = m + lanes;
    float* kf = l + lanes;  // dropout keep factors
    float* acc = kf + lanes;
    // Explicit graphs gather source rows at random: prefetch a few edges ahead. (Structured
    // patterns walk sources in order, which the hardware prefetcher already follows.)
    const int32_t* cols = nullptr;
    int64_t edge_end = 0;
    if constexpr (std::is_same_v<P, CsrPattern>) {
      cols = pattern.graph().col_idx().data();
      edge_end = pattern.row_offset(row_end);
    }
    for (int64_t i = row_begin; i < row_end; ++i) {
      std::fill_n(m, lanes, -FLT_MAX);
      std::fill_n(l, lanes, 0.f);
      std::fill_n(acc, heads * dv, 0.f);
      // GAT's additive score costs a gather and an add, so computing it twice is cheaper than the
      // online softmax's per-edge rescale, whose exp -> rescale chain serialises the edges: pass 1
      // finds the row maximum, pass 2 sums exp(s - max) with no rescaling (independent edges).
      constexpr bool kTwoPass = kSoftmax && kIsAdditive<S>;
      if constexpr (kTwoPass) {
        pattern.for_each_in_row(i, [&](int32_t j, int64_t e) {
          // The max pass gathers only score rows, so it prefetches only those; the value rows
          // are requested by the second pass (fetching them here too, a row early, was 1.6x
          // slower at 10M edges: it crowds out the score gathers this pass waits on).
          if constexpr (std::is_same_v<P, CsrPattern>) {
            if (e + kPrefetchEdges < edge_end) score.prefetch_src(cols[e + kPrefetchEdges]);
          }
          score.scores(i, j, s);
          if (a.bias)
            for (int64_t h = 0; h < heads; ++h) s[h] += a.bias[e * heads + h];
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) m[h] = m[h] > s[h] ? m[h] : s[h];
        });
      }
      pattern.for_each_in_row(i, [&](int32_t j, int64_t e) {
        if constexpr (std::is_same_v<P, CsrPattern>) {
          if (e + kPrefetchEdges < edge_end) {
            const int64_t ahead = cols[e + kPrefetchEdges];
            score.prefetch_src(ahead);
            prefetch_row(a.v + ahead * heads * dv, heads * dv);
          }
        }
        score.scores(i, j, s);
        if (a.bias)
          for (int64_t h = 0; h < heads; ++h) s[h] += a.bias[e * heads + h];
        if constexpr (kTwoPass) {
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) {
            w[h] = fast_exp(s[h] - m[h]);
            l[h] += w[h];
          }
        } else if constexpr (kSoftmax) {
          online_softmax_step(lanes, s, m, l, c, w);
        } else {
          for (int64_t h = 0; h < heads; ++h) w[h] = std::max(s[h], 0.f);
        }
        if (a.dropout > 0.f) {
          dropout_keep_heads(a.seed, i, j, heads, a.dropout, keep_scale, kf);
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) w[h] *= kf[h];
        }
        const float* vj = a.v + static_cast<int64_t>(j) * heads * dv;
        if constexpr (kTwoPass)
          accumulate(heads, dv, acc, w, vj);
        else if constexpr (kSoftmax)
          rescale_accumulate(heads, dv, acc, c, w, vj);
        else
          accumulate(heads, dv, acc, w, vj);
      });
      float* out_i = out.out + i * heads * dv;
      if constexpr (kSoftmax) {
        for (int64_t h = 0; h < heads; ++h) {
          const float inv = l[h] > 0.f ? 1.f / l[h] : 0.f;
          for (int64_t d = 0; d < dv; ++d) out_i[h * dv + d] = acc[h * dv + d] * inv;
          out.lse[i * heads + h] = l[h] > 0.f ? m[h] + std::log(l[h]) : -INFINITY;
        }
      } else {
        std::copy_n(acc, heads * dv, out_i);
      }
      if (out.alpha) {  // second pass over the row, only when weights are requested
        const float* lse = kSoftmax ? out.lse + i * heads : nullptr;
        pattern.for_each_in_row(i, [&](int32_t j, int64_t e) {
          score.scores(i, j, s);
          float* alpha_e = out.alpha + e * heads;
          for (int64_t h = 0; h < heads; ++h) {
            const float sh = a.bias ? s[h] + a.bias[e * heads + h] : s[h];
            alpha_e[h] = kSoftmax ? fast_exp(sh - lse[h]) : std::max(sh, 0.f);
          }
        });
      }
    }
  });
}

}  // namespace

void parallel_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out) {
  if (tiled_applies(p, a, out.alpha != nullptr)) return tiled_forward(p, a, out);
  visit_pattern(p, [&](const auto& pattern) {
    visit_score_dims(a, [&](const auto& score, auto dims) {
      using Dm = decltype(dims);
      if (a.norm == Normalization::softmax)
        forward_rows<true, Dm>(pattern, score, a, out);
      else
        forward_rows<false, Dm>(pattern, score, a, out);
    });
  });
}

}  // namespace edgeattn::kernels
