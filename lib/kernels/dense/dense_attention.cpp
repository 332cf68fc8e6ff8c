// Dense attention path: Q·Kᵀ → masked normalisation → ·V with BLAS GEMM, blocked by destination
// rows so that memory stays bounded (Vaswani et al. 2017, "Attention is all you need", with a mask
// taken from any Pattern). Only dot-product scores reach this path; the dispatch projects bilinear
// scores to dot products first.
//
// Forward, one task per (head h, block of Br destination rows [r0, r1)):
//   [lo, hi)  hull of the block's sources: GEMMs touch only columns some row of the block uses,
//             so causal, window and block-diagonal patterns skip most of the masked area
//   S       = scale · Q_h[r0:r1] · K_h[lo:hi]ᵀ                              GEMM [Br, hi-lo]
//   mask    : entries outside the pattern get weight 0; allowed entries get S += bias[e, h]
//   softmax : P_ij = exp(S_ij − m_i) / Σ_j exp(S_ij − m_i),   lse_i = m_i + log Σ_j exp(S_ij − m_i)
//   relu    : P_ij = max(S_ij, 0)
//   alpha[e, h] = P_ij (before dropout); P~_ij = P_ij · keep(seed, i, j, h) / (1 − p)
//   out     = P~ · V_h[lo:hi]                                                GEMM [Br, dv]
// Q_h, K_h, V_h are strided views of the [N, H, D] tensors (leading dimension H·D): no copies.
//
// Backward recomputes P from Q, K and the saved row log-sum-exp instead of storing it, as in
// FlashAttention (Dao et al. 2022): P_ij = exp(S_ij − lse_i). With dP~ = dO · V_hᵀ,
// dP = dP~ ∘ keep / (1 − p), D_i = Σ_j P_ij dP_ij and dS = P ∘ (dP − D) (relu: dS = dP ∘ [S > 0]):
//   dq = scale · dS · K_h,   dk = scale · dSᵀ · Q_h,   dv = P~ᵀ · dO,   dbias[e, h] = dS_ij.
// dk and dv sum over destination rows, so row-block tasks would race on them. To stay atomics-free
// and bit-identical for any thread count, backward runs in two phases, each output element owned
// by exactly one task:
//   phase 1, one task per (head, row block), full source hull:   S, dP~ → D_i, dS → dq, dbias
//   phase 2, one task per (head, block of Bc sources), looping over the row blocks in order:
//            S and dP~ for that (row block, source block) tile only, P~ and dS from lse_i and D_i
//            → dk, dv for the task's own sources
// Phase 2 recomputes two GEMMs (7 instead of 5 in all), the price of keeping every thread busy
// even with one head. D [Nd, H] is the only extra storage. Gradients are added to the caller's
// zero-filled buffers, as the reference does; a null buffer is skipped with the work only it needs.
//
// Forward tasks see whole rows, so the two-pass softmax suffices; the online softmax of the fused
// sparse path (Milakov & Gimelshein 2018) is not needed here.
//
// Memory: per task one score block (forward) or two (backward phase 1) of at most Br × num_src
// floats, with Br = min(kMaxRowBlock, kBlockBudget / num_src) (at least 1), plus two rows of
// num_src; phase-2 tiles hold at most 2 × kMaxTileRows × kSourceBlock floats (1 MiB).
// Block sizes are constants, never derived from the thread count, so results are bit-identical
// for 1 and N threads. BLAS runs single-threaded inside each task (kernels/blas.hpp).
//
// Rows whose sources form one contiguous range (complete, causal, block-diagonal, undilated
// window) are masked with vectorised loops over that range. Other rows (explicit graphs, dilated
// windows, window + global tokens) go edge by edge; there each edge is its own softmax entry and
// the dense P sums repeated sources, so a Graph that keeps duplicate edges matches the reference.
#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/blas.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {
namespace {

/// Floats of one score block (8 MiB): bounds Br × num_src.
constexpr int64_t kBlockBudget = (int64_t{8} << 20) / static_cast<int64_t>(sizeof(float));
/// Rows per block at most; small enough that a block of a few thousand sources stays in L2 and
/// that even one head yields many tasks.
constexpr int64_t kMaxRowBlock = 128;
/// Sources per phase-2 backward task.
constexpr int64_t kSourceBlock = 256;
/// Rows per phase-2 tile at most (the reduction length of the dk/dv GEMMs).
constexpr int64_t kMaxTileRows = 512;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Row math: the shared vectorisable exp and fixed-order reductions (kernels/vector_math.hpp).
float row_max(const float* x, int64_t n) { return max_of(x, n, kNegInf); }

void zero(float* x, int64_t n) {
  if (n > 0) std::memset(x, 0, static_cast<size_t>(n) * sizeof(float));
}

// ---------------------------------------------------------------------------------------------
// Pattern access
// ---------------------------------------------------------------------------------------------

/// Half-open range of sources.
struct Span {
  int64_t first = 0, last = 0;
  bool empty() const { return last <= first; }
  int64_t size() const { return last - first; }
};

Span intersect(Span a, Span b) { return {std::max(a.first, b.first), std::min(a.last, b.last)}; }

Span unite(Span a, Span b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {std::min(a.first, b.first), std::max(a.last, b.last)};
}

/// True when every row of `p` is the contiguous source range row_range(i).
template <class P>
bool rows_are_ranges(const P& p) {
  if constexpr (std::is_same_v<P, WindowPattern>)
    return p.dilation() == 1;
  else
    return ContiguousRowPattern<P>;
}

/// Contiguous rows only: the sources of row i.
template <class P>
Span row_range(const P& p, int64_t i) {
  if constexpr (ContiguousRowPattern<P>) {
    const auto [first, last] = p.row_range(i);
    return {first, std::max(first, static_cast<int64_t>(last))};
  } else {
    (void)p, (void)i;
    return {};
  }
}

/// Smallest range holding every source of row i.
template <class P>
Span row_hull(const P& p, int64_t i, bool ranges) {
  if (ranges) return row_range(p, i);
  if constexpr (std::is_same_v<P, CsrPattern>) {
    const auto row = p.graph().row(i);
    if (row.empty()) return {};
    return {row.front(), static_cast<int64_t>(row.back()) + 1};
  } else {
    Span h{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    p.for_each_in_row(i, [&](int64_t j, int64_t) {
      h.first = std::min(h.first, j);
      h.last = std::max(h.last, j + 1);
    });
    return h.empty() ? Span{} : h;
  }
}

Span block_hull_of(const auto& p, int64_t r0, int64_t r1, bool ranges) {
  Span h;
  for (int64_t i = r0; i < r1; ++i) h = unite(h, row_hull(p, i, ranges));
  return h;
}

// ---------------------------------------------------------------------------------------------
// Shared bookkeeping
// ---------------------------------------------------------------------------------------------

struct Dims {
  int64_t nd = 0, ns = 0, heads = 0, dk = 0, dv = 0;
  int64_t q_ld = 0, v_ld = 0;  // H·dk, H·dv: row strides of the [N, H, D] tensors
  int64_t rows_per_block = 1, row_blocks = 0;
  float keep_scale = 1.f;  // 1 / (1 − p)
};

template <class P>
Dims dims_of(const P& p, const KernelArgs& a) {
  Dims d;
  d.nd = p.num_dst();
  d.ns = p.num_src();
  d.heads = a.heads;
  d.dk = a.score.dk;
  d.dv = a.dv;
  d.q_ld = d.heads * d.dk;
  d.v_ld = d.heads * d.dv;
  d.rows_per_block = std::clamp<int64_t>(kBlockBudget / std::max<int64_t>(d.ns, 1), 1, kMaxRowBlock);
  d.row_blocks = (d.nd + d.rows_per_block - 1) / d.rows_per_block;
  d.keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
  return d;
}

/// Dropout factor keep(seed, i, j, h) / (1 − p) of entry (i, j, h).
inline float drop_factor(const KernelArgs& a, const Dims& d, int64_t i, int64_t j, int64_t h) {
  return dropout_keep(a.seed, i, j, static_cast<int32_t>(h), a.dropout) ? d.keep_scale : 0.f;
}

const char* score_name(EdgeScore kind) {
  switch (kind) {
    case EdgeScore::dot:
      return "dot";
    case EdgeScore::additive:
      return "additive";
    case EdgeScore::vector_leaky:
      return "vector_leaky";
    case EdgeScore::vector_tanh:
      return "vector_tanh";
  }
  return "unknown";
}

void check_dot(const KernelArgs& a, const char* where) {
  if (a.score.kind != EdgeScore::dot)
    raise<InvalidArgument>(where, ": score kind is ", score_name(a.score.kind),
                           ", expected dot (the dense path computes dot-product scores only)");
}

/// Per-thread scratch, reused across the tasks a thread runs.
using Scratch = tbb::enumerable_thread_specific<std::vector<float>>;

float* scratch_floats(Scratch& scratch, int64_t n) {
  auto& buf = scratch.local();
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

// ---------------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------------

/// Turns row i's scores s[0, W) over sources [tile.first, tile.first + W) into P~ (zero outside
/// the pattern); writes lse and alpha. `tmp` holds W floats.
template <class P>
void forward_row(const P& p, bool ranges, const KernelArgs& a, const Dims& d, const ForwardBuffers& out,
                 int64_t i, int64_t h, Span tile, float* s, float* tmp) {
  const int64_t w = tile.size();
  const bool softmax = a.norm == Normalization::softmax;
  float lse = kNegInf;
  if (ranges) {
    const Span r = row_range(p, i);  // inside the tile, the hull of the block's rows, unless empty
    const int64_t a0 = r.first - tile.first, n = r.size();
    if (n <= 0) {
      zero(s, w);
    } else {
      zero(s, a0);
      zero(s + a0 + n, w - a0 - n);
      float* x = s + a0;
      const int64_t e0 = p.row_offset(i);
      if (a.bias)
        for (int64_t j = 0; j < n; ++j) x[j] += a.bias[(e0 + j) * d.heads + h];
      if (softmax) {
        const float m = row_max(x, n);
        for (int64_t j = 0; j < n; ++j) x[j] = fast_exp(x[j] - m);
        const float total = sum(x, n);
        const float inv = 1.f / total;
        for (int64_t j = 0; j < n; ++j) x[j] *= inv;
        lse = m + std::log(total);
      } else {
        for (int64_t j = 0; j < n; ++j) x[j] = x[j] < 0.f ? 0.f : x[j];  // NaN stays NaN, as in the reference
      }
      if (out.alpha)
        for (int64_t j = 0; j < n; ++j) out.alpha[(e0 + j) * d.heads + h] = x[j];
      if (a.dropout > 0.f)
        for (int64_t j = 0; j < n; ++j) x[j] *= drop_factor(a, d, i, r.first + j, h);
    }
  } else {
    std::memcpy(tmp, s, static_cast<size_t>(w) * sizeof(float));
    zero(s, w);
    auto score = [&](int64_t j, int64_t e) {
      return tmp[j - tile.first] + (a.bias ? a.bias[e * d.heads + h] : 0.f);
    };
    int64_t count = 0;
    float m = kNegInf, total = 0.f;
    if (softmax) {
      p.for_each_in_row(i, [&](int64_t j, int64_t e) {
        m = std::max(m, score(j, e));
        ++count;
      });
      p.for_each_in_row(i, [&](int64_t j, int64_t e) { total += fast_exp(score(j, e) - m); });
      if (count > 0) lse = m + std::log(total);
    }
    const float inv = 1.f / total;
    p.for_each_in_row(i, [&](int64_t j, int64_t e) {
      const float v = score(j, e);
      const float pe = softmax ? fast_exp(v - m) * inv : (v < 0.f ? 0.f : v);  // relu: NaN stays NaN
      if (out.alpha) out.alpha[e * d.heads + h] = pe;
      s[j - tile.first] += a.dropout > 0.f ? pe * drop_factor(a, d, i, j, h) : pe;
    });
  }
  if (softmax && out.lse) out.lse[i * d.heads + h] = lse;
}

template <class P>
void forward_impl(const P& p, const KernelArgs& a, const ForwardBuffers& out) {
  const Dims d = dims_of(p, a);
  const bool ranges = rows_are_ranges(p);
  const bool softmax = a.norm == Normalization::softmax;
  Scratch scratch;
  parallel_for(0, d.heads * d.row_blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / d.row_blocks, rb = t % d.row_blocks;
      const int64_t r0 = rb * d.rows_per_block, r1 = std::min(d.nd, r0 + d.rows_per_block);
      const int64_t rows = r1 - r0;
      float* o = out.out + r0 * d.v_ld + h * d.dv;  // [rows, dv], leading dimension H·dv
      const Span tile = block_hull_of(p, r0, r1, ranges);
      if (tile.empty()) {
        for (int64_t i = r0; i < r1; ++i) {
          zero(out.out + i * d.v_ld + h * d.dv, d.dv);
          if (softmax && out.lse) out.lse[i * d.heads + h] = kNegInf;
        }
        continue;
      }
      const int64_t w = tile.size();
      float* s = scratch_floats(scratch, rows * w + w);  // S block [rows, w], then one row
      float* tmp = s + rows * w;
      gemm(false, true, rows, w, d.dk, a.score.scale, a.score.q + r0 * d.q_ld + h * d.dk, d.q_ld,
           a.score.k + tile.first * d.q_ld + h * d.dk, d.q_ld, 0.f, s, w);
      for (int64_t i = r0; i < r1; ++i) forward_row(p, ranges, a, d, out, i, h, tile, s + (i - r0) * w, tmp);
      gemm(false, false, rows, d.dv, w, 1.f, s, w, a.v + tile.first * d.v_ld + h * d.dv, d.v_ld, 0.f, o,
           d.v_ld);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------------------------

/// Phase 1, row i over its full hull: s holds S, g holds dP~ on entry and dS on exit (zero outside
/// the pattern). Writes dbias; returns D_i (softmax). `tmp` holds 2·W floats.
template <class P>
float phase1_row(const P& p, bool ranges, const KernelArgs& a, const Dims& d, const BackwardInputs& in,
                 const BackwardBuffers& grads, int64_t i, int64_t h, Span tile, float* s, float* g,
                 float* tmp) {
  const int64_t w = tile.size();
  const bool softmax = a.norm == Normalization::softmax;
  const float lse = softmax ? in.lse[i * d.heads + h] : 0.f;
  float dsum = 0.f;
  if (ranges) {
    const Span r = row_range(p, i);
    const int64_t a0 = r.first - tile.first, n = r.size();
    if (n <= 0) {
      zero(g, w);
      return 0.f;
    }
    zero(g, a0);
    zero(g + a0 + n, w - a0 - n);
    float* x = s + a0;  // S, then P
    float* y = g + a0;  // dP~, then dP, then dS
    const int64_t e0 = p.row_offset(i);
    if (a.bias)
      for (int64_t j = 0; j < n; ++j) x[j] += a.bias[(e0 + j) * d.heads + h];
    if (a.dropout > 0.f)
      for (int64_t j = 0; j < n; ++j) y[j] *= drop_factor(a, d, i, r.first + j, h);
    if (softmax) {
      for (int64_t j = 0; j < n; ++j) x[j] = fast_exp(x[j] - lse);
      dsum = dot(x, y, n);
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] * (y[j] - dsum);
    } else {
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] > 0.f ? y[j] : 0.f;
    }
    if (grads.dbias)
      for (int64_t j = 0; j < n; ++j) grads.dbias[(e0 + j) * d.heads + h] += y[j];
  } else {
    float* ts = tmp;
    float* tg = tmp + w;
    std::memcpy(ts, s, static_cast<size_t>(w) * sizeof(float));
    std::memcpy(tg, g, static_cast<size_t>(w) * sizeof(float));
    zero(g, w);
    auto score = [&](int64_t j, int64_t e) {
      return ts[j - tile.first] + (a.bias ? a.bias[e * d.heads + h] : 0.f);
    };
    auto dprob = [&](int64_t j) {
      const float dp = tg[j - tile.first];
      return a.dropout > 0.f ? dp * drop_factor(a, d, i, j, h) : dp;
    };
    if (softmax)
      p.for_each_in_row(i, [&](int64_t j, int64_t e) { dsum += fast_exp(score(j, e) - lse) * dprob(j); });
    p.for_each_in_row(i, [&](int64_t j, int64_t e) {
      const float v = score(j, e), dp = dprob(j);
      const float ds = softmax ? fast_exp(v - lse) * (dp - dsum) : (v > 0.f ? dp : 0.f);
      if (grads.dbias) grads.dbias[e * d.heads + h] += ds;
      g[j - tile.first] += ds;
    });
  }
  return dsum;
}

/// Phase 2, row i over the sources `tile` (a part of its hull): s holds S and becomes P~; g, when
/// given, holds dP~ and becomes dS (both zero outside the pattern). `tmp` holds 2·W floats.
template <class P>
void phase2_row(const P& p, bool ranges, const KernelArgs& a, const Dims& d, const BackwardInputs& in,
                const float* dsums, int64_t i, int64_t h, Span tile, float* s, float* g, float* tmp) {
  const int64_t w = tile.size();
  const bool softmax = a.norm == Normalization::softmax;
  const float lse = softmax ? in.lse[i * d.heads + h] : 0.f;
  const float dsum = softmax && g ? dsums[i * d.heads + h] : 0.f;
  if (ranges) {
    const Span range = row_range(p, i);
    const Span r = intersect(range, tile);
    const int64_t n = std::max<int64_t>(r.size(), 0);
    const int64_t a0 = n > 0 ? r.first - tile.first : 0;
    zero(s, a0);
    zero(s + a0 + n, w - a0 - n);
    if (g) {
      zero(g, a0);
      zero(g + a0 + n, w - a0 - n);
    }
    if (n == 0) return;
    float* x = s + a0;
    float* y = g ? g + a0 : nullptr;
    const int64_t e0 = p.row_offset(i) + (r.first - range.first);
    if (a.bias)
      for (int64_t j = 0; j < n; ++j) x[j] += a.bias[(e0 + j) * d.heads + h];
    if (softmax)  // P; relu keeps the sign test exact: max(s, 0) > 0 iff s > 0
      for (int64_t j = 0; j < n; ++j) x[j] = fast_exp(x[j] - lse);
    else
      for (int64_t j = 0; j < n; ++j) x[j] = x[j] < 0.f ? 0.f : x[j];  // NaN stays NaN, as in the reference
    float* f = nullptr;  // dropout factors, computed once for P~ and dP
    if (a.dropout > 0.f) {
      f = tmp;
      for (int64_t j = 0; j < n; ++j) f[j] = drop_factor(a, d, i, r.first + j, h);
    }
    if (y) {
      if (f)
        for (int64_t j = 0; j < n; ++j) y[j] *= f[j];
      if (softmax)
        for (int64_t j = 0; j < n; ++j) y[j] = x[j] * (y[j] - dsum);
      else
        for (int64_t j = 0; j < n; ++j) y[j] = x[j] > 0.f ? y[j] : 0.f;
    }
    if (f)
      for (int64_t j = 0; j < n; ++j) x[j] *= f[j];
  } else {
    float* ts = tmp;
    float* tg = tmp + w;
    std::memcpy(ts, s, static_cast<size_t>(w) * sizeof(float));
    zero(s, w);
    if (g) {
      std::memcpy(tg, g, static_cast<size_t>(w) * sizeof(float));
      zero(g, w);
    }
    p.for_each_in_row(i, [&](int64_t j, int64_t e) {
      if (j < tile.first || j >= tile.last) return;
      const int64_t c = j - tile.first;
      const float v = ts[c] + (a.bias ? a.bias[e * d.heads + h] : 0.f);
      const float pe = softmax ? fast_exp(v - lse) : (v < 0.f ? 0.f : v);  // relu: NaN stays NaN
      const float f = a.dropout > 0.f ? drop_factor(a, d, i, j, h) : 1.f;
      s[c] += pe * f;
      if (g) g[c] += softmax ? pe * (tg[c] * f - dsum) : (v > 0.f ? tg[c] * f : 0.f);
    });
  }
}

template <class P>
void backward_impl(const P& p, const KernelArgs& a, const BackwardInputs& in, const BackwardBuffers& grads) {
  const Dims d = dims_of(p, a);
  const bool ranges = rows_are_ranges(p);
  const bool softmax = a.norm == Normalization::softmax;
  const float* q = a.score.q;
  const float* k = a.score.k;
  const float* dout = in.dout;
  Scratch scratch;

  // Phase 1: dq, dbias and D_i, one task per (head, row block).
  std::vector<float> dsums(softmax && grads.dk ? static_cast<size_t>(d.nd * d.heads) : 0);  // [Nd, H]
  if (grads.dq || grads.dbias || !dsums.empty()) {
    parallel_for(0, d.heads * d.row_blocks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t h = t / d.row_blocks, rb = t % d.row_blocks;
        const int64_t r0 = rb * d.rows_per_block, r1 = std::min(d.nd, r0 + d.rows_per_block);
        const int64_t rows = r1 - r0;
        const Span tile = block_hull_of(p, r0, r1, ranges);
        if (tile.empty()) continue;  // no edges: dq rows stay zero, D unused
        const int64_t w = tile.size();
        float* s = scratch_floats(scratch, 2 * rows * w + 2 * w);
        float* g = s + rows * w;
        float* tmp = g + rows * w;
        gemm(false, true, rows, w, d.dk, a.score.scale, q + r0 * d.q_ld + h * d.dk, d.q_ld,
             k + tile.first * d.q_ld + h * d.dk, d.q_ld, 0.f, s, w);
        gemm(false, true, rows, w, d.dv, 1.f, dout + r0 * d.v_ld + h * d.dv, d.v_ld,
             a.v + tile.first * d.v_ld + h * d.dv, d.v_ld, 0.f, g, w);
        for (int64_t i = r0; i < r1; ++i) {
          const float dsum =
              phase1_row(p, ranges, a, d, in, grads, i, h, tile, s + (i - r0) * w, g + (i - r0) * w, tmp);
          if (!dsums.empty()) dsums[static_cast<size_t>(i * d.heads + h)] = dsum;
        }
        if (grads.dq)
          gemm(false, false, rows, d.dk, w, a.score.scale, g, w, k + tile.first * d.q_ld + h * d.dk, d.q_ld,
               1.f, grads.dq + r0 * d.q_ld + h * d.dk, d.q_ld);
      }
    });
  }
  if (!grads.dk && !grads.dv) return;

  // Phase 2: dk and dv, one task per (head, source block); row blocks in fixed order within it.
  const int64_t tile_rows = std::clamp<int64_t>(kBlockBudget / kSourceBlock, 1, kMaxTileRows);
  const int64_t tile_row_blocks = (d.nd + tile_rows - 1) / tile_rows;
  std::vector<Span> hulls(static_cast<size_t>(tile_row_blocks));
  parallel_for(0, tile_row_blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      hulls[static_cast<size_t>(b)] =
          block_hull_of(p, b * tile_rows, std::min(d.nd, (b + 1) * tile_rows), ranges);
  });
  const int64_t src_blocks = (d.ns + kSourceBlock - 1) / kSourceBlock;
  parallel_for(0, d.heads * src_blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / src_blocks, cb = t % src_blocks;
      const Span cols{cb * kSourceBlock, std::min(d.ns, (cb + 1) * kSourceBlock)};
      for (int64_t b = 0; b < tile_row_blocks; ++b) {
        const Span tile = intersect(hulls[static_cast<size_t>(b)], cols);
        if (tile.empty()) continue;
        const int64_t r0 = b * tile_rows, r1 = std::min(d.nd, r0 + tile_rows);
        const int64_t rows = r1 - r0, w = tile.size();
        float* s = scratch_floats(scratch, 2 * rows * w + 2 * w);
        float* g = grads.dk ? s + rows * w : nullptr;
        float* tmp = s + 2 * rows * w;
        gemm(false, true, rows, w, d.dk, a.score.scale, q + r0 * d.q_ld + h * d.dk, d.q_ld,
             k + tile.first * d.q_ld + h * d.dk, d.q_ld, 0.f, s, w);
        if (g)
          gemm(false, true, rows, w, d.dv, 1.f, dout + r0 * d.v_ld + h * d.dv, d.v_ld,
               a.v + tile.first * d.v_ld + h * d.dv, d.v_ld, 0.f, g, w);
        for (int64_t i = r0; i < r1; ++i)
          phase2_row(p, ranges, a, d, in, dsums.data(), i, h, tile, s + (i - r0) * w,
                     g ? g + (i - r0) * w : nullptr, tmp);
        if (grads.dv)
          gemm(true, false, w, d.dv, rows, 1.f, s, w, dout + r0 * d.v_ld + h * d.dv, d.v_ld, 1.f,
               grads.dv + tile.first * d.v_ld + h * d.dv, d.v_ld);
        if (grads.dk)
          gemm(true, false, w, d.dk, rows, a.score.scale, g, w, q + r0 * d.q_ld + h * d.dk, d.q_ld, 1.f,
               grads.dk + tile.first * d.q_ld + h * d.dk, d.q_ld);
      }
    }
  });
}

}  // namespace

void dense_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out) {
  check_dot(a, "dense_forward");
  visit_pattern(p, [&](const auto& pat) { forward_impl(pat, a, out); });
}

void dense_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                    const BackwardBuffers& grads) {
  check_dot(a, "dense_backward");
  if (a.norm == Normalization::softmax && !in.lse)
    raise<InvalidArgument>(
        "dense_backward: lse is null, expected the row log-sum-exp [num_dst, heads] "
        "saved by the softmax forward");
  visit_pattern(p, [&](const auto& pat) { backward_impl(pat, a, in, grads); });
}

}  // namespace edgeattn::kernels
