#include <cfloat>
#include <cmath>
#include <type_traits>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/blas.hpp"
#include "kernels/parallel/tiled_attention.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {
namespace {

template <bool kSoftmax, class P>
void run_tiles(const P& p, const KernelArgs& a, const ForwardBuffers& out) {
  const int64_t heads = a.heads, dk = a.score.dk, dv = a.dv, nd = p.num_dst();
  const int64_t ldq = heads * dk, ldv = heads * dv;
  const float scale = a.score.scale;
  const float keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
  const int64_t row_tiles = (nd + kRowTile - 1) / kRowTile;
  parallel_for(0, row_tiles * heads, 1, [&](int64_t t_begin, int64_t t_end) {
    std::vector<float> s_buf(static_cast<size_t>(kRowTile * kColTile));
    std::vector<float> acc(static_cast<size_t>(kRowTile * dv));
    std::vector<float> m(kRowTile), l(kRowTile), c(kRowTile);
    std::vector<int64_t> first(kRowTile), last(kRowTile);
    for (int64_t t = t_begin; t < t_end; ++t) {
      const int64_t h = t % heads, r0 = (t / heads) * kRowTile, rows = std::min(kRowTile, nd - r0);
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (int64_t r = 0; r < rows; ++r) {
        const auto [f, e] = p.row_range(r0 + r);
        first[static_cast<size_t>(r)] = f;
        last[static_cast<size_t>(r)] = e;
        if (f < e) lo = std::min(lo, f), hi = std::max(hi, e);
        m[static_cast<size_t>(r)] = -FLT_MAX;
        l[static_cast<size_t>(r)] = 0.f;
      }
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t c0 = lo; c0 < hi; c0 += kColTile) {
        const int64_t cols = std::min(kColTile, hi - c0);
        gemm(false, true, rows, cols, dk, scale, a.score.q + (r0 * heads + h) * dk, ldq,
             a.score.k + (c0 * heads + h) * dk, ldq, 0.f, s_buf.data(), kColTile);
        for (int64_t r = 0; r < rows; ++r) {
          float* s = s_buf.data() + r * kColTile;
          const int64_t i = r0 + r;
          // Valid columns of this row within the block: [vb, ve) relative to c0.
          const int64_t vb = std::clamp(first[static_cast<size_t>(r)] - c0, int64_t{0}, cols);
          const int64_t ve = std::clamp(last[static_cast<size_t>(r)] - c0, vb, cols);
          std::fill(s, s + vb, 0.f);
          std::fill(s + ve, s + cols, 0.f);
          c[static_cast<size_t>(r)] = 1.f;
          if (vb == ve) continue;
          if (a.bias) {
            const int64_t e0 = p.row_offset(i) + (c0 + vb - first[static_cast<size_t>(r)]);
            for (int64_t x = vb; x < ve; ++x) s[x] += a.bias[(e0 + x - vb) * heads + h];
          }
          if constexpr (kSoftmax) {
            const float mx = max_of(s + vb, ve - vb, m[static_cast<size_t>(r)]);
            for (int64_t x = vb; x < ve; ++x) s[x] = fast_exp(s[x] - mx);
            const float row_sum = sum(s + vb, ve - vb);
            const float rescale = fast_exp(m[static_cast<size_t>(r)] - mx);
            c[static_cast<size_t>(r)] = rescale;
            l[static_cast<size_t>(r)] = l[static_cast<size_t>(r)] * rescale + row_sum;
            m[static_cast<size_t>(r)] = mx;
          } else {
            for (int64_t x = vb; x < ve; ++x) s[x] = std::max(s[x], 0.f);
          }
          if (a.dropout > 0.f)
            for (int64_t x = vb; x < ve; ++x)
              s[x] *= dropout_keep(a.seed, i, c0 + x, static_cast<int32_t>(h), a.dropout) ? keep_scale : 0.f;
        }
        if constexpr (kSoftmax)
          for (int64_t r = 0; r < rows; ++r) {
            const float cr = c[static_cast<size_t>(r)];
            if (cr != 1.f)
              for (int64_t d = 0; d < dv; ++d) acc[static_cast<size_t>(r * dv + d)] *= cr;
          }
        gemm(false, false, rows, dv, cols, 1.f, s_buf.data(), kColTile, a.v + (c0 * heads + h) * dv, ldv, 1.f,
             acc.data(), dv);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r0 + r;
        float* o = out.out + (i * heads + h) * dv;
        const float lr = l[static_cast<size_t>(r)];
        if constexpr (kSoftmax) {
          const float inv = lr > 0.f ? 1.f / lr : 0.f;
          for (int64_t d = 0; d < dv; ++d) o[d] = acc[static_cast<size_t>(r * dv + d)] * inv;
          out.lse[i * heads + h] = lr > 0.f ? m[static_cast<size_t>(r)] + std::log(lr) : -INFINITY;
        } else {
          for (int64_t d = 0; d < dv; ++d) o[d] = acc[static_cast<size_t>(r * dv + d)];
        }
      }
    }
  });
}

}  // namespace

bool tiled_applies(const Pattern& p, const KernelArgs& a, bool want_alpha) {
  if (a.score.kind != EdgeScore::dot || a.score.ea || want_alpha || num_dst(p) == 0) return false;
  return visit_pattern(p, [&](const auto& pattern) {
    using P = std::decay_t<decltype(pattern)>;
    if constexpr (ContiguousRowPattern<P>) {
      return has_contiguous_rows(pattern) && static_cast<double>(pattern.num_edges()) >=
                                                 kTiledMinMeanRow * static_cast<double>(pattern.num_dst());
    } else {
      return false;
    }
  });
}

void tiled_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out) {
  visit_pattern(p, [&](const auto& pattern) {
    using P = std::decay_t<decltype(pattern)>;
    if constexpr (ContiguousRowPattern<P>) {
      if (a.norm == Normalization::softmax)
        run_tiles<true>(pattern, a, out);
      else
        run_tiles<false>(pattern, a, out);
    }
  });
}

}  // namespace edgeattn::kernels
