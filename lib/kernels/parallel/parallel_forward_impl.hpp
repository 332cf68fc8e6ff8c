// The templates of the fused graph-attention forward (parallel_forward.cpp dispatches to them),
// instantiated one pattern per file (instantiations/<pattern>_forward.cpp) so that a
// build spreads them over its cores.
// Fused graph-attention forward: one pass per destination row with an online softmax.
//
// For row i and head h, edges arrive in CSR order; the kernel keeps a running shift m, the
// running sum l of exp(s - m) and the running weighted sum acc of values (Milakov & Gimelshein
// 2018, "Online normalizer calculation for softmax"; the same recurrence as FlashAttention, Dao et
// al. 2022). At the end out = acc / l and the row log-sum-exp m + log(l) is saved for backward.
// With edge attributes (the dot score's, TransformerConv's edge_dim) each edge adds its
// projection ve_e to its value as it passes. Nothing of size edges x features is stored; with
// dropout, the value sum uses the masked weights while l uses all of them, so the kept weights
// are alpha * mask / (1 - p) exactly as in the reference.
//
// A row's edges are read in blocks of up to 32: the block's scores first, then its maximum per
// head, then the weights and value sums. The first block sets m to its maximum; a later one
// raises m only when its maximum exceeds m by more than kRescaleMargin (8), and then rescales l
// and acc (the threshold rescaling of FlashAttention-3, Shah et al. 2024). Every weight
// exp(s - m) therefore stays below e^8 and l stays finite, while the common edge costs one exp
// per head, no rescale of acc and no data-dependent branch. Any shift gives the same softmax; the
// rounding differs from a max-shifted one by a few ulps. With one head (GAT's output layer) a
// block's exps, dropout keep factors and kept weights are loops over its edges, which vectorise;
// edge by edge, one head's scalar exp and dropout hash cost more than its few value products.
// An explicit graph's one-head rows of at most one block and 8 features run in a loop of their
// own, the value sum, normalisation and store in one register, and one-head rows' lse are
// computed 64 rows at a time in vectors (short_row, set_lse below): Cora's output layer, rows of
// 4.9 edges, had paid more per row than for its edges.
//
// With ForwardBuffers::dst_terms (GAT's 8 x 8 additive softmax or one head, for the backward: see
// parallel_backward_impl.hpp) each block also sums U += w g v_j and G += exp(s - m) g, g the
// LeakyReLU's slope at the edge's score (rescaled with acc and l), and the row stores O_i and
// V_i = (U - (G / l) acc) / l: the backward's destination pass then reads no edges. U's sums read
// the block's value rows a second time, from L1 (one head's short rows: a second register sum).
//
// Rows are processed in parallel over the pattern's edge-balanced row chunks (pull style: each
// row is written by one task, no atomics), so results are identical for any thread count. For
// explicit graphs the kernel prefetches the source rows of the edges some way ahead (see
// prefetch_distance), and when the output is larger than the last-level cache it is written with
// streaming stores, which skip reading each output line before overwriting it.
#pragma once

#include <array>
#include <cfloat>
#include <cmath>
#include <type_traits>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/parallel/edge_scores.hpp"
#include "kernels/parallel/tiled_attention.hpp"

namespace edgeattn::kernels::detail {

/// Per-task state of one destination row: s (scores), w (weights), c (rescale), m (shift),
/// l (sum), kf (dropout keep factors), [lanes] each, and acc [H, dv]. With compile-time extents it
/// lives in a fixed-size array on the task's stack, so that every loop over heads and features
/// has constant bounds; otherwise in a vector sized at run time.
template <class Dm>
class RowState {
 public:
  static constexpr bool kFixed = Dm::heads > 0 && Dm::dv > 0;

  RowState(int64_t lanes, int64_t heads, int64_t dv) {
    if constexpr (!kFixed) storage_.resize(static_cast<size_t>(6 * lanes + heads * dv));
    float* p = storage_.data();
    for (float** slot : {&s, &w, &c, &m, &l, &kf}) {
      *slot = p;
      p += lanes;
    }
    acc = p;
  }
  RowState(const RowState&) = delete;  // the pointers below point into this object's storage
  RowState& operator=(const RowState&) = delete;
  float *s, *w, *c, *m, *l, *kf, *acc;

 private:
  static constexpr size_t kFixedSize = kFixed ? static_cast<size_t>(6 * Dm::heads + Dm::heads * Dm::dv) : 1;
  alignas(64) std::conditional_t<kFixed, std::array<float, kFixedSize>, std::vector<float>> storage_;
};

template <bool kSoftmax, class Dm, class P, class S>
void forward_rows(const P& pattern, const S& score, const KernelArgs& a, const ForwardBuffers& out) {
  const int64_t heads = Dm::heads > 0 ? Dm::heads : a.heads;
  const int64_t dv = Dm::dv > 0 ? Dm::dv : a.dv;
  // State arrays are padded to whole vectors when the head count is known only at run time.
  const int64_t lanes = Dm::heads > 0 ? Dm::heads : padded_heads(heads);
  const int64_t width = heads * dv;
  const float keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
  // An edge gathers its source's score-side row (none when the score reads the value row) and
  // its value row.
  const int64_t ahead = prefetch_distance(src_score_lines(score) + row_lines(width));
  const bool gathers_beyond_cache =
      gathered_bytes(pattern.num_src(), score.width() + width) > kGatherCachedBytes;
  const bool stream = streaming_stores_apply(out.out, pattern.num_dst(), width);
  // The dot score with edge attributes adds each edge's projection ve_e to its value too.
  constexpr bool edge_values = kIsDot<S> && kHasEdgeAttributes<S>;
  parallel_for_chunks(pattern.partition(), [&](size_t, int64_t row_begin, int64_t row_end) {
    RowState<Dm> st(lanes, heads, dv);
    float *s = st.s, *w = st.w, *m = st.m, *l = st.l, *kf = st.kf, *acc = st.acc;
    std::vector<float> ve(edge_values ? static_cast<size_t>(width) : 0);
    // Explicit graphs gather source rows at random: prefetch them ahead. (Structured patterns
    // walk sources in order, which the hardware prefetcher already follows.)
    const int32_t* cols = nullptr;
    int64_t edge_end = 0;
    if constexpr (std::is_same_v<P, CsrPattern>) {
      cols = pattern.graph().col_idx().data();
      // Gathered rows that fit in cache together are not prefetched (edge_end 0 turns every
      // prefetch off): the prefetch's index load and address arithmetic then cost more than
      // they hide (GAT's one-head output layer on Cora: 7 values and 1 score a source).
      if (gathers_beyond_cache) edge_end = pattern.row_offset(row_end);
    }
    // The value rows' own prefetches, in the value sums; none when the score pass has read (and
    // prefetched) them already.
    const int64_t value_edge_end = reads_value_rows(score) ? 0 : edge_end;
    // Softmax rows run in blocks of up to kBlock edges: first the block's scores (prefetching
    // the score rows ahead), then one test of the shift against the block's maxima, then the
    // weights and the value sums (prefetching the value rows ahead). An edge's exp no longer
    // waits on a data-dependent branch, and the edges of a block are independent, so their exps
    // overlap; the first block of each row sets the shift once instead of on its first edge.
    constexpr int kBlock = 32;
    std::vector<float> block_storage(kSoftmax ? static_cast<size_t>((kBlock + 1) * lanes) : 0);
    float* block_s = block_storage.data();        // [kBlock, lanes] scores (with bias)
    float* block_max = block_s + kBlock * lanes;  // [lanes]
    // One head without edge values: the block's weights and keep factors as arrays [2, kBlock].
    constexpr bool kSingleHead = Dm::heads == 1 && !edge_values;
#if defined(__AVX__)
    constexpr bool kShortRowsInRegisters =
        kSingleHead && kSoftmax && std::is_same_v<P, CsrPattern>;  // short_row
#else
    constexpr bool kShortRowsInRegisters = false;
#endif
    std::array<float, kSingleHead ? 2 * kBlock : 1> block_w{};
    // GAT's 8 x 8 without edge values: the block's kept weights [kBlock, 8], then the value sums
    // with the accumulator in registers (vector_math.hpp: accumulate_8x8_rows).
    constexpr bool kBlock8x8 = Dm::heads == 8 && Dm::dv == 8 && !edge_values;
    std::array<float, kBlock8x8 ? 8 * kBlock : 1> block_w8{};
    // The backward's destination terms (ForwardBuffers::dst_terms; additive 8 x 8 softmax): per
    // row the running U [8 x 8] and G [8] beside acc and l (rescaled with them), and the block's
    // weights times g = LeakyReLU'(z).
    constexpr bool kDstTerms = kBlock8x8 && kSoftmax && kIsAdditive<S>;
    const bool dst_terms = kDstTerms && out.dst_terms != nullptr;
    // The same terms for one head (GAT's output layer over a large graph): U [dv] and G beside
    // acc and l in u_one (rescaled with them), the block's kept weights times g in block_wg1.
    constexpr bool kDstTerms1 = kSingleHead && kSoftmax && kIsAdditive<S> && std::is_same_v<P, CsrPattern>;
    const bool dst_terms1 = kDstTerms1 && out.dst_terms != nullptr;
    std::vector<float> u_one(dst_terms1 ? static_cast<size_t>(dv + 1) : 0);  // U [dv], then G
    std::array<float, kDstTerms1 ? kBlock : 1> block_wg1{};
    // Written once and read only by the backward: large ones with streaming stores, as out.
    const bool stream_terms =
        dst_terms && streaming_stores_apply(out.dst_terms, pattern.num_dst(), 2 * width);
    // A long row's sums in double: l and acc hold the sums since the last spill (one block's, at
    // most kBlock edges), added here before each further block. Summing a hub's million edges
    // into one float had lost ~3e-3 of the row (every term rounding into an ever larger sum);
    // now each float sum has at most kBlock terms. A row of one block never spills: its bits are
    // the single float sum's, as before.
    std::vector<double> spill(static_cast<size_t>(lanes + width));
    bool spilled = false;
    int relu_n = 0;  // ReLU rows (no blocks): edges since the last spill
    auto spill_sums = [&] {
      double* tl = spill.data();
      double* ta = tl + lanes;
      if (!spilled) {
        for (int64_t h = 0; h < lanes; ++h) tl[h] = l[h];
        for (int64_t x = 0; x < width; ++x) ta[x] = acc[x];
        spilled = true;
      } else {
        for (int64_t h = 0; h < lanes; ++h) tl[h] += l[h];
        for (int64_t x = 0; x < width; ++x) ta[x] += acc[x];
      }
      std::fill_n(l, lanes, 0.f);
      std::fill_n(acc, width, 0.f);
    };
    alignas(32) std::array<float, kDstTerms ? 72 : 1> u_state{};
    alignas(64) std::array<float, kDstTerms ? 128 : 1> terms_row{};
    std::array<float, kDstTerms ? 8 * kBlock : 1> block_wg{};
    const uint32_t keep_threshold = dropout_threshold16(a.dropout);
    std::array<int32_t, kBlock> block_j{};
    std::array<int64_t, kBlock> block_e{};
    int block_n = 0;
    bool first_block = true;
    uint64_t row_key = 0;  // edge_row_key(a.seed, i) of the current row, with dropout
    // acc += w * v_j (w with edge (i, j)'s dropout applied), and the edge's own value ve_e when
    // the score has one.
    auto add_value = [&](int64_t j, int64_t e) EDGEATTN_EDGE_BODY {
      if (a.dropout > 0.f) {
        store_keep_factors<Dm::heads>(row_key, j, heads, keep_threshold, keep_scale, kf);
#pragma omp simd
        for (int64_t h = 0; h < heads; ++h) w[h] *= kf[h];
      }
      accumulate(heads, dv, acc, w, a.v + j * width);
      if constexpr (edge_values) {
        score.edge_values(e, ve.data());
        accumulate(heads, dv, acc, w, ve.data());
      } else {
        (void)e;
      }
    };
    // The value row of the block's k-th edge, prefetching the row `ahead` edges on.
    [[maybe_unused]] auto value_row = [&](int64_t k) EDGEATTN_EDGE_BODY {
      if constexpr (std::is_same_v<P, CsrPattern>) {
        const int64_t e = block_e[static_cast<size_t>(k)];
        if (e + ahead < value_edge_end) prefetch_row(a.v + cols[e + ahead] * width, width);
      }
      return a.v + block_j[static_cast<size_t>(k)] * width;
    };
    // One head: the block's n weights exp(s - shift) into block_w as a loop over its edges
    // (vectorised), then their keep factors; returns l_sum plus the weights, summed in edge order.
    // Every product is the edge-by-edge one: the same bits as the loop in flush_block below.
    // With the destination terms (g_sum given) it also adds the weights times g = LeakyReLU'(z)
    // to *g_sum, in edge order, and leaves the kept weights times g in block_wg1.
    [[maybe_unused]] auto one_head_weights = [&](int n, float shift, float l_sum, float* g_sum = nullptr) {
      float* bw = block_w.data();
#pragma omp simd
      for (int k = 0; k < n; ++k) bw[k] = fast_exp(block_s[k] - shift);
      for (int k = 0; k < n; ++k) l_sum += bw[k];
      [[maybe_unused]] float* bg = block_wg1.data();
      if constexpr (kDstTerms1)
        if (g_sum) {  // g from the score: s > 0 exactly when z > 0 (the slope is not negative)
#pragma omp simd
          for (int k = 0; k < n; ++k) bg[k] = block_s[k] > 0.f ? 1.f : score.slope;
          float gs = *g_sum;
          for (int k = 0; k < n; ++k) gs += bw[k] * bg[k];
          *g_sum = gs;
        }
      if (a.dropout > 0.f) {
        float* bkf = block_w.data() + kBlock;
        dropout_keep_row(row_key, block_j.data(), n, keep_threshold, keep_scale, bkf);
#pragma omp simd
        for (int k = 0; k < n; ++k) bw[k] *= bkf[k];
      }
      if constexpr (kDstTerms1)
        if (g_sum)
#pragma omp simd
          for (int k = 0; k < n; ++k) bg[k] *= bw[k];
      return l_sum;
    };
    // The weights and value sums of the buffered edges of row i.
    auto flush_block = [&] {
      std::copy_n(block_s, lanes, block_max);
      for (int k = 1; k < block_n; ++k) {
        const float* sk = block_s + k * lanes;
#pragma omp simd
        for (int64_t h = 0; h < lanes; ++h) block_max[h] = std::max(block_max[h], sk[h]);
      }
      if (first_block) {  // the row's first sums: the shift is set, with nothing to rescale
        std::fill_n(l, lanes, 0.f);
        std::fill_n(acc, width, 0.f);
#pragma omp simd
        for (int64_t h = 0; h < lanes; ++h) m[h] = std::max(block_max[h], -FLT_MAX);  // -inf stays finite
        first_block = false;
      } else {
        spill_sums();  // l and acc are 0 again; the spilled sums are rescaled with the shift
        if (exceeds_shift(lanes, block_max, m)) {
          raise_shift(lanes, heads, dv, block_max, m, l, st.c, acc);
          double* tl = spill.data();
          double* ta = tl + lanes;
          for (int64_t h = 0; h < lanes; ++h) tl[h] *= st.c[h];
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t d = 0; d < dv; ++d) ta[h * dv + d] *= st.c[h];
          if constexpr (kDstTerms1)
            if (dst_terms1)
              for (float& x : u_one) x *= st.c[0];
          if constexpr (kDstTerms)
            if (dst_terms) {
              float* u = u_state.data();
              for (int h = 0; h < 8; ++h) {
                u[64 + h] *= st.c[h];
#pragma omp simd
                for (int d = 0; d < 8; ++d) u[8 * h + d] *= st.c[h];
              }
            }
        }
      }
      if constexpr (kBlock8x8) {
        // The weights and l in edge order, each edge's keep factors, then the value sums: every
        // value and sum is the edge-by-edge loop's below, in its order.
        float* bw = block_w8.data();
        for (int k = 0; k < block_n; ++k) {
          float* wk = bw + 8 * k;
          exp_shifted_sum(8, block_s + k * 8, m, wk, l);
          if constexpr (kDstTerms)
            if (dst_terms) {  // G += exp(s - m) g; g from the score: s > 0 exactly when z > 0
              const Lanes8 g8 = load_lanes8(block_s + k * 8) > 0.f ? Lanes8{} + 1.f : Lanes8{} + score.slope;
              store_lanes8(block_wg.data() + 8 * k, g8);
              float* g_sum = u_state.data() + 64;
              store_lanes8(g_sum, load_lanes8(g_sum) + load_lanes8(wk) * g8);
            }
          if (a.dropout > 0.f)  // the factors in a register (vector_math.hpp: dropout_keep_lanes8)
            store_lanes8(wk, load_lanes8(wk) * dropout_keep_lanes8(row_key, block_j[static_cast<size_t>(k)],
                                                                   keep_threshold, keep_scale));
          if constexpr (kDstTerms)
            if (dst_terms) {  // the kept weight times g
              float* gk = block_wg.data() + 8 * k;
              store_lanes8(gk, load_lanes8(gk) * load_lanes8(wk));
            }
        }
        accumulate_8x8_rows(
            acc, block_n, [&](int64_t k) EDGEATTN_EDGE_BODY { return bw + 8 * k; }, value_row);
        if constexpr (kDstTerms)
          if (dst_terms)  // U's sums over the same rows, now in L1
            accumulate_8x8_rows(
                u_state.data(), block_n,
                [&](int64_t k) EDGEATTN_EDGE_BODY { return block_wg.data() + 8 * k; },
                [&](int64_t k) EDGEATTN_EDGE_BODY { return a.v + block_j[static_cast<size_t>(k)] * width; });
        block_n = 0;
        return;
      }
      if constexpr (kSingleHead) {
        // One head: the block's weights and keep factors as loops over its edges.
        l[0] = one_head_weights(block_n, m[0], l[0], dst_terms1 ? u_one.data() + dv : nullptr);
        const float* bw = block_w.data();
        // U's sums over the block's value rows, read again from L1 (as the 8 x 8 terms').
        [[maybe_unused]] auto add_u = [&] {
          if constexpr (kDstTerms1)
            if (dst_terms1) {
              const float* bg = block_wg1.data();
              auto row = [&](int64_t k)
                             EDGEATTN_EDGE_BODY { return a.v + block_j[static_cast<size_t>(k)] * dv; };
              if (dv <= 8)
                accumulate_short_rows(
                    u_one.data(), dv, block_n, [&](int64_t k) EDGEATTN_EDGE_BODY { return bg[k]; }, row);
              else
                for (int k = 0; k < block_n; ++k) accumulate(1, dv, u_one.data(), bg + k, row(k));
            }
        };
        if (dv <= 8) {
          accumulate_short_rows(
              acc, dv, block_n, [&](int64_t k) EDGEATTN_EDGE_BODY { return bw[k]; }, value_row);
          add_u();
          block_n = 0;
          return;
        }
        for (int k = 0; k < block_n; ++k) {
          accumulate(1, dv, acc, bw + k, value_row(k));
        }
        add_u();
        block_n = 0;
        return;
      }
      for (int k = 0; k < block_n; ++k) {
        const int64_t j = block_j[static_cast<size_t>(k)];
        if constexpr (std::is_same_v<P, CsrPattern>) {
          // The value rows are prefetched as they are read, the old distance ahead. Issued with
          // the scores, a block's worth at once overran the outstanding misses the core tracks,
          // and the forward over a 12.5M-edge graph (degree 50, values beyond the LLC) ran 1.5x
          // slower than edge by edge.
          const int64_t e = block_e[static_cast<size_t>(k)];
          if (e + ahead < value_edge_end) prefetch_row(a.v + cols[e + ahead] * width, width);
        }
        exp_shifted_sum(lanes, block_s + k * lanes, m, w, l);
        add_value(j, block_e[static_cast<size_t>(k)]);
      }
      block_n = 0;
    };
    // The weights of row i's edges from its lse: a second pass over the row, only when they are
    // requested.
    auto row_weights = [&](int64_t i) {
      const float* lse = kSoftmax ? out.lse + i * heads : nullptr;
      pattern.for_each_in_row(i, [&](int32_t j, int64_t e) EDGEATTN_EDGE_BODY {
        score.scores(i, j, e, s);
        float* alpha_e = out.alpha + e * heads;
        for (int64_t h = 0; h < heads; ++h) {
          const float sh = a.bias ? s[h] + a.bias[e * heads + h] : s[h];
          alpha_e[h] = kSoftmax ? fast_exp(sh - lse[h]) : std::max(sh, 0.f);
        }
      });
    };
    // The one-head rows' lse = m + log(l), computed for kLseRows rows at a time in vectors (the
    // scalar log of each row had cost a fifth of Cora's output-layer forward): out.lse holds a
    // row's l and lse_m its m until then. Not when the rows' weights are asked for: that pass
    // reads the row's lse right away.
    constexpr int kLseRows = 64;
    const bool defer_lse = kShortRowsInRegisters && out.alpha == nullptr;
    std::array<float, kShortRowsInRegisters ? kLseRows : 1> lse_m{};
    int64_t lse_begin = row_begin;
    auto finish_lse = [&](int64_t end) {
      float* lse = out.lse + lse_begin;
      const float* m_row = lse_m.data();
#pragma omp simd
      for (int64_t r = 0; r < end - lse_begin; ++r) {
        const float l_row = lse[r];
        lse[r] = l_row > 0.f ? m_row[r] + fast_log(l_row) : -INFINITY;
      }
      lse_begin = end;
    };
    [[maybe_unused]] auto set_lse = [&](int64_t i, float m0, float l0) {
      if (!defer_lse) {
        out.lse[i] = l0 > 0.f ? m0 + fast_log(l0) : -INFINITY;
        return;
      }
      out.lse[i] = l0;
      lse_m[static_cast<size_t>(i - lse_begin)] = l0 > 0.f ? m0 : 0.f;  // (an empty row's m is not set)
      if (i + 1 - lse_begin == kLseRows) finish_lse(i + 1);
    };
    // A one-head row of an explicit graph with at most kBlock edges and 8 features (GAT's output
    // layer: Cora's rows have 4.9 edges and 7 classes), in a loop of its own: the edges' scores,
    // then the sums, the normalisation and the store with the value sum in one register. Every
    // value, sum and product is flush_block's and the normalisation's below, in their order (the
    // same bits). Through the general row loop each such row paid its zero fills, the per-edge
    // closure state spilled around the score, a masked store of acc that the normalisation's
    // loads waited on (a masked store does not forward) and a copy call for its 7 floats.
    [[maybe_unused]] auto short_row = [&](int64_t i, int64_t e0, int n) EDGEATTN_EDGE_BODY {
#if defined(__AVX__)
      float* bs = block_s;
      int32_t* bj = block_j.data();
      for (int k = 0; k < n; ++k) {
        const int64_t e = e0 + k;
        if (e + ahead < edge_end) score.prefetch_src(cols[e + ahead]);
        const int32_t j = cols[e];
        score.scores(i, j, e, bs + k);
        if (a.bias) bs[k] += a.bias[e];
        bj[k] = j;
      }
      float mx = bs[0];
      for (int k = 1; k < n; ++k) mx = std::max(mx, bs[k]);
      const float m0 = std::max(mx, -FLT_MAX);
      float g0 = 0.f;
      const float l0 = one_head_weights(n, m0, 0.f, dst_terms1 ? &g0 : nullptr);
      const float* bw = block_w.data();
      auto rows = [&](int64_t k) EDGEATTN_EDGE_BODY {
        const int64_t e = e0 + k;
        if (e + ahead < value_edge_end) prefetch_row(a.v + cols[e + ahead] * dv, dv);
        return a.v + bj[k] * dv;
      };
      auto weight = [&](int64_t k) EDGEATTN_EDGE_BODY { return bw[k]; };
      __m256 r, u;
      if (dst_terms1)  // with U's sums (the kept weights times g) over the same rows
        short_row_sums(
            dv, n, weight, [&](int64_t k) EDGEATTN_EDGE_BODY { return block_wg1[size_t(k)]; }, rows, r, u);
      else
        r = short_row_sum(dv, n, weight, rows);
      const float inv = l0 > 0.f ? 1.f / l0 : 0.f;
      const __m256 o = _mm256_mul_ps(r, _mm256_set1_ps(inv));
      if constexpr (kDstTerms1)
        if (dst_terms1) {  // O_i and V_i = (U - (G / l) r) / l
          const __m256 g = _mm256_set1_ps(g0 * inv);
          const __m256 vt = _mm256_mul_ps(_mm256_sub_ps(u, _mm256_mul_ps(g, r)), _mm256_set1_ps(inv));
          float* t = out.dst_terms + i * 2 * dv;
          _mm256_maskstore_ps(t, short_row_mask(dv), o);
          _mm256_maskstore_ps(t + dv, short_row_mask(dv), vt);
        }
      set_lse(i, m0, l0);
      if (stream) {
        _mm256_maskstore_ps(acc, short_row_mask(dv), o);
        store_row(out.out + i * dv, acc, dv, true);
      } else {
        _mm256_maskstore_ps(out.out + i * dv, short_row_mask(dv), o);
      }
#else
      (void)i, (void)e0, (void)n;
#endif
    };
    for (int64_t i = row_begin; i < row_end; ++i) {
      if constexpr (!kSoftmax) {  // (softmax rows start their sums at their first block)
        std::fill_n(l, lanes, 0.f);
        std::fill_n(acc, width, 0.f);
      }
      if (a.dropout > 0.f) row_key = edge_row_key(a.seed, i);
      if constexpr (kShortRowsInRegisters) {
        const int64_t e0 = pattern.row_offset(i), n = pattern.row_offset(i + 1) - e0;
        if (n > 0 && n <= kBlock && dv <= 8) {
          short_row(i, e0, static_cast<int>(n));
          if (out.alpha) row_weights(i);
          continue;
        }
      }
      first_block = true;
      spilled = false;
      relu_n = 0;
      if constexpr (kDstTerms)
        if (dst_terms)  // (fill() became a memset call per row)
          for (int q = 0; q < 9; ++q) store_lanes8(u_state.data() + 8 * q, Lanes8{});
      if constexpr (kDstTerms1)
        if (dst_terms1) std::fill(u_one.begin(), u_one.end(), 0.f);
      pattern.for_each_in_row(i, [&](int32_t j, int64_t e) EDGEATTN_EDGE_BODY {
        if constexpr (std::is_same_v<P, CsrPattern>) {
          if (e + ahead < edge_end) {
            const int64_t far = cols[e + ahead];
            score.prefetch_src(far);
            if constexpr (!kSoftmax) prefetch_row(a.v + far * width, width);  // softmax: in flush_block
          }
        }
        if constexpr (kSoftmax) {
          float* sk = block_s + block_n * lanes;
          score.scores(i, j, e, sk);
          if (a.bias)
            for (int64_t h = 0; h < heads; ++h) sk[h] += a.bias[e * heads + h];
          block_j[static_cast<size_t>(block_n)] = j;
          block_e[static_cast<size_t>(block_n)] = e;
          if (++block_n == kBlock) flush_block();
        } else {
          score.scores(i, j, e, s);
          if (a.bias)
            for (int64_t h = 0; h < heads; ++h) s[h] += a.bias[e * heads + h];
          for (int64_t h = 0; h < heads; ++h) w[h] = std::max(s[h], 0.f);
          add_value(j, e);
          if (++relu_n == kBlock) {
            spill_sums();
            relu_n = 0;
          }
        }
      });
      if constexpr (kSoftmax) {
        if (block_n > 0) flush_block();
        if (first_block) {  // an empty row: no sums, so out = 0 and lse = -inf below
          std::fill_n(l, lanes, 0.f);
          std::fill_n(acc, width, 0.f);
        }
      }
      if (spilled) {  // the row's sums, each rounded to float once
        const double* tl = spill.data();
        const double* ta = tl + lanes;
        for (int64_t h = 0; h < lanes; ++h) l[h] = static_cast<float>(tl[h] + l[h]);
        for (int64_t x = 0; x < width; ++x) acc[x] = static_cast<float>(ta[x] + acc[x]);
      }
      if constexpr (kSoftmax) {
        if constexpr (kDstTerms)
          if (dst_terms) {  // O_i and V_i = (U' - (G' / l) acc) / l from the unnormalised sums
            float* t = terms_row.data();
            const float* u = u_state.data();
            for (int h = 0; h < 8; ++h) {
              const float inv = l[h] > 0.f ? 1.f / l[h] : 0.f;
              const float g_h = u[64 + h] * inv;
              const Lanes8 a8 = load_lanes8(acc + 8 * h);
              store_lanes8(t + 8 * h, a8 * inv);  // the output's own product: the same bits
              store_lanes8(t + 64 + 8 * h, (load_lanes8(u + 8 * h) - g_h * a8) * inv);
            }
            store_row(out.dst_terms + i * 2 * width, t, 2 * width, stream_terms);
          }
        if constexpr (kDstTerms1)
          if (dst_terms1) {  // O_i and V_i as the short rows' (the output's own product for O_i)
            const float inv = l[0] > 0.f ? 1.f / l[0] : 0.f;
            const float g0 = u_one[static_cast<size_t>(dv)] * inv;
            float* t = out.dst_terms + i * 2 * dv;
            for (int64_t d = 0; d < dv; ++d) {
              t[d] = acc[d] * inv;
              t[dv + d] = (u_one[static_cast<size_t>(d)] - g0 * acc[d]) * inv;
            }
          }
        // acc / l per head, in place; lse = m + log(l), -inf for an empty row (l = 0).
        for (int64_t h = 0; h < heads; ++h) {
          const float inv = l[h] > 0.f ? 1.f / l[h] : 0.f;
#pragma omp simd
          for (int64_t d = 0; d < dv; ++d) acc[h * dv + d] *= inv;
        }
        if constexpr (kShortRowsInRegisters)
          set_lse(i, m[0], l[0]);
        else
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h)
            out.lse[i * heads + h] = l[h] > 0.f ? m[h] + fast_log(l[h]) : -INFINITY;
      }
      store_row(out.out + i * width, acc, width, stream);
      if (out.alpha) row_weights(i);
    }
    if (defer_lse && lse_begin < row_end) finish_lse(row_end);
    if (stream || stream_terms) stream_fence();
  });
}

/// The forward over one pattern: every score and compile-time shape (visit_score_dims) and both
/// normalisations. Instantiated for each pattern in instantiations/<pattern>_forward.cpp.
template <class P>
void forward_pattern(const P& pattern, const KernelArgs& a, const ForwardBuffers& out) {
  visit_score_dims(a, [&](const auto& score, auto dims) {
    using Dm = decltype(dims);
    if (a.norm == Normalization::softmax)
      forward_rows<true, Dm>(pattern, score, a, out);
    else
      forward_rows<false, Dm>(pattern, score, a, out);
  });
}

}  // namespace edgeattn::kernels::detail
