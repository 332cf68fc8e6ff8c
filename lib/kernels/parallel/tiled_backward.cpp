// Backward of the tiled schedule; see tiled_attention.hpp for the algorithm and its references.
#include <cmath>
#include <tuple>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/blas.hpp"
#include "kernels/parallel/tiled_attention.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {
namespace {

template <bool kSoftmax, class P>
class TiledBackward {
 public:
  TiledBackward(const P& p, const KernelArgs& a, const BackwardInputs& in, const BackwardBuffers& g)
      : p_(p),
        a_(a),
        in_(in),
        g_(g),
        heads_(a.heads),
        dk_(a.score.dk),
        dv_(a.dv),
        nd_(p.num_dst()),
        ns_(p.num_src()) {
    keep_scale_ = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
    first_.resize(static_cast<size_t>(nd_));
    last_.resize(static_cast<size_t>(nd_));
    for (int64_t i = 0; i < nd_; ++i)
      std::tie(first_[static_cast<size_t>(i)], last_[static_cast<size_t>(i)]) = p.row_range(i);
    const int64_t blocks = (nd_ + kRowTile - 1) / kRowTile;
    hull_lo_.assign(static_cast<size_t>(blocks), INT64_MAX);
    hull_hi_.assign(static_cast<size_t>(blocks), INT64_MIN);
    for (int64_t i = 0; i < nd_; ++i) {
      const size_t b = static_cast<size_t>(i / kRowTile);
      if (first_[static_cast<size_t>(i)] < last_[static_cast<size_t>(i)]) {
        hull_lo_[b] = std::min(hull_lo_[b], first_[static_cast<size_t>(i)]);
        hull_hi_[b] = std::max(hull_hi_[b], last_[static_cast<size_t>(i)]);
      }
    }
    if (kSoftmax) row_sum_.assign(static_cast<size_t>(nd_ * heads_), 0.f);
  }

  void run() {
    const int64_t row_blocks = static_cast<int64_t>(hull_lo_.size());
    if (kSoftmax || g_.dq || g_.dbias)
      parallel_for(0, row_blocks * heads_, 1, [&](int64_t b, int64_t e) {
        Scratch s;
        for (int64_t t = b; t < e; ++t) row_task(t % heads_, t / heads_, s);
      });
    if (g_.dk || g_.dv) {
      const int64_t col_blocks = (ns_ + kColTile - 1) / kColTile;
      parallel_for(0, col_blocks * heads_, 1, [&](int64_t b, int64_t e) {
        Scratch s;
        for (int64_t t = b; t < e; ++t) column_task(t % heads_, t / heads_, s);
      });
    }
  }

 private:
  struct Scratch {
    std::vector<float> prob = std::vector<float>(static_cast<size_t>(kRowTile * kColTile));   // P
    std::vector<float> dprob = std::vector<float>(static_cast<size_t>(kRowTile * kColTile));  // dP, then dS
    std::vector<float> kept = std::vector<float>(static_cast<size_t>(kRowTile * kColTile));   // P o mask
  };

  float keep(int64_t i, int64_t j, int64_t h) const {
    return a_.dropout > 0.f
               ? (dropout_keep(a_.seed, i, j, static_cast<int32_t>(h), a_.dropout) ? keep_scale_ : 0.f)
               : 1.f;
  }
  // Columns of row i inside block [c0, c0 + cols), relative to c0.
  std::pair<int64_t, int64_t> valid(int64_t i, int64_t c0, int64_t cols) const {
    const int64_t vb = std::clamp(first_[static_cast<size_t>(i)] - c0, int64_t{0}, cols);
    return {vb, std::clamp(last_[static_cast<size_t>(i)] - c0, vb, cols)};
  }

  // prob <- P (0 outside the pattern) for rows [r0, r0 + rows) x cols [c0, c0 + cols), head h.
  void probabilities(int64_t h, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float* prob) const {
    gemm(false, true, rows, cols, dk_, a_.score.scale, a_.score.q + (r0 * heads_ + h) * dk_, heads_ * dk_,
         a_.score.k + (c0 * heads_ + h) * dk_, heads_ * dk_, 0.f, prob, kColTile);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r0 + r;
      float* s = prob + r * kColTile;
      const auto [vb, ve] = valid(i, c0, cols);
      std::fill(s, s + vb, 0.f);
      std::fill(s + ve, s + cols, 0.f);
      if (a_.bias) {
        const int64_t e0 = p_.row_offset(i) + (c0 + vb - first_[static_cast<size_t>(i)]);
        for (int64_t x = vb; x < ve; ++x) s[x] += a_.bias[(e0 + x - vb) * heads_ + h];
      }
      if constexpr (kSoftmax) {
        const float lse = in_.lse[i * heads_ + h];
        for (int64_t x = vb; x < ve; ++x) s[x] = fast_exp(s[x] - lse);
      } else {
        for (int64_t x = vb; x < ve; ++x) s[x] = std::max(s[x], 0.f);
      }
    }
  }

  // dprob <- dS given P in prob: dP = mask o (dO V^T); dS = P o (dP - D) or dP [P > 0].
  void score_gradients(int64_t h, int64_t r0, int64_t rows, int64_t c0, int64_t cols, const float* prob,
                       float* dprob) const {
    gemm(false, true, rows, cols, dv_, 1.f, in_.dout + (r0 * heads_ + h) * dv_, heads_ * dv_,
         a_.v + (c0 * heads_ + h) * dv_, heads_ * dv_, 0.f, dprob, kColTile);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r0 + r;
      const float* pr = prob + r * kColTile;
      float* ds = dprob + r * kColTile;
      const auto [vb, ve] = valid(i, c0, cols);
      std::fill(ds, ds + vb, 0.f);
      std::fill(ds + ve, ds + cols, 0.f);
      const float d = kSoftmax ? row_sum_[static_cast<size_t>(i * heads_ + h)] : 0.f;
      for (int64_t x = vb; x < ve; ++x) {
        const float dp = ds[x] * keep(i, c0 + x, h);
        ds[x] = kSoftmax ? pr[x] * (dp - d) : (pr[x] > 0.f ? dp : 0.f);
      }
    }
  }

  void row_task(int64_t h, int64_t block, Scratch& s) {
    const int64_t r0 = block * kRowTile, rows = std::min(kRowTile, nd_ - r0);
    const int64_t lo = hull_lo_[static_cast<size_t>(block)], hi = hull_hi_[static_cast<size_t>(block)];
    if constexpr (kSoftmax) {  // D_i = <dO_i, O_i>, or sum_j P_ij dP_ij when O is not available
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r0 + r;
        float d = 0.f;
        if (in_.out) d = dot(in_.dout + (i * heads_ + h) * dv_, in_.out + (i * heads_ + h) * dv_, dv_);
        row_sum_[static_cast<size_t>(i * heads_ + h)] = d;
      }
      if (!in_.out)
        for (int64_t c0 = lo; c0 < hi; c0 += kColTile) {
          const int64_t cols = std::min(kColTile, hi - c0);
          probabilities(h, r0, rows, c0, cols, s.prob.data());
          gemm(false, true, rows, cols, dv_, 1.f, in_.dout + (r0 * heads_ + h) * dv_, heads_ * dv_,
               a_.v + (c0 * heads_ + h) * dv_, heads_ * dv_, 0.f, s.dprob.data(), kColTile);
          for (int64_t r = 0; r < rows; ++r) {
            const auto [vb, ve] = valid(r0 + r, c0, cols);
            float d = 0.f;
            for (int64_t x = vb; x < ve; ++x)
              d += s.prob[static_cast<size_t>(r * kColTile + x)] *
                   s.dprob[static_cast<size_t>(r * kColTile + x)] * keep(r0 + r, c0 + x, h);
            row_sum_[static_cast<size_t>((r0 + r) * heads_ + h)] += d;
          }
        }
    }
    if (!g_.dq && !g_.dbias) return;
    for (int64_t c0 = lo; c0 < hi; c0 += kColTile) {
      const int64_t cols = std::min(kColTile, hi - c0);
      probabilities(h, r0, rows, c0, cols, s.prob.data());
      score_gradients(h, r0, rows, c0, cols, s.prob.data(), s.dprob.data());
      if (g_.dbias)
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = r0 + r;
          const auto [vb, ve] = valid(i, c0, cols);
          const int64_t e0 = p_.row_offset(i) + (c0 + vb - first_[static_cast<size_t>(i)]);
          for (int64_t x = vb; x < ve; ++x)
            g_.dbias[(e0 + x - vb) * heads_ + h] = s.dprob[static_cast<size_t>(r * kColTile + x)];
        }
      if (g_.dq)  // dQ_rows += scale dS K_block
        gemm(false, false, rows, dk_, cols, a_.score.scale, s.dprob.data(), kColTile,
             a_.score.k + (c0 * heads_ + h) * dk_, heads_ * dk_, 1.f, g_.dq + (r0 * heads_ + h) * dk_,
             heads_ * dk_);
    }
  }

  void column_task(int64_t h, int64_t block, Scratch& s) {
    const int64_t c0 = block * kColTile, cols = std::min(kColTile, ns_ - c0);
    for (size_t b = 0; b < hull_lo_.size(); ++b) {
      if (hull_lo_[b] >= c0 + cols || hull_hi_[b] <= c0) continue;  // row block misses these columns
      const int64_t r0 = static_cast<int64_t>(b) * kRowTile, rows = std::min(kRowTile, nd_ - r0);
      probabilities(h, r0, rows, c0, cols, s.prob.data());
      if (g_.dv) {  // dV_block += (P o mask)^T dO_rows
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t x = 0; x < cols; ++x) {
            const float pv = s.prob[static_cast<size_t>(r * kColTile + x)];
            s.kept[static_cast<size_t>(r * kColTile + x)] = pv != 0.f ? pv * keep(r0 + r, c0 + x, h) : 0.f;
          }
        gemm(true, false, cols, dv_, rows, 1.f, s.kept.data(), kColTile, in_.dout + (r0 * heads_ + h) * dv_,
             heads_ * dv_, 1.f, g_.dv + (c0 * heads_ + h) * dv_, heads_ * dv_);
      }
      if (g_.dk) {  // dK_block += scale dS^T Q_rows
        score_gradients(h, r0, rows, c0, cols, s.prob.data(), s.dprob.data());
        gemm(true, false, cols, dk_, rows, a_.score.scale, s.dprob.data(), kColTile,
             a_.score.q + (r0 * heads_ + h) * dk_, heads_ * dk_, 1.f, g_.dk + (c0 * heads_ + h) * dk_,
             heads_ * dk_);
      }
    }
  }

  const P& p_;
  const KernelArgs& a_;
  const BackwardInputs& in_;
  const BackwardBuffers& g_;
  int64_t heads_, dk_, dv_, nd_, ns_;
  float keep_scale_ = 1.f;
  std::vector<int64_t> first_, last_;       // row ranges [num_dst]
  std::vector<int64_t> hull_lo_, hull_hi_;  // source hull of each row tile
  std::vector<float> row_sum_;              // D [num_dst, H]
};

}  // namespace

void tiled_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                    const BackwardBuffers& g) {
  visit_pattern(p, [&](const auto& pattern) {
    using P = std::decay_t<decltype(pattern)>;
    if constexpr (ContiguousRowPattern<P>) {
      if (a.norm == Normalization::softmax)
        TiledBackward<true, P>(pattern, a, in, g).run();
      else
        TiledBackward<false, P>(pattern, a, in, g).run();
    }
  });
}

}  // namespace edgeattn::kernels
