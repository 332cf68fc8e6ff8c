// Internal: the tiled backward's schedule (tiled_attention.hpp has the algorithm and its
// references), included only by the files under instantiations/ that compile it for one SIMD
// policy each (tiled_backward_<policy>.cpp): the class is instantiated for every tiled pattern,
// both normalisations and with or without extras, which for three policies was one 3-minute
// compile; tiled_backward.cpp dispatches to them.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <atomic>
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

namespace edgeattn::kernels::detail {

/// kSoftmax: softmax weights from the saved lse, else relu; kExtras: bias and/or dropout.
template <class Pol, bool kSoftmax, bool kExtras, class Pat>
class TiledBackward {
  using Shape = flash::TileShape<Pol>;
  static constexpr int64_t NR = flash::kPanel<Pol>, MR = Pol::kRows;
  static constexpr int64_t BR = Shape::kRows, BC = Shape::kCols;
  static constexpr int64_t CT = Shape::kColumnTile, CR = Shape::kColumnPassRows;

 public:
  TiledBackward(const Pat& p, const KernelArgs& a, const BackwardInputs& in, const BackwardBuffers& g)
      : a_(a),
        in_(in),
        g_(g),
        heads_(a.heads),
        dk_(a.score.dk),
        dv_(a.dv),
        nd_(p.num_dst()),
        ns_(p.num_src()),
        dkp_(flash::round_up_panel<Pol>(a.score.dk)),
        dvp_(flash::round_up_panel<Pol>(a.dv)),
        rows_(p, BR),
        column_rows_(p, CR) {
    keep_scale_ = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
    if (kSoftmax) row_sum_.assign(static_cast<size_t>(nd_ * heads_), 0.f);
  }

  void run() {
    // With dK or dV wanted, the column pass; it computes dQ and d bias too (into per-group
    // partials of dQ) unless the partials' memory budget leaves too few groups to spread over
    // threads, and then the row pass computes them. Softmax always needs the row pass for D.
    // Heads are taken in slices, so that the packed operands (five copies of an [N, d] per head)
    // stay within a quarter of their all-heads size or 16 MiB, whichever is larger.
    const bool column_pass = g_.dk || g_.dv;
    const int64_t per_head = flash::round_up_panel<Pol>(ns_) * (dk_ + dv_) + (g_.dq ? ns_ * dkp_ : 0) +
                             (g_.dk ? nd_ * dkp_ : 0) + (g_.dv ? nd_ * dvp_ : 0);
    const int64_t slice = flash::heads_per_slice(per_head, heads_);
    if (column_pass) fused_ = plan_groups(g_.dq != nullptr, slice);
    const bool row_pass = kSoftmax || (!fused_ && (g_.dq || g_.dbias));
    for (int64_t h0 = 0; h0 < heads_; h0 += slice) {
      hr_ = {h0, std::min(h0 + slice, heads_)};
      const int64_t hn = hr_.size();
      kt_ = flash::pack_panels<Pol>(ns_, heads_, dk_, a_.score.k, a_.score.scale, kt_buf_, hr_);
      vt_ = flash::pack_panels<Pol>(ns_, heads_, dv_, a_.v, 1.f, vt_buf_, hr_);
      if (g_.dq) kr_ = flash::rows_operand<Pol>(ns_, heads_, dk_, a_.score.k, kr_buf_, hr_);
      if (g_.dk) qr_ = flash::rows_operand<Pol>(nd_, heads_, dk_, a_.score.q, qr_buf_, hr_);
      if (g_.dv) dor_ = flash::rows_operand<Pol>(nd_, heads_, dv_, in_.dout, dor_buf_, hr_);
      if (row_pass)
        parallel_for(0, rows_.tiles() * hn, 1, [&](int64_t b, int64_t e) {
          RowScratch& s = row_scratch_.local();
          // Head-major, as the forward: a thread's consecutive tasks share one head's operands.
          for (int64_t t = b; t < e; ++t) row_task(h0 + t / rows_.tiles(), t % rows_.tiles(), s);
        });
      if (!column_pass) continue;
      const int64_t groups = static_cast<int64_t>(group_tiles_.size()) - 1;
      parallel_for(0, groups * hn, 1, [&](int64_t b, int64_t e) {
        ColumnScratch& s = column_scratch_.local();
        for (int64_t t = b; t < e; ++t) group_task(h0 + t / groups, t % groups, s);
      });
      if (fused_ && g_.dq) reduce_dq();
    }
  }

 private:
  // Scratch of one thread, kept across its tasks: one per task was 24 allocations of ~240 KiB a
  // backward at H = 8, N = 1024, zero-filled into fresh pages (three quarters of the page faults
  // left once the packed operands were recycled). Every element is written before it is read.
  struct RowScratch {
    explicit RowScratch(int64_t dkp) : dq(static_cast<size_t>(BR * dkp)), cursor(static_cast<size_t>(BR)) {}
    std::vector<float> prob = std::vector<float>(static_cast<size_t>(MR * BC));   // P of a strip
    std::vector<float> dprob = std::vector<float>(static_cast<size_t>(MR * BC));  // dP, then dS
    std::vector<float> dq;                                                        // [BR, dkp]
    std::vector<int64_t> cursor;  // masked rows: each row's next edge (RowRanges::edges)
  };
  struct ColumnScratch {
    ColumnScratch(int64_t dkp, int64_t dvp)
        : dk(static_cast<size_t>(CT * dkp)), dv(static_cast<size_t>(CT * dvp)) {}
    std::vector<float> prob = std::vector<float>(static_cast<size_t>(CR * CT));   // P~ = P o mask
    std::vector<float> dprob = std::vector<float>(static_cast<size_t>(CR * CT));  // dS
    std::vector<float> dk, dv;                                                    // [CT, dkp], [CT, dvp]
  };

  float keep(int64_t i, int64_t j, int64_t h) const {
    return dropout_keep(a_.seed, i, j, static_cast<int32_t>(h), a_.dropout) ? keep_scale_ : 0.f;
  }

  // For the rows [i0, i0 + mr) of head h and the source panels [pa, pa + w): prob <- P (0 outside
  // the rows' ranges within [c0, c1)), dprob <- dS, both with row stride ld; dropout applied to dP
  // and, when `keep_prob`, to P (P~, for dV). Also writes d bias when `write_dbias`. `cursor`
  // (null, or one per row from i0, for calls in ascending blocks): RowRanges::edges.
  void strip(int64_t h, const flash::RowRanges& rr, int64_t i0, int64_t mr, int64_t c0, int64_t c1,
             int64_t pa, int64_t w, float* prob, float* dprob, int64_t ld, bool keep_prob, bool write_dbias,
             int64_t* cursor = nullptr) const {
    const int64_t ldq = heads_ * dk_, ldo = heads_ * dv_;
    flash::gemm_tile<Pol, false>(mr, w, dk_, a_.score.q + i0 * ldq + h * dk_, ldq, 1, kt_.head(h) + pa * dk_,
                                 NR, NR * dk_, prob, ld);
    flash::gemm_tile<Pol, false>(mr, w, dv_, in_.dout + i0 * ldo + h * dv_, ldo, 1, vt_.head(h) + pa * dv_,
                                 NR, NR * dv_, dprob, ld);
    for (int64_t r = 0; r < mr; ++r) {
      const int64_t i = i0 + r;
      float* s = prob + r * ld;
      float* ds = dprob + r * ld;
      const auto [b, e] = rr.clip(i, c0, c1);
      const auto [k0, k1] = rr.edges(i, b, e, cursor ? cursor + r : nullptr);
      if (k0 >= k1) {  // no edge of row i in [c0, c1)
        std::fill(s, s + w, 0.f);
        std::fill(ds, ds + w, 0.f);
        continue;
      }
      std::fill(s, s + (b - pa), -INFINITY);
      std::fill(s + (e - pa), s + w, -INFINITY);
      rr.mask(s - pa, b, e, k0, k1);
      if constexpr (kExtras) {
        if (a_.bias)
          rr.for_each_edge(k0, k1, b, [&](int64_t j, int64_t k) { s[j - pa] += a_.bias[k * heads_ + h]; });
        if (a_.dropout > 0.f)
          rr.for_each_edge(k0, k1, b, [&](int64_t j, int64_t) { ds[j - pa] *= keep(i, j, h); });
      }
      if constexpr (kSoftmax) {
        flash::exp_shifted_row<Pol>(s, w, in_.lse[i * heads_ + h]);
        flash::softmax_grad_row<Pol>(s, ds, w, row_sum_[static_cast<size_t>(i * heads_ + h)]);
      } else {
        flash::relu_row<Pol>(s, w);
        flash::relu_grad_row<Pol>(s, ds, w);
      }
      if constexpr (kExtras) {
        if (write_dbias && g_.dbias)
          rr.for_each_edge(k0, k1, b, [&](int64_t j, int64_t k) { g_.dbias[k * heads_ + h] = ds[j - pa]; });
        if (keep_prob && a_.dropout > 0.f)
          rr.for_each_edge(k0, k1, b, [&](int64_t j, int64_t) { s[j - pa] *= keep(i, j, h); });
      }
    }
  }

  // D_i = sum_j P_ij dP_ij (dropout applied to dP) over row i's sources, for rows without the
  // forward output.
  void row_sums_from_weights(int64_t h, int64_t r0, int64_t rows, int64_t lo, int64_t hi, RowScratch& s) {
    const int64_t ldq = heads_ * dk_, ldo = heads_ * dv_;
    flash::for_each_strip<MR, BC, NR>(rows_, r0, rows, lo, hi, [&](const flash::Strip& st) {
      const auto [i0, mr, c0, c1, u0, u1, pa, w] = st;
      flash::gemm_tile<Pol, false>(mr, w, dk_, a_.score.q + i0 * ldq + h * dk_, ldq, 1,
                                   kt_.head(h) + pa * dk_, NR, NR * dk_, s.prob.data(), BC);
      flash::gemm_tile<Pol, false>(mr, w, dv_, in_.dout + i0 * ldo + h * dv_, ldo, 1, vt_.head(h) + pa * dv_,
                                   NR, NR * dv_, s.dprob.data(), BC);
      for (int64_t r = 0; r < mr; ++r) {
        const int64_t i = i0 + r;
        const auto [b, e] = rows_.clip(i, c0, c1);
        const float* sr = s.prob.data() + r * BC - pa;
        const float* dp = s.dprob.data() + r * BC - pa;
        const float lse = in_.lse[i * heads_ + h];
        float d = 0.f;
        const auto [k0, k1] = rows_.edges(i, b, e);
        rows_.for_each_edge(k0, k1, b, [&](int64_t j, int64_t k) {
          const float pj = fast_exp(sr[j] + (a_.bias ? a_.bias[k * heads_ + h] : 0.f) - lse);
          d += pj * dp[j] * (a_.dropout > 0.f ? keep(i, j, h) : 1.f);
        });
        row_sum_[static_cast<size_t>(i * heads_ + h)] += d;
      }
    });
  }

  void row_task(int64_t h, int64_t tile, RowScratch& s) {
    const int64_t r0 = tile * BR, rows = std::min(BR, nd_ - r0);
    const int64_t lo = rows_.hull_lo[static_cast<size_t>(tile)],
                  hi = rows_.hull_hi[static_cast<size_t>(tile)];
    if constexpr (kSoftmax) {  // D_i = <dO_i, O_i>, or sum_j P_ij dP_ij when O is not available
      for (int64_t i = r0; i < r0 + rows; ++i)
        row_sum_[static_cast<size_t>(i * heads_ + h)] =
            in_.out ? dot(in_.dout + (i * heads_ + h) * dv_, in_.out + (i * heads_ + h) * dv_, dv_) : 0.f;
      if (!in_.out && lo < hi) row_sums_from_weights(h, r0, rows, lo, hi, s);
    }
    if (fused_ || (!g_.dq && !g_.dbias)) return;
    std::fill(s.dq.begin(), s.dq.end(), 0.f);
    std::fill(s.cursor.begin(), s.cursor.end(), 0);
    flash::for_each_strip<MR, BC, NR>(rows_, r0, rows, lo, hi, [&](const flash::Strip& st) {
      strip(h, rows_, st.i, st.mr, st.c0, st.c1, st.pa, st.w, s.prob.data(), s.dprob.data(), BC, false, true,
            s.cursor.data() + (st.i - r0));
      if (g_.dq)  // dQ_strip += dS K[u0, u1)
        flash::gemm_tile<Pol, true>(st.mr, dkp_, st.u1 - st.u0, s.dprob.data() + (st.u0 - st.pa), BC, 1,
                                    kr_.head(h) + st.u0 * kr_.ld, kr_.ld, NR,
                                    s.dq.data() + (st.i - r0) * dkp_, dkp_);
    });
    if (g_.dq)
      for (int64_t r = 0; r < rows; ++r) {
        float* dq = g_.dq + ((r0 + r) * heads_ + h) * dk_;
        const float* acc = s.dq.data() + r * dkp_;
        for (int64_t x = 0; x < dk_; ++x) dq[x] = a_.score.scale * acc[x];
      }
  }

  // Column tiles [tiles[g], tiles[g + 1]) of head h, in order, summing their dQ terms into the
  // group's partial: rows [row_lo[g], row_hi[g]), dkp wide.
  void group_task(int64_t h, int64_t g, ColumnScratch& s) {
    const size_t gi = static_cast<size_t>(g);
    float* part = nullptr;
    if (fused_ && g_.dq) {
      part = dq_part_.data() + (h - hr_.begin) * part_head_ + part_offset_[gi];
      std::fill_n(part, (group_row_hi_[gi] - group_row_lo_[gi]) * dkp_, 0.f);
    }
    for (int64_t tile = group_tiles_[gi]; tile < group_tiles_[gi + 1]; ++tile)
      column_task(h, tile, s, part, group_row_lo_[gi]);
  }

  // part: the dQ partial of rows [part_lo, ...) (null without dQ).
  void column_task(int64_t h, int64_t tile, ColumnScratch& s, float* part, int64_t part_lo) {
    const int64_t c0 = tile * CT, c1 = std::min(c0 + CT, ns_), cols = c1 - c0;
    std::fill(s.dk.begin(), s.dk.end(), 0.f);
    std::fill(s.dv.begin(), s.dv.end(), 0.f);
    const flash::RowRanges& rr = column_rows_;
    for (int64_t b = 0; b < rr.tiles(); ++b) {
      if (rr.hull_lo[static_cast<size_t>(b)] >= c1 || rr.hull_hi[static_cast<size_t>(b)] <= c0) continue;
      const int64_t r0 = b * CR, rows = std::min(CR, nd_ - r0);
      const auto [t0, t1] = rr.span(r0, r0 + rows, c0, c1);
      if (t0 >= t1) continue;
      // The tile's columns [ta, ta + wt): every strip fills them (zeros where its rows miss).
      const int64_t ta = flash::align_down(t0, NR), wt = flash::align_up(t1, NR) - ta;
      for (int64_t i0 = 0; i0 < rows; i0 += MR) {
        const int64_t mr = std::min(MR, rows - i0);
        float* prob = s.prob.data() + i0 * CT;
        float* dprob = s.dprob.data() + i0 * CT;
        const auto [u0, u1] = rr.span(r0 + i0, r0 + i0 + mr, c0, c1);
        if (u0 >= u1) {
          for (int64_t r = 0; r < mr; ++r) {
            std::fill_n(prob + r * CT, wt, 0.f);
            std::fill_n(dprob + r * CT, wt, 0.f);
          }
          continue;
        }
        const int64_t pa = flash::align_down(u0, NR), pb = flash::align_up(u1, NR);
        strip(h, rr, r0 + i0, mr, c0, c1, pa, pb - pa, prob + (pa - ta), dprob + (pa - ta), CT, true, fused_);
        for (int64_t r = 0; r < mr; ++r) {
          std::fill(prob + r * CT, prob + r * CT + (pa - ta), 0.f);
          std::fill(prob + r * CT + (pb - ta), prob + r * CT + wt, 0.f);
          std::fill(dprob + r * CT, dprob + r * CT + (pa - ta), 0.f);
          std::fill(dprob + r * CT + (pb - ta), dprob + r * CT + wt, 0.f);
        }
      }
      // The tile's columns relative to c0: acc rows [ta - c0, ta - c0 + wt), clipped to cols.
      const int64_t m = std::min(wt, c1 - ta);
      if (g_.dv)  // dV[ta, ta + m) += P~^T dO_rows
        flash::gemm_tile<Pol, true>(m, dvp_, rows, s.prob.data(), 1, CT, dor_.head(h) + r0 * dor_.ld, dor_.ld,
                                    NR, s.dv.data() + (ta - c0) * dvp_, dvp_);
      if (g_.dk)  // dK[ta, ta + m) += dS^T Q_rows
        flash::gemm_tile<Pol, true>(m, dkp_, rows, s.dprob.data(), 1, CT, qr_.head(h) + r0 * qr_.ld, qr_.ld,
                                    NR, s.dk.data() + (ta - c0) * dkp_, dkp_);
      if (part)  // dQ_rows += dS K[ta, ta + m), into the group's partial
        flash::gemm_tile<Pol, true>(rows, dkp_, m, s.dprob.data(), CT, 1, kr_.head(h) + ta * kr_.ld, kr_.ld,
                                    NR, part + (r0 - part_lo) * dkp_, dkp_);
    }
    for (int64_t x = 0; x < cols; ++x) {
      const int64_t j = c0 + x;
      if (g_.dv) std::copy_n(s.dv.data() + x * dvp_, dv_, g_.dv + (j * heads_ + h) * dv_);
      if (g_.dk) {
        float* dk = g_.dk + (j * heads_ + h) * dk_;
        const float* acc = s.dk.data() + x * dkp_;
        for (int64_t y = 0; y < dk_; ++y) dk[y] = a_.score.scale * acc[y];
      }
    }
  }

  // Groups of consecutive column tiles, one partial of dQ each (over the rows the group's columns
  // reach). A function of the pattern, heads and widths alone, so the sum over groups, in group
  // order, is the same for any thread count. About 32 / S groups (S: heads in a slice) keep every thread
  // busy; with dQ, fewer when the partials would take more than 64 MiB and 4x dQ. Returns false when that
  // leaves fewer than 8 tasks (S x groups) for more column tiles: dQ then takes the row pass,
  // and the groups are planned again without partials.
  bool plan_groups(bool with_dq, int64_t slice) {
    const int64_t col_tiles = (ns_ + CT - 1) / CT;
    const flash::RowRanges& rr = column_rows_;
    auto plan = [&](int64_t groups) {
      const int64_t per = (col_tiles + groups - 1) / std::max<int64_t>(groups, 1);
      group_tiles_.clear();
      group_row_lo_.clear();
      group_row_hi_.clear();
      part_offset_.clear();
      int64_t total = 0;
      for (int64_t t0 = 0; t0 < col_tiles; t0 += per) {
        const int64_t t1 = std::min(t0 + per, col_tiles), c0 = t0 * CT, c1 = std::min(t1 * CT, ns_);
        int64_t lo = nd_, hi = 0;
        for (int64_t b = 0; b < rr.tiles(); ++b)
          if (rr.hull_lo[static_cast<size_t>(b)] < c1 && rr.hull_hi[static_cast<size_t>(b)] > c0) {
            lo = std::min(lo, b * CR);
            hi = std::max(hi, std::min(b * CR + CR, nd_));
          }
        if (lo >= hi) lo = hi = 0;
        group_tiles_.push_back(t0);
        group_row_lo_.push_back(lo);
        group_row_hi_.push_back(hi);
        part_offset_.push_back(total);
        total += (hi - lo) * dkp_;
      }
      group_tiles_.push_back(col_tiles);
      return total;
    };
    const int64_t wanted = std::clamp<int64_t>((32 + slice - 1) / slice, 1, std::max<int64_t>(col_tiles, 1));
    int64_t groups = wanted, total = plan(groups);
    if (!with_dq) return true;
    const int64_t cap = flash::g_dq_partial_budget.load(std::memory_order_relaxed);
    const int64_t budget = cap > 0 ? cap : std::max<int64_t>(int64_t{16} << 20, 4 * nd_ * slice * dkp_);
    while (groups > 1 && total * slice > budget) total = plan(groups = (groups + 1) / 2);
    if (groups < wanted && groups * slice < 8) {
      plan(wanted);
      return false;
    }
    part_head_ = total;
    dq_part_.allocate(total * slice);
    return true;
  }

  // dQ_i = scale * (sum over groups, in order, of the partials covering row i); 0 for rows no group
  // reaches.
  void reduce_dq() {
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (nd_ + kBlock - 1) / kBlock, groups = static_cast<int64_t>(part_offset_.size());
    parallel_for(0, blocks * hr_.size(), 1, [&](int64_t b, int64_t e) {
      std::vector<float> acc(static_cast<size_t>(kBlock * dkp_));
      for (int64_t t = b; t < e; ++t) {
        const int64_t x = t / blocks, h = hr_.begin + x, r0 = (t % blocks) * kBlock,
                      r1 = std::min(r0 + kBlock, nd_);
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t g = 0; g < groups; ++g) {
          const size_t gi = static_cast<size_t>(g);
          const int64_t lo = std::max(r0, group_row_lo_[gi]), hi = std::min(r1, group_row_hi_[gi]);
          if (lo >= hi) continue;
          const float* part =
              dq_part_.data() + x * part_head_ + part_offset_[gi] + (lo - group_row_lo_[gi]) * dkp_;
          float* out = acc.data() + (lo - r0) * dkp_;
#pragma omp simd
          for (int64_t x = 0; x < (hi - lo) * dkp_; ++x) out[x] += part[x];
        }
        for (int64_t i = r0; i < r1; ++i) {
          float* dq = g_.dq + (i * heads_ + h) * dk_;
          const float* row = acc.data() + (i - r0) * dkp_;
          for (int64_t x = 0; x < dk_; ++x) dq[x] = a_.score.scale * row[x];
        }
      }
    });
  }

  const KernelArgs& a_;
  const BackwardInputs& in_;
  const BackwardBuffers& g_;
  int64_t heads_, dk_, dv_, nd_, ns_, dkp_, dvp_;
  float keep_scale_ = 1.f;
  flash::RowRanges rows_;         // tiles of BR rows: the row pass
  flash::RowRanges column_rows_;  // tiles of CR rows: the column pass
  std::vector<float> row_sum_;    // D [num_dst, H]
  tbb::enumerable_thread_specific<RowScratch> row_scratch_{[this] { return RowScratch(dkp_); }};
  tbb::enumerable_thread_specific<ColumnScratch> column_scratch_{
      [this] { return ColumnScratch(dkp_, dvp_); }};
  bool fused_ = false;   // the column pass computes dQ and d bias too
  flash::HeadRange hr_;  // the heads of the slice being computed
  // Column-tile groups: tiles [group_tiles_[g], group_tiles_[g + 1]), dQ partial rows
  // [group_row_lo_[g], group_row_hi_[g]) at part_offset_[g] within a head's part_head_ floats.
  std::vector<int64_t> group_tiles_, group_row_lo_, group_row_hi_, part_offset_;
  int64_t part_head_ = 0;
  flash::PackBuffer dq_part_;  // [slice, part_head_]
  flash::PackBuffer kt_buf_, vt_buf_, kr_buf_, qr_buf_, dor_buf_;
  flash::HeadOperand kt_, vt_, kr_, qr_, dor_;  // scale K^T and V^T panels; K, Q, dO rows
};

/// The backward on policy Pol: every tiled pattern, both normalisations, with or without extras.
template <class Pol>
void tiled_backward_with(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                         const BackwardBuffers& g) {
  visit_pattern(p, [&](const auto& pattern) {
    using P = std::decay_t<decltype(pattern)>;
    if constexpr (flash::TiledPattern<P>) {
      const bool extras = a.bias != nullptr || a.dropout > 0.f || g.dbias != nullptr;
      if (a.norm == Normalization::softmax) {
        if (extras)
          TiledBackward<Pol, true, true, P>(pattern, a, in, g).run();
        else
          TiledBackward<Pol, true, false, P>(pattern, a, in, g).run();
      } else {
        if (extras)
          TiledBackward<Pol, false, true, P>(pattern, a, in, g).run();
        else
          TiledBackward<Pol, false, false, P>(pattern, a, in, g).run();
      }
    }
  });
}

}  // namespace edgeattn::kernels::detail
