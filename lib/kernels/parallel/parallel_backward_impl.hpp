// The templates of the fused graph-attention backward (parallel_backward.cpp dispatches to them),
// instantiated one pattern per file (instantiations/<pattern>_backward.cpp) so that a
// build spreads them over its cores: with all 108 in one file, its ASan + UBSan compile alone took
// 27 of CI's minutes.
// Fused graph-attention backward without atomics, recomputing attention from the saved row
// log-sum-exp instead of storing per-edge weights (as in FlashAttention, Dao et al. 2022).
//
// With alpha = softmax_j(s), mask m_ij^h in {0, 1/(1-p)} (dropout) and dO the output gradient:
//   dalpha_ij = m_ij <dO_i, v_j>,   D_i = sum_j alpha_ij dalpha_ij,   ds_ij = alpha_ij (dalpha_ij - D_i)
//   (relu normalisation: alpha = relu(s), ds = dalpha [s > 0])
//   dv_j = sum_i alpha_ij m_ij dO_i
// Pass 1 (destination-parallel over row chunks) computes D_i, ds along each row and accumulates
// the destination-side score gradients (dq or d score_dst), the per-edge bias gradient, the
// additive score's per-edge term's gradient and, for GATv2/perceptron, per-chunk partials of
// d att and of the edge-attribute projection's d we (summed in chunk order afterwards) and the
// edge attributes' own gradient.
// Pass 2 (source-parallel over the transpose, `for_each_in_col`) recomputes alpha and ds for each
// in-edge of source j and accumulates dk (or d score_src) and dv for j.
// Edge records (additive score on an explicit graph, without edge bias or per-edge term, when
// they fit the budget below): pass 1 also writes each edge's kept weight w = alpha * keep and its
// score-input gradient dz = ds * leaky'(z) (2H floats, CSR order), and pass 2 reads them through
// Graph::transpose_edges instead of recomputing the score, its exp, the dropout hash and the
// <dO_i, v_j> dots: dv_j = sum_i w dO_i and d score_src_j = sum_i dz. The same values in the same
// order, so the gradients are bit for bit those of the recomputing pass (tested); it made the
// source pass of a sampled GAT step's blocks about half as costly.
// Destination terms (BackwardInputs::dst_terms, written by the forward: GAT's 8 x 8 additive
// softmax, or one head, over an explicit graph whose source rows exceed the cache,
// parallel_dst_terms_apply):
// with g = leaky'(z), dsd_i = sum_j ds_ij g_ij = <dO_i, U_i> - D_i G_i = <dO_i, V_i> per head, where
// U_i = sum_j alpha g keep v_j and G_i = sum_j alpha g are summed by the forward beside O_i, which
// stores O_i and V_i = U_i - G_i O_i. Pass 1 then reads dO_i, O_i and V_i and none of the row's
// edges (D_i = <dO_i, O_i> even when the caller no longer holds the output, e.g. after a fused
// epilogue), and the source pass recomputes each in-edge's weight from the node records instead
// of reading edge records. The source-side gradients are the recomputing pass's bits; dsd (and
// d a_dst, dv through the fold) agree to rounding. Measured on a sampled block (237k sources,
// 735k edges, 2 threads): backward 95 -> 60 ms, forward +5 ms. One head (GAT's output layer over
// a large graph, where the edge records exceed their budget) keeps O_i and V_i of dv floats each:
// its destination pass had recomputed every edge's score, exp, dropout hash and two dots.
// Additive scores taken from v (BackwardBuffers::fold_att_*: sd_i = <a_dst, v_i>, ss_j =
// <a_src, v_j>): pass 2 ends each source j with dss_j (its in-edges' dz) and, for j < Nd, dsd_j
// (written by pass 1), reads v_j once more, in the task that is about to write dv_j, and writes
//   dv_j = sum_i w dO_i + dss_j a_src [+ dsd_j a_dst]
// while adding dss_j v_j [and dsd_j v_j] to its chunk's partials of d a_src [and d a_dst],
// summed in chunk order afterwards. The head-score ops' backward (two more sweeps over v and dv)
// is not needed.
// Sums over a hub: every sum over a row's or a column's edges (D_i, dq or dsd, dk or dss, dv) and
// every chunk's partial of d att, d we and the fold's d a_src, d a_dst is taken in float
// accumulators that are added into double every kSumBlock terms (block_sums.hpp); chunk partials
// are summed in double, and each gradient is rounded to float once (dv_j with the fold: its sum
// over in-edges is, then the fold's two terms are added in float). Summed edge by edge in float,
// a 1M-edge hub's gradients were off by up to 1e-4 of their scale; now within 1e-6 (tested).
// Every output element is written by exactly one task, and chunking depends only on the pattern,
// so gradients are bit-identical for any thread count. Pass 2 reads v only as v_j, in the task
// that then writes dv_j, and pass 1 has finished every read of v before: dv may overwrite v
// (attention_backward's value_grad). Extra memory: D [num_dst, H] (additive softmax: node
// records [num_dst, 3H], one head [num_dst, 4], holding sd_i and lse_i beside D_i so that pass 2
// gathers one record an in-edge) plus O(max_degree * H) per task.
// One head (GAT's output layer): both passes take a row's (a column's) edges as arrays and
// compute their weights, dropout keep factors and ds in loops over the edges, which vectorise;
// every value and sum is the edge-by-edge loop's, in its order (with the additive score the
// destination pass keeps each edge's pre-activation z from its score, and d score_dst's products
// are rounded before the sum).
// Both passes prefetch their gathered rows a distance set in cache lines (vector_math.hpp:
// prefetch_distance), and a dv of 32 MiB or more is written with streaming stores. Every element
// of dq, dk, dsd, dss, dv, dbias and dse is written once (not accumulated), so attention_backward
// hands this backend unzeroed buffers; d att is summed from per-chunk partials into zeros.
#pragma once

#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/core/tensor.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/parallel/block_sums.hpp"
#include "kernels/parallel/edge_scores.hpp"
#include "kernels/parallel/tiled_attention.hpp"

namespace edgeattn::kernels::detail {

// Source-side chunks: balanced by in-degree of the transpose for explicit graphs (the graph's
// cached source_partition); structured patterns have near-uniform column counts, so equal column
// ranges suffice (built into `storage`).
template <class P>
std::span<const int64_t> column_chunks(const P& pattern, std::vector<int64_t>& storage) {
  if constexpr (std::is_same_v<P, CsrPattern>) {
    return pattern.graph().source_partition();
  } else {
    const int64_t ns = pattern.num_src();
    const int64_t grain = std::max<int64_t>(1, ns / 256);
    storage.clear();
    for (int64_t j = 0; j < ns; j += grain) storage.push_back(j);
    storage.push_back(ns);
    return storage;
  }
}

// Edge records are kept when they take no more memory than the value and output gradients the
// backward holds anyway ([Ns + Nd, H, dv] floats), or 64 MiB, whichever is larger: always for
// sampled blocks and graphs up to a few million edges, never to double the footprint of a large
// graph (there the source pass recomputes). set_edge_records forces either way (tests).
extern EdgeRecords g_edge_records;  // parallel_backward.cpp

template <class P, class S>
bool edge_records_apply(const P& pattern, const KernelArgs& a, int64_t dv, bool softmax) {
  if constexpr (!std::is_same_v<P, CsrPattern> || !kIsAdditive<S>) {
    (void)pattern, (void)a, (void)dv, (void)softmax;
    return false;
  } else {
    if (!softmax || a.bias || a.score.se) return false;
    if (g_edge_records != EdgeRecords::automatic) return g_edge_records == EdgeRecords::always;
    const int64_t heads = a.heads;
    const int64_t record_bytes = pattern.num_edges() * 2 * heads * int64_t{sizeof(float)};
    const int64_t held = (pattern.num_src() + pattern.num_dst()) * heads * dv * int64_t{sizeof(float)};
    return record_bytes <= std::max<int64_t>(held, int64_t{64} << 20);
  }
}

// A single head's edges of one row (pass 1) or one column (pass 2): their other ends, edge ids
// and per-edge values, grown to the longest row or column a task meets.
struct SingleHeadRow {
  std::vector<int32_t> src;  // pass 1: the sources; pass 2: the destinations
  std::vector<int64_t> edge;
  std::vector<float> alpha, keep, dalpha, ds;
  std::vector<float> z, lse, row_sum;  // pass 2 with node records: each destination's terms
  void reserve(int64_t n) {
    if (static_cast<int64_t>(src.size()) >= n) return;
    const auto size = static_cast<size_t>(n);
    src.resize(size);
    edge.resize(size);
    for (auto* v : {&alpha, &keep, &dalpha, &ds, &z, &lse, &row_sum}) v->resize(size);
  }
};

template <bool kSoftmax, class Dm, class P, class S>
void backward_impl(const P& pattern, const S& score, const KernelArgs& a, const BackwardInputs& in,
                   const BackwardBuffers& g) {
  const int64_t heads = Dm::heads > 0 ? Dm::heads : a.heads;
  const int64_t dv = Dm::dv > 0 ? Dm::dv : a.dv;
  const int64_t width = score.width();
  const int64_t nd = pattern.num_dst();
  const bool additive = a.score.kind == EdgeScore::additive;
  float* dst_grad = additive ? g.dsd : g.dq;  // [Nd, width]
  float* src_grad = additive ? g.dss : g.dk;  // [Ns, width]
  const float keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;

  // keep factor of (i, j, h): 0 or 1/(1-p) under dropout, else 1, from row = edge_row_key(a.seed,
  // i), which pass 1 computes once per row (pass 2 once per edge: keep_factors)
  const uint32_t keep_threshold = dropout_threshold16(a.dropout);
  auto keep_factors_row = [&](uint64_t row, int64_t j, float* kf) {
    if (a.dropout > 0.f)
      store_keep_factors<Dm::heads>(row, j, heads, keep_threshold, keep_scale, kf);
    else
      for (int64_t h = 0; h < heads; ++h) kf[h] = 1.f;
  };
  auto keep_factors = [&](int64_t i, int64_t j, float* kf) {
    keep_factors_row(a.dropout > 0.f ? edge_row_key(a.seed, i) : 0, j, kf);
  };
  // s (with bias) -> alpha, for row i
  auto weights = [&](int64_t i, int64_t e, float* s, float* alpha) {
    if (a.bias)
#pragma omp simd
      for (int64_t h = 0; h < heads; ++h) s[h] += a.bias[e * heads + h];
#pragma omp simd
    for (int64_t h = 0; h < heads; ++h)
      alpha[h] = kSoftmax ? fast_exp(s[h] - in.lse[i * heads + h]) : std::max(s[h], 0.f);
  };
  // The per-edge additive term's gradient dse_e = ds * leaky'(z), written once per edge; edge
  // attributes (vector and dot scores): dea_e written once per edge, dwe into the chunk's partial.
  // wk: the kept weights alpha * keep of the edge (the dot score's value term).
  auto edge_term_grad = [&](int64_t i, int64_t j, int64_t e, const float* ds, const float* wk, float* dwe) {
    if constexpr (kIsAdditive<S>) {
      (void)wk;
      (void)dwe;
      if (g.dse) score.pre_activation_grad(i, j, e, ds, g.dse + e * heads);
    } else if constexpr (kHasEdgeAttributes<S>) {
      float* dea_e = g.dea ? g.dea + e * score.fe : nullptr;
      if constexpr (kIsVector<S>)
        score.grad_edge(i, j, e, ds, dea_e, dwe);
      else
        score.grad_edge(i, e, ds, wk, in.dout + i * heads * dv, dea_e, dwe);
    } else {
      (void)i, (void)j, (void)e, (void)ds, (void)wk, (void)dwe;
    }
  };
  // The dot score with edge attributes: each edge's value is v_j + ve_e.
  constexpr bool edge_values = kIsDot<S> && kHasEdgeAttributes<S>;
  // dalpha_h = kf_h * <dO_i^h, v_j^h [+ ve_e^h]>; ve: [H * dv] scratch of the task
  auto dalpha = [&](int64_t i, int64_t j, int64_t e, const float* kf, float* da, float* ve) {
    const float* dout_i = in.dout + i * heads * dv;
    const float* vj = a.v + j * heads * dv;
    if constexpr (edge_values)
      score.edge_values(e, ve);
    else
      (void)e, (void)ve;
    if constexpr (Dm::heads == 8 && Dm::dv == 8 && !edge_values) {  // GAT's 8 x 8: one reduction
      dot_8x8(dout_i, vj, da);
#pragma omp simd
      for (int64_t h = 0; h < 8; ++h) da[h] *= kf[h];
      return;
    }
    for (int64_t h = 0; h < heads; ++h) {
      float d = dot(dout_i + h * dv, vj + h * dv, dv);
      if constexpr (edge_values) d += dot(dout_i + h * dv, ve + h * dv, dv);
      da[h] = kf[h] * d;
    }
  };

  // ---- Pass 1: destination rows --------------------------------------------------------------
  // D [Nd, H], gathered at random by the source pass: a Tensor, so it sits on huge pages. Pass 1
  // writes every row of it, and every edge's record, so neither is zeroed first.
  // Additive softmax: node records [Nd, R] {sd_i [H], lse_i [H], D_i [H]} instead, so that the
  // source pass gathers an in-edge's destination terms from one record rather than three arrays:
  // R = 4 floats for one head (16 bytes, padded: one cache line an edge instead of three), R = 3H
  // otherwise (8 heads: 96 bytes, two lines instead of three; padding to 128 would not save a line
  // and would cost 32 bytes a node more). The pass waits on its gathers (its prefetches stall on
  // outstanding misses), so every line counts; the records cost 2H floats a node more than D.
  constexpr bool kSingleHead = Dm::heads == 1 && !edge_values;
  constexpr bool kNodeRecords = kSoftmax && kIsAdditive<S>;
  const int64_t record_width = !kNodeRecords ? heads : heads == 1 ? 4 : 3 * heads;
  Tensor row_sum_storage = Tensor::uninitialized(Shape{kSoftmax ? nd : 0, record_width});
  float* row_sum_data = row_sum_storage.data();
  auto set_row_sum = [&](int64_t i, const float* d) {
    float* r = row_sum_data + i * record_width;
    if constexpr (kNodeRecords) {
      std::copy_n(score.sd + i * heads, heads, r);
      std::copy_n(in.lse + i * heads, heads, r + heads);
      std::copy_n(d, heads, r + 2 * heads);
      std::fill(r + 3 * heads, r + record_width, 0.f);
    } else {
      std::copy_n(d, heads, r);
    }
  };
  const auto chunks = pattern.partition();
  const size_t num_chunks = chunks.empty() ? 0 : chunks.size() - 1;
  // The parameter gradients d att [width] and d we [we_size], summed per chunk (in blocks of edges,
  // block_sums.hpp) into double partials [num_chunks, width + we_size], then in chunk order.
  const int64_t we_size = g.dwe ? width * a.score.fe : 0;
  const int64_t param_size = (g.datt ? width : 0) + we_size;
  std::vector<double> param_partial(num_chunks * static_cast<size_t>(param_size));
  const bool edge_attr_grads = kHasEdgeAttributes<S> && (g.dea || g.dwe);
  const bool need_pass1 = dst_grad || g.dbias || g.dse || g.datt || edge_attr_grads || kSoftmax;
  // The forward's destination terms (ForwardBuffers::dst_terms): D_i = <dO_i, O_i> and
  // dsd_i = <dO_i, V_i> per head, so pass 1 reads three rows per destination and none of its
  // edges; the source pass recomputes each in-edge's weight from the node records.
  // GAT's 8 x 8, or one head of any width over an explicit graph (the output layer).
  constexpr bool kDstTerms8 = Dm::heads == 8 && Dm::dv == 8 && kSoftmax && kIsAdditive<S> && !edge_values;
  constexpr bool kDstTerms1 = kSingleHead && kSoftmax && kIsAdditive<S> && std::is_same_v<P, CsrPattern>;
  constexpr bool kDstTerms = kDstTerms8 || kDstTerms1;
  const bool dst_terms = kDstTerms && in.dst_terms != nullptr;
  const bool records =
      !dst_terms && need_pass1 && (src_grad || g.dv) && edge_records_apply<P, S>(pattern, a, dv, kSoftmax);
  Tensor record_storage =
      Tensor::uninitialized(Shape{records ? pattern.num_edges() : 0, 2 * heads});  // [E, 2H]: w, dz
  float* record_data = record_storage.data();
  // Writes edge e's record: w = alpha * keep, dz = ds * leaky'(z) (what grad_dst adds for it).
  auto write_record = [&](int64_t i, int64_t j, int64_t e, const float* alpha, const float* kf,
                          const float* ds) {
    if constexpr (kIsAdditive<S>) {
      float* rec = record_data + e * 2 * heads;
#pragma omp simd
      for (int64_t h = 0; h < heads; ++h) rec[h] = alpha[h] * kf[h];
      score.pre_activation_grad(i, j, e, ds, rec + heads);
    } else {
      (void)i, (void)j, (void)e, (void)alpha, (void)kf, (void)ds;
    }
  };
  if (need_pass1) {
    parallel_for_chunks(chunks, [&](size_t chunk, int64_t row_begin, int64_t row_end) {
      std::vector<float> scratch(static_cast<size_t>(6 * heads + width + (edge_values ? heads * dv : 0)));
      float* s = scratch.data();
      float* kf = s + heads;
      float* ds = kf + heads;
      float* drow = ds + heads;
      float* wk = drow + heads;  // [H] alpha * keep (edge attributes)
      float* acc = wk + heads;   // [width]
      float* ve = acc + width;   // [H * dv] (the dot score's edge values)
      // Every sum over a row's edges (D_i, d score_dst or dq) and over the chunk's (d att, d we)
      // in blocks (block_sums.hpp): a hub row's million terms do not each round into one float.
      BlockSums acc_sums(width), d_sums(heads), param_sums(param_size);
      std::vector<float> param_acc(static_cast<size_t>(param_size));
      param_sums.start(param_acc.data());
      float* datt = g.datt ? param_acc.data() : nullptr;
      float* dwe = g.dwe ? param_acc.data() + (g.datt ? width : 0) : nullptr;
      const bool param_grads = param_size > 0;
      std::vector<float> edge_buf;    // per edge of the row: alpha [H], dalpha [H]
      const int32_t* cols = nullptr;  // explicit graphs: prefetch the gathered source rows
      int64_t edge_end = 0;
      if constexpr (std::is_same_v<P, CsrPattern>) {
        cols = pattern.graph().col_idx().data();
        // Gathered rows that fit in cache are not prefetched (the forward's rule).
        if (gathered_bytes(pattern.num_src(), width + heads * dv) > kGatherCachedBytes)
          edge_end = pattern.row_offset(row_end);
      }
      // Each edge gathers the source's score-side row (none when the score reads the value row)
      // and its value row.
      const int64_t distance = prefetch_distance(src_score_lines(score) + row_lines(heads * dv));
      const bool value_scores = reads_value_rows(score);
      auto prefetch = [&](int64_t e) {
        if constexpr (std::is_same_v<P, CsrPattern>) {
          if (e + distance < edge_end) {
            const int64_t ahead = cols[e + distance];
            if (!value_scores) score.prefetch_src(ahead);
            prefetch_row(a.v + ahead * heads * dv, heads * dv);
          }
        }
      };
      // One head: a row's edges as arrays (source, edge id, weight, keep factor, dalpha, ds), so
      // that the exps, keep factors and ds run as loops over the edges (vectorised). Each value is
      // the one the edge-by-edge loops below compute, summed in the same order: the same bits.
      SingleHeadRow row_edges;
      for (int64_t i = row_begin; i < row_end; ++i) {
        if constexpr (kDstTerms8) {
          if (dst_terms) {
            const float* t = in.dst_terms + i * 128;  // O_i, V_i
            dot_8x8(in.dout + i * 64, t, drow);
            set_row_sum(i, drow);
            if (dst_grad) dot_8x8(in.dout + i * 64, t + 64, dst_grad + i * 8);
            continue;
          }
        }
        if constexpr (kDstTerms1) {
          if (dst_terms) {  // one head: O_i [dv], V_i [dv]; D_i is the one-sweep dot's bits
            const float* t = in.dst_terms + i * 2 * dv;
            const float* dout_i = in.dout + i * dv;
            drow[0] = dot(dout_i, t, dv);
            set_row_sum(i, drow);
            if (dst_grad) dst_grad[i] = dot(dout_i, t + dv, dv);
            continue;
          }
        }
        const int64_t first = pattern.row_offset(i);
        const uint64_t row_key = a.dropout > 0.f ? edge_row_key(a.seed, i) : 0;
        if constexpr (kSingleHead) {
          const int64_t degree = pattern.row_offset(i + 1) - first;
          row_edges.reserve(degree);
          int64_t n = 0;
          const float* dout_i = in.dout + i * dv;
          const bool one_sweep = !kSoftmax || in.out;  // D_i is known up front, or not needed
          if (kSoftmax && in.out) {
            drow[0] = dot(dout_i, in.out + i * dv, dv);
            set_row_sum(i, drow);
          }
          const bool grads = dst_grad || g.dbias || g.datt || g.dse || edge_attr_grads || records;
          if (one_sweep && !grads) continue;
          pattern.for_each_in_row(i, [&](int32_t j, int64_t e) EDGEATTN_EDGE_BODY {
            prefetch(e);
            row_edges.src[size_t(n)] = j;
            row_edges.edge[size_t(n)] = e;
            float* sk = row_edges.alpha.data() + n;
            if constexpr (kIsAdditive<S>) {  // score.scores, keeping z for the gradients below
              float* zk = row_edges.z.data() + n;
              score.pre_activation(i, j, e, zk);
              sk[0] = leaky_relu(zk[0], score.slope);
            } else {
              score.scores(i, j, e, sk);
            }
            if (a.bias) sk[0] += a.bias[e];
            ++n;
          });
          float* alpha = row_edges.alpha.data();
          float* kfs = row_edges.keep.data();
          float* das = row_edges.dalpha.data();
          float* dss = row_edges.ds.data();
          if constexpr (kSoftmax) {
            const float lse_i = in.lse[i];
#pragma omp simd
            for (int64_t k = 0; k < n; ++k) alpha[k] = fast_exp(alpha[k] - lse_i);
          } else {
#pragma omp simd
            for (int64_t k = 0; k < n; ++k) alpha[k] = std::max(alpha[k], 0.f);
          }
          if (a.dropout > 0.f)
            dropout_keep_row(row_key, row_edges.src.data(), n, keep_threshold, keep_scale, kfs);
          else
            std::fill_n(kfs, n, 1.f);
          for (int64_t k = 0; k < n; ++k)
            das[k] = kfs[k] * dot(dout_i, a.v + row_edges.src[size_t(k)] * dv, dv);
          if (!one_sweep) {  // the two-sweep D_i: sum_j alpha_ij dalpha_ij, in edge order
            d_sums.start(drow);
            d_sums.blocks(n, [&](int64_t b, int64_t e) {
              float d = drow[0];
              for (int64_t k = b; k < e; ++k) d += alpha[k] * das[k];
              drow[0] = d;
            });
            d_sums.finish();
            set_row_sum(i, drow);
            if (!grads) continue;
          }
          const float d_i = kSoftmax ? drow[0] : 0.f;
#pragma omp simd
          for (int64_t k = 0; k < n; ++k)
            dss[k] = kSoftmax ? alpha[k] * (das[k] - d_i) : (alpha[k] > 0.f ? das[k] : 0.f);
          acc_sums.start(acc);
          if constexpr (kIsAdditive<S>) {
            // grad_dst's sum acc += ds * leaky'(z), edge_term_grad's dse = ds * leaky'(z) and
            // write_record's dz from the z kept with the scores: the score's source term (a dot
            // over the value row, with ss_att) was computed three times an edge. dse and the
            // records hold grad_dst's values; the sum (d score_dst) may round differently from
            // grad_dst's, whose product the compiler was free to fuse into the sum.
            const float* zs = row_edges.z.data();
            acc_sums.blocks(n, [&](int64_t b, int64_t end) {
              float sum = acc[0];
              for (int64_t k = b; k < end; ++k) {
                const int64_t e = row_edges.edge[size_t(k)];
                // (dss[k] * g_k written out per use: named once, it rounds the sum differently)
                const float g_k = leaky_relu_grad(zs[k], score.slope);
                if (g.dbias) g.dbias[e] = dss[k];
                if (g.dse) g.dse[e] = dss[k] * g_k;
                sum += dss[k] * g_k;
                if (param_grads) param_sums.count();
                if (records) {
                  float* rec = record_data + e * 2;
                  rec[0] = alpha[k] * kfs[k];
                  rec[1] = dss[k] * g_k;
                }
              }
              acc[0] = sum;
            });
            acc_sums.finish();
            if (dst_grad) dst_grad[i] = acc[0];
            continue;
          }
          acc_sums.blocks(n, [&](int64_t b, int64_t end) {
            for (int64_t k = b; k < end; ++k) {
              const int64_t j = row_edges.src[size_t(k)], e = row_edges.edge[size_t(k)];
              if (g.dbias) g.dbias[e] = dss[k];
              if (edge_attr_grads) wk[0] = alpha[k] * kfs[k];
              edge_term_grad(i, j, e, dss + k, wk, dwe);
              score.grad_dst(i, j, e, dss + k, acc, datt);
              if (param_grads) param_sums.count();
              if (records) write_record(i, j, e, alpha + k, kfs + k, dss + k);
            }
          });
          acc_sums.finish();
          if (dst_grad) std::copy_n(acc, width, dst_grad + i * width);
          continue;
        }
        if (!kSoftmax || in.out) {
          // One sweep: D_i = <dO_i, O_i> is known up front (softmax), or not needed (relu).
          if constexpr (kSoftmax) {
            if constexpr (Dm::heads == 8 && Dm::dv == 8)
              dot_8x8(in.dout + i * 64, in.out + i * 64, drow);
            else
              for (int64_t h = 0; h < heads; ++h)
                drow[h] = dot(in.dout + (i * heads + h) * dv, in.out + (i * heads + h) * dv, dv);
            set_row_sum(i, drow);
          }
          if (!dst_grad && !g.dbias && !g.datt && !g.dse && !edge_attr_grads && !records) continue;
          acc_sums.start(acc);
          edge_buf.resize(static_cast<size_t>(2 * heads));
          float* alpha = edge_buf.data();
          float* da = alpha + heads;
          pattern.for_each_in_row(i, [&](int32_t j, int64_t e) EDGEATTN_EDGE_BODY {
            prefetch(e);
            score.scores(i, j, e, s);
            weights(i, e, s, alpha);
            keep_factors_row(row_key, j, kf);
            dalpha(i, j, e, kf, da, ve);
#pragma omp simd
            for (int64_t h = 0; h < heads; ++h)
              ds[h] = kSoftmax ? alpha[h] * (da[h] - drow[h]) : (alpha[h] > 0.f ? da[h] : 0.f);
            if (g.dbias) std::copy_n(ds, heads, g.dbias + e * heads);
            if (edge_attr_grads)
              for (int64_t h = 0; h < heads; ++h) wk[h] = alpha[h] * kf[h];
            edge_term_grad(i, j, e, ds, wk, dwe);
            score.grad_dst(i, j, e, ds, acc, datt);
            acc_sums.count();
            if (param_grads) param_sums.count();
            if (records) write_record(i, j, e, alpha, kf, ds);
          });
          acc_sums.finish();
          if (dst_grad) std::copy_n(acc, width, dst_grad + i * width);
          continue;
        }
        // Two sweeps: the first computes D_i = sum_j alpha_ij dalpha_ij, keeping alpha and dalpha
        // per edge of the row (O(degree * H)); the second forms ds.
        edge_buf.resize(static_cast<size_t>(2 * heads * (pattern.row_offset(i + 1) - first)));
        d_sums.start(drow);
        pattern.for_each_in_row(i, [&](int32_t j, int64_t e) EDGEATTN_EDGE_BODY {
          prefetch(e);
          float* alpha = edge_buf.data() + 2 * heads * (e - first);
          float* da = alpha + heads;
          score.scores(i, j, e, s);
          weights(i, e, s, alpha);
          keep_factors_row(row_key, j, kf);
          dalpha(i, j, e, kf, da, ve);
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) drow[h] += alpha[h] * da[h];
          d_sums.count();
        });
        d_sums.finish();
        if constexpr (kSoftmax) set_row_sum(i, drow);
        if (!dst_grad && !g.dbias && !g.datt && !g.dse && !edge_attr_grads && !records) continue;
        acc_sums.start(acc);
        pattern.for_each_in_row(i, [&](int32_t j, int64_t e) EDGEATTN_EDGE_BODY {
          const float* alpha = edge_buf.data() + 2 * heads * (e - first);
          const float* da = alpha + heads;
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h)
            ds[h] = kSoftmax ? alpha[h] * (da[h] - drow[h]) : (alpha[h] > 0.f ? da[h] : 0.f);
          if (g.dbias) std::copy_n(ds, heads, g.dbias + e * heads);
          if (edge_attr_grads || records) keep_factors_row(row_key, j, kf);
          if (edge_attr_grads)
            for (int64_t h = 0; h < heads; ++h) wk[h] = alpha[h] * kf[h];
          edge_term_grad(i, j, e, ds, wk, dwe);
          score.grad_dst(i, j, e, ds, acc, datt);
          acc_sums.count();
          if (param_grads) param_sums.count();
          if (records) write_record(i, j, e, alpha, kf, ds);
        });
        acc_sums.finish();
        if (dst_grad) std::copy_n(acc, width, dst_grad + i * width);
      }
      if (param_grads) param_sums.finish(param_partial.data() + chunk * static_cast<size_t>(param_size));
    });
  }
  if (param_size > 0) {  // d att then d we, each summed over the chunks in order and rounded once
    // Chunk by chunk (the partials in the order they lie in memory); each total is the same sum.
    std::vector<double> total(static_cast<size_t>(param_size), 0.0);
    for (size_t c = 0; c < num_chunks; ++c) {
      const double* partial = param_partial.data() + c * static_cast<size_t>(param_size);
      for (size_t k = 0; k < total.size(); ++k) total[k] += partial[k];
    }
    float* param_out[2] = {g.datt, g.dwe};
    const int64_t part_size[2] = {g.datt ? width : 0, we_size};
    for (int64_t part = 0, offset = 0; part < 2; offset += part_size[part], ++part)
      for (int64_t k = 0; k < part_size[part]; ++k)
        param_out[part][k] += static_cast<float>(total[static_cast<size_t>(offset + k)]);
  }

  // ---- Pass 2: source columns over the transpose ----------------------------------------------
  if (!src_grad && !g.dv) return;
  // The pass reads each in-edge's id for an edge bias or a per-edge score term, and for the records.
  [[maybe_unused]] const bool edge_data = a.bias || a.score.se || a.score.ea;
  if constexpr (std::is_same_v<P, CsrPattern>) {
    // A graph without its transpose yet builds it with the ids in one sort.
    if (records || edge_data) (void)pattern.graph().transpose_edges();
  }
  std::vector<int64_t> col_chunk_storage;
  const std::span<const int64_t> col_chunks = column_chunks(pattern, col_chunk_storage);
  // The head-score fold: per column chunk, partials of d a_src and d a_dst [2, H * dv].
  const bool fold = g.fold_att_src != nullptr;
  const int64_t value_width = heads * dv;
  std::vector<double> fold_partial(fold ? (col_chunks.size() - 1) * 2 * static_cast<size_t>(value_width) : 0);
  // dv is written once per source, after its last read of v_j (dv may be v itself): large ones
  // with streaming stores, as the forward's output.
  const bool stream_dv = g.dv && streaming_stores_apply(g.dv, pattern.num_src(), heads * dv);
  parallel_for_chunks(col_chunks, [&](size_t chunk, int64_t col_begin, int64_t col_end) {
    std::vector<float> scratch(
        static_cast<size_t>(6 * heads + width + heads * dv + (edge_values ? heads * dv : 0)));
    // A column's sums (d score_src or dk, and dv) in blocks of in-edges, and the chunk's fold
    // partials in blocks of columns (block_sums.hpp); the fold's into double partials.
    BlockSums src_sums(width), dv_sums(heads * dv), fold_sums(fold ? 2 * value_width : 0);
    std::vector<float> fold_acc(fold ? 2 * static_cast<size_t>(value_width) : 0);
    fold_sums.start(fold_acc.data());
    float* dasrc = fold ? fold_acc.data() : nullptr;
    float* dadst = dasrc ? dasrc + value_width : nullptr;
    // The chunk's end: its fold partials, and the fence after streaming stores of dv.
    auto end_chunk = [&] {
      if (fold) fold_sums.finish(fold_partial.data() + chunk * 2 * static_cast<size_t>(value_width));
      if (stream_dv) stream_fence();
    };
    float* s = scratch.data();
    float* alpha = s + heads;
    float* kf = alpha + heads;
    float* da = kf + heads;
    float* ds = da + heads;
    float* acc = ds + heads;                         // [width]
    float* dv_acc = acc + width;                     // [H * dv]
    float* ve = dv_acc + heads * dv;                 // [H * dv] (the dot score's edge values)
    float* z = ve + (edge_values ? heads * dv : 0);  // [H] (node records: the edge's z)
    const Transpose* t = nullptr;  // explicit graphs: prefetch the gathered destination rows
    if constexpr (std::is_same_v<P, CsrPattern>) t = &pattern.graph().transpose();
    // Column j's in-edges, f(i, e). The edge id e is read only for an edge bias or a per-edge
    // score term; without them, an explicit graph's transpose is walked directly, so its edge ids
    // (4 bytes an edge, Graph::transpose_edges) are never built.
    auto for_each_in_col = [&](int64_t j, auto&& f) EDGEATTN_EDGE_BODY {
      if constexpr (std::is_same_v<P, CsrPattern>) {
        if (!edge_data) {
          const auto end = t->col_ptr[static_cast<size_t>(j) + 1];
          for (int64_t p = t->col_ptr[static_cast<size_t>(j)]; p < end; ++p)
            f(t->row_idx[static_cast<size_t>(p)], int64_t{-1});
          return;
        }
      }
      pattern.for_each_in_col(j, f);
    };
    // Each in-edge gathers the destination's score-side row and dO row, and with softmax its
    // log-sum-exp and D.
    const int64_t distance =
        prefetch_distance(row_lines(width) + row_lines(heads * dv) + (kSoftmax ? 2 * row_lines(heads) : 0));
    // The chunk's last edge, for the prefetches; 0 (none) when the gathered rows (each
    // destination's score-side row, dO row and softmax terms; the edge records) fit in cache.
    const int64_t pos_end = t && gathered_bytes(pattern.num_dst(), width + heads * dv + 2 * heads) +
                                            (records ? gathered_bytes(pattern.num_edges(), 2 * heads) : 0) >
                                        kGatherCachedBytes
                                ? t->col_ptr[static_cast<size_t>(col_end)]
                                : 0;
    // dv_j += w_h dO_i^h for each head h, w_h = weight(h).
    auto add_weighted_dout = [&](const float* dout_i, auto&& weight) {
      for (int64_t h = 0; h < heads; ++h) {
        const float wt = weight(h);
#pragma omp simd
        for (int64_t d = 0; d < dv; ++d) dv_acc[h * dv + d] += wt * dout_i[h * dv + d];
      }
    };
    // With the fold, dv_j gains the node terms' share: dss_j (= acc) a_src, and dsd_j a_dst for
    // j < Nd; v_j is read here, before dv_j (which may be v_j's storage) is written.
    auto fold_column = [&](int64_t j) EDGEATTN_EDGE_BODY {
      if constexpr (kIsAdditive<S>) {
        const float* vj = a.v + j * value_width;
        accumulate(heads, dv, dasrc, acc, vj);
        accumulate(heads, dv, dv_acc, acc, g.fold_att_src);
        if (j < nd) {
          const float* dsd_j = g.dsd + j * heads;
          accumulate(heads, dv, dadst, dsd_j, vj);
          accumulate(heads, dv, dv_acc, dsd_j, g.fold_att_dst);
        }
        fold_sums.count();
      } else {
        (void)j;
      }
    };
    auto start_column = [&] {
      src_sums.start(acc);
      dv_sums.start(dv_acc);
    };
    auto finish_column = [&](int64_t j) {
      src_sums.finish();
      dv_sums.finish();
      if (src_grad) std::copy_n(acc, width, src_grad + j * width);
      if (fold) fold_column(j);
      if (g.dv) store_row(g.dv + j * heads * dv, dv_acc, heads * dv, stream_dv);
    };
    if (records) {  // from the edge records: no score, exp, dropout hash or dot
      if constexpr (std::is_same_v<P, CsrPattern>) {
        const int64_t row_distance = prefetch_distance(row_lines(heads * dv) + row_lines(2 * heads));
        // The edge ids in their stored width (32-bit below 2^31 edges): the loop reads 4 bytes an
        // edge fewer than with 64-bit ids, and the graph keeps half the bytes.
        pattern.graph().transpose_edges().visit([&](auto edges) {
          auto record = [&](int64_t p) {
            return record_data + static_cast<int64_t>(edges[size_t(p)]) * 2 * heads;
          };
          for (int64_t j = col_begin; j < col_end; ++j) {
            start_column();
            const int64_t begin = t->col_ptr[static_cast<size_t>(j)],
                          end = t->col_ptr[static_cast<size_t>(j) + 1];
            if constexpr (Dm::heads == 8 && Dm::dv == 8) {
              // dv_j's sums with the accumulator in registers (accumulate_8x8_rows), then
              // d score_src_j's: the same sums in the same order as the loop below.
              // In blocks of kSumBlock in-edges, as the recomputing pass's per-edge counts.
              for (int64_t b = begin; b < end; b += kSumBlock) {
                const int64_t m = std::min(kSumBlock, end - b);
                accumulate_8x8_rows(
                    dv_acc, m, [&](int64_t k) EDGEATTN_EDGE_BODY { return record(b + k); },
                    [&](int64_t k) EDGEATTN_EDGE_BODY {
                      const int64_t p = b + k;
                      if (p + row_distance < pos_end) {
                        prefetch_row(in.dout + t->row_idx[static_cast<size_t>(p + row_distance)] * 64, 64);
                        prefetch_row(record(p + row_distance), 16);
                      }
                      return in.dout + static_cast<int64_t>(t->row_idx[static_cast<size_t>(p)]) * 64;
                    });
                for (int64_t p = b; p < b + m; ++p) {
                  const float* rec = record(p);
#pragma omp simd
                  for (int64_t h = 0; h < 8; ++h) acc[h] += rec[8 + h];
                }
                if (b + m < end) {
                  src_sums.spill();
                  dv_sums.spill();
                }
              }
              finish_column(j);
              continue;
            }
            if (Dm::heads == 1 && dv <= 8) {
              // One head of at most 8 features (GAT's output layer): dv_j's sums with the
              // accumulator in one register (accumulate_short_rows, as the recomputing pass
              // below sums them: the same bits), then d score_src_j's in edge order.
              for (int64_t b = begin; b < end; b += kSumBlock) {
                const int64_t m = std::min(kSumBlock, end - b);
                accumulate_short_rows(
                    dv_acc, dv, m, [&](int64_t k) EDGEATTN_EDGE_BODY { return record(b + k)[0]; },
                    [&](int64_t k) EDGEATTN_EDGE_BODY {
                      const int64_t p = b + k;
                      if (p + row_distance < pos_end) {
                        prefetch_row(in.dout + t->row_idx[static_cast<size_t>(p + row_distance)] * dv, dv);
                        prefetch_row(record(p + row_distance), 2);
                      }
                      return in.dout + static_cast<int64_t>(t->row_idx[static_cast<size_t>(p)]) * dv;
                    });
                if (b + m < end) dv_sums.spill();
              }
              for (int64_t b = begin; b < end; b += kSumBlock) {
                const int64_t m = std::min(kSumBlock, end - b);
                float acc0 = acc[0];
                for (int64_t p = b; p < b + m; ++p) acc0 += record(p)[1];
                acc[0] = acc0;
                if (b + m < end) src_sums.spill();
              }
              finish_column(j);
              continue;
            }
            for (int64_t p = begin; p < end; ++p) {
              if (p + row_distance < pos_end) {
                prefetch_row(in.dout + t->row_idx[static_cast<size_t>(p + row_distance)] * heads * dv,
                             heads * dv);
                prefetch_row(record(p + row_distance), 2 * heads);
              }
              const float* rec = record(p);
              const float* dout_i =
                  in.dout + static_cast<int64_t>(t->row_idx[static_cast<size_t>(p)]) * heads * dv;
              add_weighted_dout(dout_i, [&](int64_t h) { return rec[h]; });
              dv_sums.count();
#pragma omp simd
              for (int64_t h = 0; h < heads; ++h) acc[h] += rec[heads + h];
              src_sums.count();
            }
            finish_column(j);
          }
        });
      }
      end_chunk();
      return;
    }
    if constexpr (kSingleHead) {
      // One head: a column's in-edges as arrays, as in pass 1 (the same values, summed in the
      // same order into dv_j and d score_src_j). One head is GAT's additive score only
      // (visit_score_dims), so softmax here always has the node records.
      static_assert(!kSoftmax || kNodeRecords);
      SingleHeadRow col_edges;
      for (int64_t j = col_begin; j < col_end; ++j) {
        start_column();
        int64_t pos = t ? t->col_ptr[static_cast<size_t>(j)] : 0;
        int64_t n = 0;
        for_each_in_col(j, [&](int32_t i, int64_t e) EDGEATTN_EDGE_BODY {
          if (t && pos + distance < pos_end) {
            const int64_t ahead = t->row_idx[static_cast<size_t>(pos + distance)];
            prefetch_row(in.dout + ahead * dv, dv);
            if constexpr (kNodeRecords)
              prefetch_row(row_sum_data + ahead * record_width, record_width);
            else
              score.prefetch_dst(ahead);
          }
          ++pos;
          if (n == static_cast<int64_t>(col_edges.src.size()))
            col_edges.reserve(std::max<int64_t>(64, 2 * n));
          col_edges.src[size_t(n)] = i;
          col_edges.edge[size_t(n)] = e;
          float* sk = col_edges.alpha.data() + n;
          if constexpr (kNodeRecords) {
            // score.scores and grad_src's z = sd_i + ss_j (+ se_e), with sd_i from the record
            const float* r = row_sum_data + i * record_width;
            const float zk = score.se ? r[0] + score.ss[j] + score.se[e] : r[0] + score.ss[j];
            col_edges.z[size_t(n)] = zk;
            sk[0] = leaky_relu(zk, score.slope);
            col_edges.lse[size_t(n)] = r[1];
            col_edges.row_sum[size_t(n)] = r[2];
          } else {
            score.scores(i, j, e, sk);
          }
          if (a.bias) sk[0] += a.bias[e];
          ++n;
        });
        const int32_t* dsts = col_edges.src.data();
        float* alpha = col_edges.alpha.data();
        float* kfs = col_edges.keep.data();
        if constexpr (kNodeRecords) {
          const float* lses = col_edges.lse.data();
#pragma omp simd
          for (int64_t k = 0; k < n; ++k) alpha[k] = fast_exp(alpha[k] - lses[k]);
        } else {
#pragma omp simd
          for (int64_t k = 0; k < n; ++k) alpha[k] = std::max(alpha[k], 0.f);
        }
        if (a.dropout > 0.f)
          dropout_keep_col(a.seed, dsts, n, j, keep_threshold, keep_scale, kfs);
        else
          std::fill_n(kfs, n, 1.f);
        // Above 8 features each gathered dO_i row is read once for both its uses, dv_j's sum and
        // dalpha; up to 8 (one cache line or two) the second read hits L1. dalpha and ds go
        // through memory, as in pass 1: a product kept in a register would be fused
        // into ds's subtraction (an FMA) and round differently.
        const float* vj = a.v + j * dv;
        float* das = col_edges.dalpha.data();
        float* dss = col_edges.ds.data();
        if (dv <= 8) {
          // dv_j's sums as the record-driven pass makes them (accumulate_short_rows: its FMAs
          // whatever the compiler contracts), then dalpha.
          dv_sums.blocks(n, [&](int64_t b, int64_t end) {
            accumulate_short_rows(
                dv_acc, dv, end - b, [&](int64_t k) EDGEATTN_EDGE_BODY { return alpha[b + k] * kfs[b + k]; },
                [&](int64_t k)
                    EDGEATTN_EDGE_BODY { return in.dout + static_cast<int64_t>(dsts[b + k]) * dv; });
          });
          if (src_grad)
            for (int64_t k = 0; k < n; ++k)
              das[k] = kfs[k] * dot(in.dout + static_cast<int64_t>(dsts[k]) * dv, vj, dv);
        } else {
          for (int64_t k = 0; k < n; ++k) {
            const float wt = alpha[k] * kfs[k];
            const float* dout_i = in.dout + static_cast<int64_t>(dsts[k]) * dv;
#pragma omp simd
            for (int64_t d = 0; d < dv; ++d) dv_acc[d] += wt * dout_i[d];
            dv_sums.count();
            if (src_grad) das[k] = kfs[k] * dot(dout_i, vj, dv);
          }
        }
        if (src_grad) {
          if constexpr (kNodeRecords) {
            const float* row_sums = col_edges.row_sum.data();
#pragma omp simd
            for (int64_t k = 0; k < n; ++k) dss[k] = alpha[k] * (das[k] - row_sums[k]);
            // grad_src's sum, acc += ds * leaky'(z), with the z kept from the scores
            const float* zs = col_edges.z.data();
            src_sums.blocks(n, [&](int64_t b, int64_t e) {
              float sum = acc[0];
              for (int64_t k = b; k < e; ++k) sum += dss[k] * leaky_relu_grad(zs[k], score.slope);
              acc[0] = sum;
            });
          } else {
#pragma omp simd
            for (int64_t k = 0; k < n; ++k) dss[k] = alpha[k] > 0.f ? das[k] : 0.f;
            src_sums.blocks(n, [&](int64_t b, int64_t e) {
              for (int64_t k = b; k < e; ++k)
                score.grad_src(dsts[k], j, col_edges.edge[size_t(k)], dss + k, acc);
            });
          }
        }
        finish_column(j);
      }
      end_chunk();
      return;
    }
    for (int64_t j = col_begin; j < col_end; ++j) {
      start_column();
      int64_t pos = t ? t->col_ptr[static_cast<size_t>(j)] : 0;
      for_each_in_col(j, [&](int32_t i, int64_t e) EDGEATTN_EDGE_BODY {
        if (t && pos + distance < pos_end) {
          const int64_t ahead = t->row_idx[static_cast<size_t>(pos + distance)];
          prefetch_row(in.dout + ahead * heads * dv, heads * dv);
          if constexpr (kNodeRecords) {
            prefetch_row(row_sum_data + ahead * record_width, 3 * heads);
          } else {
            score.prefetch_dst(ahead);
            if constexpr (kSoftmax) {
              prefetch_row(in.lse + ahead * heads, heads);
              prefetch_row(row_sum_data + ahead * heads, heads);
            }
          }
        }
        ++pos;
        [[maybe_unused]] const float* node =
            row_sum_data + i * record_width;  // with node records: sd_i, lse_i, D_i
        if constexpr (kNodeRecords) {
          // score.scores and weights with sd_i and lse_i from the record; z kept for grad_src
          const float* ss_j = score.ss + j * heads;
          if (score.se) {
            const float* se_e = score.se + e * heads;
#pragma omp simd
            for (int64_t h = 0; h < heads; ++h) z[h] = node[h] + ss_j[h] + se_e[h];
          } else {
#pragma omp simd
            for (int64_t h = 0; h < heads; ++h) z[h] = node[h] + ss_j[h];
          }
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) s[h] = leaky_relu(z[h], score.slope);
          if (a.bias)
#pragma omp simd
            for (int64_t h = 0; h < heads; ++h) s[h] += a.bias[e * heads + h];
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) alpha[h] = fast_exp(s[h] - node[heads + h]);
        } else {
          score.scores(i, j, e, s);
          weights(i, e, s, alpha);
        }
        keep_factors(i, j, kf);
        add_weighted_dout(in.dout + static_cast<int64_t>(i) * heads * dv,
                          [&](int64_t h) { return alpha[h] * kf[h]; });
        dv_sums.count();
        if (!src_grad) return;
        dalpha(i, j, e, kf, da, ve);
        if constexpr (kNodeRecords) {
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h) ds[h] = alpha[h] * (da[h] - node[2 * heads + h]);
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h)
            acc[h] += ds[h] * leaky_relu_grad(z[h], score.slope);  // grad_src
        } else {
#pragma omp simd
          for (int64_t h = 0; h < heads; ++h)
            ds[h] =
                kSoftmax ? alpha[h] * (da[h] - row_sum_data[i * heads + h]) : (alpha[h] > 0.f ? da[h] : 0.f);
          score.grad_src(i, j, e, ds, acc);
        }
        src_sums.count();
      });
      finish_column(j);
    }
    end_chunk();
  });
  if (fold) {  // d a_src and d a_dst, summed over the chunks in order and rounded once
    std::vector<double> fold_total(2 * static_cast<size_t>(value_width), 0.0);
    for (size_t c = 0; c + 1 < col_chunks.size(); ++c) {
      const double* part = fold_partial.data() + c * 2 * static_cast<size_t>(value_width);
      for (size_t k = 0; k < fold_total.size(); ++k) fold_total[k] += part[k];
    }
    for (int64_t k = 0; k < value_width; ++k) {
      g.datt_src[k] += static_cast<float>(fold_total[static_cast<size_t>(k)]);
      g.datt_dst[k] += static_cast<float>(fold_total[static_cast<size_t>(value_width + k)]);
    }
  }
}

/// The backward over one pattern type, every score kind and shape (explicitly instantiated in
/// parallel_backward_<pattern>.cpp, declared extern in parallel_backward.cpp).
template <class P>
void backward_pattern(const P& pattern, const KernelArgs& a, const BackwardInputs& in,
                      const BackwardBuffers& g) {
  visit_score_dims(a, [&](const auto& score, auto dims) {
    using Dm = decltype(dims);
    if (a.norm == Normalization::softmax)
      backward_impl<true, Dm>(pattern, score, a, in, g);
    else
      backward_impl<false, Dm>(pattern, score, a, in, g);
  });
}

}  // namespace edgeattn::kernels::detail
