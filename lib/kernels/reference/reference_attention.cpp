// Reference (serial) graph attention, forward and backward: the test oracle every fast path is
// checked against. Written for clarity, not speed: one destination row and one head at a time,
// per-edge values kept in small vectors, all arithmetic in double, gradients accumulated serially
// by scattering over edges (no transpose needed).
//
// Forward, for each destination row i and head h, over the row's in-edges e = (j -> i) in CSR order:
//   1. score     s_e = score(i, j, h) (+ bias[e, h] if given), one of the canonical forms
//                  dot           s = scale * <q_i, k_j [+ ve_e]>         (Vaswani et al. 2017;
//                                                                         bilinear, Luong et al. 2015,
//                                                                         is projected to this form)
//                  additive      s = leaky(sd_i + ss_j [+ se_e])         (GAT, Velickovic et al. 2018;
//                                                                         se: per-edge term, PyG's
//                                                                         edge_dim)
//                  vector_leaky  s = sum_c a_c leaky(q_ic + k_jc [+ ve_ec])   (GATv2, Brody et al.
//                                                                         2022; ve: per-edge term)
//                  vector_tanh   s = sum_c a_c tanh(q_ic + k_jc [+ ve_ec])    (Bahdanau et al. 2015,
//                                                                         with q = W q, k = U k projected)
//                where ve_ec = sum_f we_hcf ea_ef (edge attributes ea projected by we: GATv2's lin_edge)
//                where leaky(x) = x > 0 ? x : slope * x.
//   2. normalise softmax  alpha_e = exp(s_e - m) / sum_f exp(s_f - m),  m = max_f s_f (two passes);
//                         lse_i = m + log(sum_f exp(s_f - m))   (-inf for a row without edges)
//                relu     alpha_e = max(s_e, 0)
//   3. dropout   alpha~_e = alpha_e * keep_e / (1 - p),  keep_e = dropout_keep(seed, i, j, h, p)
//   4. aggregate out_i = sum_e alpha~_e v_j                (0 for a row without edges; the dot
//                score with edge attributes aggregates v_j + ve_e: TransformerConv's edge_dim)
//   `alpha` (if requested) holds alpha_e, before dropout.
//
// Backward, recomputing steps 1-3 per row (the saved lse is not needed), with g = dout_i:
//   dv_j     += alpha~_e g
//   dalpha_e  = <g, v_j> * keep_e / (1 - p)
//   ds_e      = softmax: alpha_e (dalpha_e - sum_f alpha_f dalpha_f)
//               relu:    dalpha_e * [s_e > 0]          (derivative 0 at the kink s = 0)
//   dbias_e   = ds_e
//   dot           dq_i += ds_e scale (k_j [+ ve_e]),  dk_j += ds_e scale q_i; with edge attributes
//                 ve_e gets g = ds_e scale q_i + alpha~_e dout_i: dea += g we, dwe += g ea_e
//   additive      dsd_i += ds_e leaky'(z),  dss_j += ds_e leaky'(z),  dse_e = ds_e leaky'(z),
//                 z = sd_i + ss_j [+ se_e]
//   vector_leaky  da_c += ds_e leaky(z_c),  dq_ic += ds_e a_c leaky'(z_c),  dk_jc likewise
//   vector_tanh   da_c += ds_e tanh(z_c),   dq_ic += ds_e a_c (1 - tanh^2(z_c)),  dk_jc likewise
//                 with edge attributes: dea_ef += dz_c we_hcf,  dwe_hcf += dz_c ea_ef  (dz_c: dq_ic's term)
//   where leaky'(x) = x > 0 ? 1 : slope (we take the negative side's slope at the kink x = 0).
// Gradient buffers are zero-filled by the caller; null ones are skipped. We accumulate into double
// scratch arrays and add them to the caller's buffers at the end.
//
// References:
//   Vaswani et al. 2017, "Attention Is All You Need".
//   Velickovic et al. 2018, "Graph Attention Networks".
//   Brody, Alon, Yahav 2022, "How Attentive are Graph Attention Networks?".
//   Luong, Pham, Manning 2015, "Effective Approaches to Attention-based Neural Machine Translation".
//   Bahdanau, Cho, Bengio 2015, "Neural Machine Translation by Jointly Learning to Align and Translate".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "edgeattn/core/rng.hpp"
#include "kernels/attention_backend.hpp"

namespace edgeattn::kernels {
namespace {

double leaky(double x, double slope) { return x > 0 ? x : slope * x; }
double leaky_derivative(double x, double slope) { return x > 0 ? 1.0 : slope; }

/// Flat offsets into the row-major operands.
struct Layout {
  int64_t heads, dk, dv;
  int64_t qk(int64_t node, int64_t h) const { return (node * heads + h) * dk; }   // q, k: [N, H, dk]
  int64_t val(int64_t node, int64_t h) const { return (node * heads + h) * dv; }  // v, out: [N, H, dv]
  int64_t scalar(int64_t node, int64_t h) const { return node * heads + h; }      // sd, ss, lse: [N, H]
  int64_t att(int64_t h) const { return h * dk; }                                 // a: [H, dk]
};

/// The additive score's activation input z = sd_i + ss_j (+ se_e) of edge e = (j -> i), head h.
double additive_input(const ScoreArgs& s, const Layout& L, int64_t i, int64_t j, int64_t e, int64_t h) {
  double z = double(s.sd[L.scalar(i, h)]) + double(s.ss[L.scalar(j, h)]);
  if (s.se) z += double(s.se[e * L.heads + h]);
  return z;
}

/// Feature c of head h of edge e's projected attributes, sum_f we_hcf ea_ef (0 without them).
double edge_vector(const ScoreArgs& s, int64_t e, int64_t h, int64_t c) {
  double t = 0;
  if (s.ea)
    for (int64_t f = 0; f < s.fe; ++f)
      t += double(s.we[(h * s.dk + c) * s.fe + f]) * double(s.ea[e * s.fe + f]);
  return t;
}

/// The dot score's value of edge e = (j -> i): v_j plus, with edge attributes, their projection.
double edge_value(const KernelArgs& a, const Layout& L, int64_t j, int64_t e, int64_t h, int64_t d) {
  double v = double(a.v[L.val(j, h) + d]);
  if (a.score.kind == EdgeScore::dot) v += edge_vector(a.score, e, h, d);
  return v;
}

/// The vector scores' activation input z_c = q_ic + k_jc (+ sum_f we_hcf ea_ef) of edge e, head h.
double vector_input(const ScoreArgs& s, const Layout& L, int64_t i, int64_t j, int64_t e, int64_t h,
                    int64_t c) {
  return double(s.q[L.qk(i, h) + c]) + double(s.k[L.qk(j, h) + c]) + edge_vector(s, e, h, c);
}

/// The score s_e of edge e = (j -> i) in head h, before the optional bias.
double edge_score(const ScoreArgs& s, const Layout& L, int64_t i, int64_t j, int64_t e, int64_t h) {
  switch (s.kind) {
    case EdgeScore::dot: {
      double dot = 0;
      for (int64_t c = 0; c < s.dk; ++c)
        dot += double(s.q[L.qk(i, h) + c]) * (double(s.k[L.qk(j, h) + c]) + edge_vector(s, e, h, c));
      return double(s.scale) * dot;
    }
    case EdgeScore::additive:
      return leaky(additive_input(s, L, i, j, e, h), s.slope);
    case EdgeScore::vector_leaky:
    case EdgeScore::vector_tanh: {
      double sum = 0;
      for (int64_t c = 0; c < s.dk; ++c) {
        const double z = vector_input(s, L, i, j, e, h, c);
        const double act = s.kind == EdgeScore::vector_leaky ? leaky(z, s.slope) : std::tanh(z);
        sum += double(s.att[L.att(h) + c]) * act;
      }
      return sum;
    }
  }
  return 0;  // unreachable: every EdgeScore is handled above
}

/// Everything the forward computes for one (row, head), per edge of the row.
struct RowHead {
  std::vector<double> score;                              // s_e, bias included
  std::vector<double> alpha;                              // normalised weight, before dropout
  std::vector<double> keep;                               // dropout factor: 0 or 1/(1-p) (1 without dropout)
  double lse = -std::numeric_limits<double>::infinity();  // softmax only
};

RowHead compute_row_head(const Graph& g, const KernelArgs& a, const Layout& L, int64_t i, int64_t h) {
  const int64_t begin = g.row_ptr()[size_t(i)], end = g.row_ptr()[size_t(i) + 1];
  const auto cols = g.col_idx();
  RowHead r;
  for (int64_t e = begin; e < end; ++e) {
    const int64_t j = cols[size_t(e)];
    double s = edge_score(a.score, L, i, j, e, h);
    if (a.bias) s += double(a.bias[e * a.heads + h]);
    r.score.push_back(s);
    const bool kept = dropout_keep(a.seed, i, j, static_cast<int32_t>(h), a.dropout);
    r.keep.push_back(!kept ? 0.0 : a.dropout > 0 ? 1.0 / (1.0 - double(a.dropout)) : 1.0);
  }
  if (r.score.empty()) return r;

  if (a.norm == Normalization::softmax) {
    const double m = *std::max_element(r.score.begin(), r.score.end());
    double sum = 0;
    for (double s : r.score) sum += std::exp(s - m);
    for (double s : r.score) r.alpha.push_back(std::exp(s - m) / sum);
    r.lse = m + std::log(sum);
  } else {
    for (double s : r.score) r.alpha.push_back(std::max(s, 0.0));
  }
  return r;
}

/// A gradient accumulated in double, added to the caller's float buffer at the end (null: unused).
class Accumulator {
 public:
  Accumulator(float* target, int64_t size) : target_(target) {
    if (target_) sum_.assign(size_t(size), 0.0);
  }
  bool used() const { return target_ != nullptr; }
  void add(int64_t index, double value) {
    if (target_) sum_[size_t(index)] += value;
  }
  double sum(int64_t index) const { return sum_[size_t(index)]; }
  void flush() const {
    for (size_t n = 0; n < sum_.size(); ++n) target_[n] += static_cast<float>(sum_[n]);
  }

 private:
  float* target_;
  std::vector<double> sum_;
};

}  // namespace

void reference_forward(const Graph& g, const KernelArgs& a, const ForwardBuffers& out) {
  const Layout L{a.heads, a.score.dk, a.dv};
  const auto cols = g.col_idx();
  for (int64_t i = 0; i < g.num_dst(); ++i) {
    const int64_t begin = g.row_ptr()[size_t(i)];
    for (int64_t h = 0; h < a.heads; ++h) {
      const RowHead r = compute_row_head(g, a, L, i, h);
      std::vector<double> acc(size_t(a.dv), 0.0);
      for (size_t n = 0; n < r.score.size(); ++n) {
        const int64_t e = begin + int64_t(n), j = cols[size_t(e)];
        for (int64_t d = 0; d < a.dv; ++d)
          acc[size_t(d)] += r.alpha[n] * r.keep[n] * edge_value(a, L, j, e, h, d);
        if (out.alpha) out.alpha[e * a.heads + h] = static_cast<float>(r.alpha[n]);
      }
      for (int64_t d = 0; d < a.dv; ++d) out.out[L.val(i, h) + d] = static_cast<float>(acc[size_t(d)]);
      if (out.lse && a.norm == Normalization::softmax) out.lse[L.scalar(i, h)] = static_cast<float>(r.lse);
    }
  }
}

void reference_backward(const Graph& g, const KernelArgs& a, const BackwardInputs& in,
                        const BackwardBuffers& grads) {
  const ScoreArgs& sc = a.score;
  const Layout L{a.heads, sc.dk, a.dv};
  const int64_t H = a.heads;
  Accumulator dq(grads.dq, g.num_dst() * H * sc.dk), dk(grads.dk, g.num_src() * H * sc.dk);
  Accumulator dv(grads.dv, g.num_src() * H * a.dv);
  Accumulator dsd(grads.dsd, g.num_dst() * H), dss(grads.dss, g.num_src() * H);
  Accumulator datt(grads.datt, H * sc.dk), dbias(grads.dbias, g.num_edges() * H);
  Accumulator dse(grads.dse, g.num_edges() * H);
  Accumulator dea(grads.dea, g.num_edges() * sc.fe), dwe(grads.dwe, H * sc.dk * sc.fe);

  const auto cols = g.col_idx();
  for (int64_t i = 0; i < g.num_dst(); ++i) {
    const int64_t begin = g.row_ptr()[size_t(i)];
    for (int64_t h = 0; h < H; ++h) {
      const RowHead r = compute_row_head(g, a, L, i, h);
      const size_t deg = r.score.size();
      const float* gout = in.dout + L.val(i, h);  // dout_i^h: [dv]

      // dv_j += alpha~ dout_i;  dalpha_e = <dout_i, v_j> * keep_e
      std::vector<double> dalpha(deg);
      for (size_t n = 0; n < deg; ++n) {
        const int64_t j = cols[size_t(begin) + n];
        double dot = 0;
        for (int64_t d = 0; d < a.dv; ++d) {
          dot += double(gout[d]) * edge_value(a, L, j, int64_t(begin) + int64_t(n), h, d);
          dv.add(L.val(j, h) + d, r.alpha[n] * r.keep[n] * double(gout[d]));
        }
        dalpha[n] = dot * r.keep[n];
      }

      // Through the normalisation: ds_e = d loss / d s_e.
      std::vector<double> ds(deg);
      if (a.norm == Normalization::softmax) {
        double weighted = 0;  // sum_f alpha_f dalpha_f
        for (size_t n = 0; n < deg; ++n) weighted += r.alpha[n] * dalpha[n];
        for (size_t n = 0; n < deg; ++n) ds[n] = r.alpha[n] * (dalpha[n] - weighted);
      } else {
        for (size_t n = 0; n < deg; ++n) ds[n] = r.score[n] > 0 ? dalpha[n] : 0.0;
      }

      // Through the score, scattering into the operands of each edge.
      for (size_t n = 0; n < deg; ++n) {
        const int64_t e = begin + int64_t(n), j = cols[size_t(e)];
        dbias.add(e * H + h, ds[n]);
        switch (sc.kind) {
          case EdgeScore::dot:
            for (int64_t c = 0; c < sc.dk; ++c) {
              dq.add(L.qk(i, h) + c,
                     ds[n] * sc.scale * (double(sc.k[L.qk(j, h) + c]) + edge_vector(sc, e, h, c)));
              dk.add(L.qk(j, h) + c, ds[n] * sc.scale * double(sc.q[L.qk(i, h) + c]));
              if (sc.ea) {  // ve_e enters the key (ds scale q_i) and the value (alpha~ dout_i)
                const double g = ds[n] * sc.scale * double(sc.q[L.qk(i, h) + c]) +
                                 r.alpha[n] * r.keep[n] * double(gout[c]);
                for (int64_t f = 0; f < sc.fe; ++f) {
                  dea.add(e * sc.fe + f, g * double(sc.we[(h * sc.dk + c) * sc.fe + f]));
                  dwe.add((h * sc.dk + c) * sc.fe + f, g * double(sc.ea[e * sc.fe + f]));
                }
              }
            }
            break;
          case EdgeScore::additive: {
            const double z = additive_input(sc, L, i, j, e, h);
            const double dz = ds[n] * leaky_derivative(z, sc.slope);
            dsd.add(L.scalar(i, h), dz);
            dss.add(L.scalar(j, h), dz);
            dse.add(e * H + h, dz);
            break;
          }
          case EdgeScore::vector_leaky:
          case EdgeScore::vector_tanh:
            for (int64_t c = 0; c < sc.dk; ++c) {
              const double z = vector_input(sc, L, i, j, e, h, c);
              const bool is_leaky = sc.kind == EdgeScore::vector_leaky;
              const double act = is_leaky ? leaky(z, sc.slope) : std::tanh(z);
              const double act_derivative = is_leaky ? leaky_derivative(z, sc.slope) : 1.0 - act * act;
              const double dz = ds[n] * double(sc.att[L.att(h) + c]) * act_derivative;
              datt.add(L.att(h) + c, ds[n] * act);
              dq.add(L.qk(i, h) + c, dz);
              dk.add(L.qk(j, h) + c, dz);
              if (sc.ea)
                for (int64_t f = 0; f < sc.fe; ++f) {
                  dea.add(e * sc.fe + f, dz * double(sc.we[(h * sc.dk + c) * sc.fe + f]));
                  dwe.add((h * sc.dk + c) * sc.fe + f, dz * double(sc.ea[e * sc.fe + f]));
                }
            }
            break;
        }
      }
    }
  }
  // Additive scores taken from v (sd_i = <a_dst, v_i>, ss_j = <a_src, v_j>): the node terms'
  // gradients flow on into v and the attention vectors.
  Accumulator da_src(grads.datt_src, H * a.dv), da_dst(grads.datt_dst, H * a.dv);
  if (grads.fold_att_src) {
    for (int64_t j = 0; j < g.num_src(); ++j)
      for (int64_t h = 0; h < H; ++h) {
        const double gs = dss.sum(L.scalar(j, h));
        const double gd = j < g.num_dst() ? dsd.sum(L.scalar(j, h)) : 0.0;
        for (int64_t d = 0; d < a.dv; ++d) {
          const int64_t hd = h * a.dv + d;
          const double vj = a.v[L.val(j, h) + d];
          dv.add(L.val(j, h) + d, gs * grads.fold_att_src[hd] + gd * grads.fold_att_dst[hd]);
          da_src.add(hd, gs * vj);
          da_dst.add(hd, gd * vj);
        }
      }
  }
  for (const Accumulator* acc :
       {&dq, &dk, &dv, &dsd, &dss, &datt, &dbias, &dse, &dea, &dwe, &da_src, &da_dst})
    if (acc->used()) acc->flush();
}

}  // namespace edgeattn::kernels
