// Forward of the tiled schedule; see tiled_attention.hpp for the algorithm and its references.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <type_traits>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/parallel/flash_microkernel.hpp"
#include "kernels/parallel/flash_schedule.hpp"
#include "kernels/parallel/tiled_attention.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {
namespace {

using flash::align_down;
using flash::align_up;

/// The tiles of the heads of `hr`, whose K panels and V rows are packed in kt and vr.
template <class P, bool kSoftmax, bool kExtras, class Pat>
void run_slice(const Pat& p, const KernelArgs& a, const ForwardBuffers& out, const flash::RowRanges& rr,
               flash::HeadRange hr, const flash::HeadOperand& kt, const flash::HeadOperand& vr) {
  using Shape = flash::TileShape<P>;
  constexpr int64_t NR = flash::kPanel<P>, MR = P::kRows, BR = Shape::kRows, BC = Shape::kCols;
  const int64_t heads = a.heads, dk = a.score.dk, dv = a.dv, nd = p.num_dst();
  const int64_t ldq = heads * dk, dvp = flash::round_up_panel<P>(dv);
  const float keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
  parallel_for(0, rr.tiles() * hr.size(), 1, [&](int64_t t_begin, int64_t t_end) {
    std::vector<float> s_buf(static_cast<size_t>(MR * BC));  // one strip of scores, then weights
    std::vector<float> acc(static_cast<size_t>(BR * dvp));
    std::vector<float> m(BR), l(BR);
    std::vector<int64_t> cursor(BR);  // masked rows: each row's next edge (blocks ascend)
    for (int64_t t = t_begin; t < t_end; ++t) {
      // Head-major: consecutive tasks (and each thread's share of them) read one head's K and V.
      const int64_t h = hr.begin + t / rr.tiles(), tile = t % rr.tiles(), r0 = tile * BR,
                    rows = std::min(BR, nd - r0);
      const int64_t lo = rr.hull_lo[static_cast<size_t>(tile)], hi = rr.hull_hi[static_cast<size_t>(tile)];
      const float* ktp = kt.head(h);
      const float* vp = vr.head(h);
      std::fill(m.begin(), m.end(), -FLT_MAX);
      std::fill(l.begin(), l.end(), 0.f);
      std::fill(acc.begin(), acc.end(), 0.f);
      std::fill(cursor.begin(), cursor.end(), 0);
      flash::for_each_strip<MR, BC, NR>(rr, r0, rows, lo, hi, [&](const flash::Strip& st) {
        // Scores of the panels [pa, pa + w) the strip's rows reach.
        const auto [strip_row, mr, c0, c1, u0, u1, pa, w] = st;
        const int64_t i0 = strip_row - r0;
        flash::gemm_tile<P, false>(mr, w, dk, a.score.q + (r0 + i0) * ldq + h * dk, ldq, 1, ktp + pa * dk, NR,
                                   NR * dk, s_buf.data(), BC);
        for (int64_t r = 0; r < mr; ++r) {
          const int64_t i = r0 + i0 + r;
          float* s = s_buf.data() + r * BC;
          const auto [b, e] = rr.clip(i, c0, c1);
          const auto [k0, k1] = rr.edges(i, b, e, &cursor[static_cast<size_t>(i0 + r)]);
          if (k0 >= k1) {  // no edge of row i in this block
            std::fill(s, s + w, 0.f);
            continue;
          }
          std::fill(s, s + (b - pa), -INFINITY);
          std::fill(s + (e - pa), s + w, -INFINITY);
          rr.mask(s - pa, b, e, k0, k1);
          if constexpr (kExtras) {
            if (a.bias)
              rr.for_each_edge(k0, k1, b, [&](int64_t j, int64_t k) { s[j - pa] += a.bias[k * heads + h]; });
          }
          if constexpr (kSoftmax) {
            const size_t ri = static_cast<size_t>(i0 + r);
            const float mx = flash::row_max<P>(s, w, m[ri]);
            const float row_sum = flash::exp_shifted_row<P>(s, w, mx);
            const float rescale = fast_exp(m[ri] - mx);
            l[ri] = l[ri] * rescale + row_sum;
            m[ri] = mx;
            if (rescale != 1.f) flash::scale_row<P>(acc.data() + (i0 + r) * dvp, dvp, rescale);
          } else {
            flash::relu_row<P>(s, w);
          }
          if constexpr (kExtras) {
            if (a.dropout > 0.f)
              rr.for_each_edge(k0, k1, b, [&](int64_t j, int64_t) {
                s[j - pa] *=
                    dropout_keep(a.seed, i, j, static_cast<int32_t>(h), a.dropout) ? keep_scale : 0.f;
              });
          }
        }
        // acc_strip += P[:, u0 - pa, u1 - pa) V[u0, u1)
        flash::gemm_tile<P, true>(mr, dvp, u1 - u0, s_buf.data() + (u0 - pa), BC, 1, vp + u0 * vr.ld, vr.ld,
                                  NR, acc.data() + i0 * dvp, dvp);
      });
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r0 + r;
        float* o = out.out + (i * heads + h) * dv;
        const float* ar = acc.data() + r * dvp;
        const float lr = l[static_cast<size_t>(r)];
        if constexpr (kSoftmax) {
          const float inv = lr > 0.f ? 1.f / lr : 0.f;
          for (int64_t d = 0; d < dv; ++d) o[d] = ar[d] * inv;
          out.lse[i * heads + h] = lr > 0.f ? m[static_cast<size_t>(r)] + std::log(lr) : -INFINITY;
        } else {
          std::copy_n(ar, dv, o);
        }
      }
    }
  });
}

/// kSoftmax: online softmax, else relu weights; kExtras: bias and/or dropout (scalar epilogue).
template <class P, bool kSoftmax, bool kExtras, class Pat>
void run_tiles(const Pat& p, const KernelArgs& a, const ForwardBuffers& out) {
  const int64_t heads = a.heads, dk = a.score.dk, dv = a.dv, ns = p.num_src();
  const int64_t dvp = flash::round_up_panel<P>(dv);
  const flash::RowRanges rr(p, flash::TileShape<P>::kRows);
  // Heads are taken in slices, so that the packed K panels and V rows stay within a quarter of
  // their all-heads size or 16 MiB, whichever is larger (window 256 at N = 16384, H = 8: two heads
  // at a time, 16 MiB packed instead of 64). Each output row of a head is one task's, so the
  // slicing changes no bit of the result.
  const int64_t per_head =
      flash::round_up_panel<P>(ns) * dk + (flash::rows_operand_copies<P>(heads, dv) ? ns * dvp : 0);
  const int64_t slice = flash::heads_per_slice(per_head, heads);
  flash::PackBuffer kbuf, vbuf;
  for (int64_t h0 = 0; h0 < heads; h0 += slice) {
    const flash::HeadRange hr{h0, std::min(h0 + slice, heads)};
    const flash::HeadOperand kt = flash::pack_panels<P>(ns, heads, dk, a.score.k, a.score.scale, kbuf, hr);
    const flash::HeadOperand vr = flash::rows_operand<P>(ns, heads, dv, a.v, vbuf, hr);
    run_slice<P, kSoftmax, kExtras>(p, a, out, rr, hr, kt, vr);
  }
}

}  // namespace

bool simd_path_available(SimdPath path) {
  switch (path) {
    case SimdPath::automatic:
    case SimdPath::portable:
      return true;
    case SimdPath::avx2:
#if defined(__AVX2__) && defined(__FMA__)
      return true;
#else
      return false;
#endif
    case SimdPath::avx512:
#if defined(__AVX512F__)
      return true;
#else
      return false;
#endif
  }
  return false;
}

const char* automatic_simd_path_name() { return flash::Best::kName; }

double masked_tiled_min_fill(int64_t heads) {
  // Forward + backward on uniform random graphs, d = 64, 2 threads (2-core Zen 3; bench/RESULTS.md):
  // the two kernels break even at about 7% full with one head, 10% with 2, 14% with 4 and 15-20%
  // with 8, as the per-edge kernels share each edge's gathers over more heads.
  return 0.07 * std::sqrt(static_cast<double>(std::max<int64_t>(heads, 1)));
}

bool tiled_applies(const Pattern& p, const KernelArgs& a, bool want_alpha) {
  if (a.score.kind != EdgeScore::dot || a.score.ea || want_alpha || a.masked_non_finite || num_dst(p) == 0)
    return false;
  return visit_pattern(p, [&](const auto& pattern) {
    using P = std::decay_t<decltype(pattern)>;
    const bool long_rows =
        static_cast<double>(pattern.num_edges()) >= kTiledMinMeanRow * static_cast<double>(pattern.num_dst());
    if constexpr (ContiguousRowPattern<P>) {
      return has_contiguous_rows(pattern) && long_rows;
    } else if constexpr (std::is_same_v<P, CsrPattern>) {
      if (!long_rows) return false;
      const DegreeStats& d = pattern.graph().degree_stats();  // cached on the graph
      return d.duplicate_edges == 0 && static_cast<double>(pattern.num_edges()) >=
                                           masked_tiled_min_fill(a.heads) * static_cast<double>(d.row_extent);
    } else {
      return false;
    }
  });
}

void tiled_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out, SimdPath path) {
  flash::with_policy(path, [&](auto policy) {
    using Pol = decltype(policy);
    visit_pattern(p, [&](const auto& pattern) {
      using P = std::decay_t<decltype(pattern)>;
      if constexpr (flash::TiledPattern<P>) {
        const bool extras = a.bias != nullptr || a.dropout > 0.f;
        if (a.norm == Normalization::softmax) {
          if (extras)
            run_tiles<Pol, true, true>(pattern, a, out);
          else
            run_tiles<Pol, true, false>(pattern, a, out);
        } else {
          if (extras)
            run_tiles<Pol, false, true>(pattern, a, out);
          else
            run_tiles<Pol, false, false>(pattern, a, out);
        }
      }
    });
  });
}

}  // namespace edgeattn::kernels
