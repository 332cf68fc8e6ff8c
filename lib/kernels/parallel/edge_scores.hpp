// The four canonical edge-score forms as small structs shared by the fused forward and backward
// kernels. Each computes the scores of all heads of one edge e = (i <- j) at once, so loops over
// heads vectorise (e is read only by a score with a per-edge term: additive se [E, H], vector
// ea [E, fe] projected by we), and knows how a score
// gradient ds[h] flows to its destination-side operand (query or score_dst, width dst_width per head...
// flattened as [H * dst_width]) and its source-side operand.
//
//   form          s[h]                              dst operand     src operand    shared
//   DotScore      scale <q_ih, k_jh [+ we_h ea_e]>  q  [H*dk]       k  [H*dk]
//   AdditiveScore leaky(sd_ih + ss_jh [+ se_eh])    sd [H]          ss [H]
//   VectorScore   sum_c a_hc act(q_ihc + k_jhc       q  [H*C]        k  [H*C]       a [H*C]
//                   [+ we_hc . ea_e])
//
// Every per-edge method is always inlined: the kernels call them once or twice per edge inside
// large loop bodies, where GCC left scores and grad_dst out of line, and each call made the
// caller spill its live vector registers (all caller-saved) around it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_backend.hpp"
#include "kernels/head_scores.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {

/// The dot-product score. With edge attributes (ea, we: TransformerConv's edge_dim) each edge's
/// projection ve_e = we . ea_e [H*dk] is added to the key in the score and to the value in the
/// aggregation (then dv == dk), computed on the fly. kEdge: with edge attributes (a separate
/// instantiation, so the plain score compiles exactly as without them).
template <bool kEdge = false>
struct DotScore {
  const float* q;
  const float* k;
  int64_t heads, dk;
  float scale;
  const float* ea = nullptr;  // [E, fe] or null
  const float* we = nullptr;  // [H * dk, fe]
  int64_t fe = 0;

  [[gnu::always_inline]] int64_t width() const { return heads * dk; }
  [[gnu::always_inline]] void prefetch_src(int64_t j) const { prefetch_row(k + j * heads * dk, heads * dk); }
  [[gnu::always_inline]] void prefetch_dst(int64_t i) const { prefetch_row(q + i * heads * dk, heads * dk); }
  [[gnu::always_inline]] float edge_term(int64_t e, int64_t hd) const {
    return dot(we + hd * fe, ea + e * fe, fe);
  }
  /// ve_e [H * dk] (edge attributes only).
  [[gnu::always_inline]] void edge_values(int64_t e, float* __restrict ve) const {
    for (int64_t hd = 0; hd < heads * dk; ++hd) ve[hd] = edge_term(e, hd);
  }
  [[gnu::always_inline]] void scores(int64_t i, int64_t j, int64_t e, float* __restrict s) const {
    const float* qi = q + i * heads * dk;
    const float* kj = k + j * heads * dk;
    for (int64_t h = 0; h < heads; ++h) s[h] = scale * dot(qi + h * dk, kj + h * dk, dk);
    if constexpr (kEdge)
      for (int64_t h = 0; h < heads; ++h) {
        float t = 0.f;
        for (int64_t d = 0; d < dk; ++d) t += qi[h * dk + d] * edge_term(e, h * dk + d);
        s[h] += scale * t;
      }
  }
  // dq_i += scale * ds * (k_j [+ ve_e])
  [[gnu::always_inline]] void grad_dst(int64_t /*i*/, int64_t j, int64_t e, const float* __restrict ds,
                                       float* __restrict dst_acc, float* /*datt*/) const {
    const float* kj = k + j * heads * dk;
    for (int64_t h = 0; h < heads; ++h) {
      const float g = scale * ds[h];
      for (int64_t d = 0; d < dk; ++d) dst_acc[h * dk + d] += g * kj[h * dk + d];
    }
    if constexpr (kEdge)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < dk; ++d) dst_acc[h * dk + d] += scale * ds[h] * edge_term(e, h * dk + d);
  }
  // dk_j += scale * ds * q_i
  [[gnu::always_inline]] void grad_src(int64_t i, int64_t /*j*/, int64_t /*e*/, const float* __restrict ds,
                                       float* __restrict src_acc) const {
    const float* qi = q + i * heads * dk;
    for (int64_t h = 0; h < heads; ++h) {
      const float g = scale * ds[h];
      for (int64_t d = 0; d < dk; ++d) src_acc[h * dk + d] += g * qi[h * dk + d];
    }
  }
  // With edge attributes: ve_e gets g_hd = scale ds_h q_ihd (through the key) + wk_h dO_ihd
  // (through the value; wk = the kept weight alpha * keep); dea_e = sum_hd g_hd we_hd (written
  // whole, when dea_e is given), dwe_hd += g_hd ea_e.
  [[gnu::always_inline]] void grad_edge(int64_t i, int64_t e, const float* ds, const float* wk,
                                        const float* dout_i, float* dea_e, float* dwe) const {
    const float* qi = q + i * heads * dk;
    const float* a_e = ea + e * fe;
    if (dea_e) std::fill_n(dea_e, fe, 0.f);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t d = 0; d < dk; ++d) {
        const int64_t hd = h * dk + d;
        const float g = scale * ds[h] * qi[hd] + wk[h] * dout_i[hd];
        const float* w = we + hd * fe;
        if (dea_e)
          for (int64_t f = 0; f < fe; ++f) dea_e[f] += g * w[f];
        if (dwe)
          for (int64_t f = 0; f < fe; ++f) dwe[hd * fe + f] += g * a_e[f];
      }
  }
};

template <class S>
inline constexpr bool kIsDot = false;
template <bool kEdge>
inline constexpr bool kIsDot<DotScore<kEdge>> = true;

/// kH > 0 fixes the head count at compile time (the loops over heads become single vector ops);
/// 0 reads it from `heads`. `se`, when given, is a per-edge term [E, H] added inside the
/// activation (GAT with edge features: se_e = a_edge . W_edge x_e).
///
/// One head (kH == 1) with `ss_att` (ScoreArgs::ss_att): the edge's source term is computed from
/// the source's value row, ss_j = <ss_att, v_j> (head_score: the bits of the ss it replaces),
/// instead of gathered from ss. The kernels gather v_j for the same edge anyway, so an edge then
/// costs one random row instead of two (reads_value_rows). ss must still hold the same terms:
/// passes that visit a source once (the backward's source pass) read them there.
template <int kH = 0>
struct AdditiveScore {
  const float* sd;
  const float* ss;
  int64_t heads;
  float slope;
  const float* se = nullptr;
  const float* v = nullptr;       // kH == 1 with ss_att: the value rows [Ns, dv]
  const float* ss_att = nullptr;  // kH == 1: a_src [dv], or null (ss is gathered)
  int64_t dv = 0;

  [[gnu::always_inline]] int64_t nh() const {
    if constexpr (kH > 0)
      return kH;
    else
      return heads;
  }
  /// Whether the source terms come from the value rows (one head with ss_att).
  [[gnu::always_inline]] bool from_value() const {
    if constexpr (kH == 1)
      return ss_att != nullptr;
    else
      return false;
  }
  [[gnu::always_inline]] int64_t width() const { return nh(); }
  [[gnu::always_inline]] void prefetch_src(int64_t j) const {
    if (from_value())
      prefetch_row(v + j * dv, dv);
    else
      prefetch_row(ss + j * nh(), nh());
  }
  [[gnu::always_inline]] void prefetch_dst(int64_t i) const { prefetch_row(sd + i * nh(), nh()); }
  /// z = sd_i + ss_j (+ se_e): the activation's input, all heads.
  [[gnu::always_inline]] void pre_activation(int64_t i, int64_t j, int64_t e, float* __restrict z) const {
    const int64_t n = nh();
    const float* a = sd + i * n;
    if constexpr (kH == 1) {
      if (ss_att) {
        const float b = head_score(v + j * dv, ss_att, dv);
        z[0] = se ? a[0] + b + se[e] : a[0] + b;
        return;
      }
    }
    const float* b = ss + j * n;
    if (se) {
      const float* c = se + e * n;
#pragma omp simd
      for (int64_t h = 0; h < n; ++h) z[h] = a[h] + b[h] + c[h];
    } else {
#pragma omp simd
      for (int64_t h = 0; h < n; ++h) z[h] = a[h] + b[h];
    }
  }
  [[gnu::always_inline]] void scores(int64_t i, int64_t j, int64_t e, float* __restrict s) const {
    const int64_t n = nh();
    pre_activation(i, j, e, s);
#pragma omp simd
    for (int64_t h = 0; h < n; ++h) s[h] = leaky_relu(s[h], slope);
  }
  /// dz = ds * leaky'(z): the gradient of every additive term (sd_i, ss_j and se_e) of the edge.
  [[gnu::always_inline]] void pre_activation_grad(int64_t i, int64_t j, int64_t e, const float* __restrict ds,
                                                  float* __restrict dz) const {
    const int64_t n = nh();
    pre_activation(i, j, e, dz);
#pragma omp simd
    for (int64_t h = 0; h < n; ++h) dz[h] = ds[h] * leaky_relu_grad(dz[h], slope);
  }
  [[gnu::always_inline]] void grad_dst(int64_t i, int64_t j, int64_t e, const float* __restrict ds,
                                       float* __restrict dst_acc, float* /*datt*/) const {
    const int64_t n = nh();
    if constexpr (kH == 1) {
      if (ss_att) {
        float z;
        pre_activation(i, j, e, &z);
        dst_acc[0] += ds[0] * leaky_relu_grad(z, slope);
        return;
      }
    }
    if (se) {
      const float* c = se + e * n;
      const float* a = sd + i * n;
      const float* b = ss + j * n;
#pragma omp simd
      for (int64_t h = 0; h < n; ++h) dst_acc[h] += ds[h] * leaky_relu_grad(a[h] + b[h] + c[h], slope);
      return;
    }
    const float* a = sd + i * n;
    const float* b = ss + j * n;
#pragma omp simd
    for (int64_t h = 0; h < n; ++h) dst_acc[h] += ds[h] * leaky_relu_grad(a[h] + b[h], slope);
  }
  [[gnu::always_inline]] void grad_src(int64_t i, int64_t j, int64_t e, const float* __restrict ds,
                                       float* __restrict src_acc) const {
    grad_dst(i, j, e, ds, src_acc, nullptr);  // the same term: d/d ss_j = d/d sd_i
  }
};

template <class S>
inline constexpr bool kIsAdditive = false;
template <int kH>
inline constexpr bool kIsAdditive<AdditiveScore<kH>> = true;

/// Whether the score reads each edge's source term from the source's value row (AdditiveScore's
/// from_value): the kernels' value gathers then serve the score too.
template <class S>
[[gnu::always_inline]] inline bool reads_value_rows(const S& score) {
  if constexpr (kIsAdditive<S>)
    return score.from_value();
  else
    return (void)score, false;
}
/// Cache lines of the source's score-side row an edge gathers besides its value row: none when
/// the score reads its term from the value row.
template <class S>
[[gnu::always_inline]] inline int64_t src_score_lines(const S& score) {
  return reads_value_rows(score) ? 0 : row_lines(score.width());
}

/// GATv2 (act = LeakyReLU) and the perceptron score (act = tanh). With edge attributes (ea, we:
/// GATv2's edge_dim) the activation input gains ve_hc = we_hc . ea_e, computed on the fly: nothing
/// of size edges x features is stored.
template <bool kTanh, bool kEdge = false>
struct VectorScore {
  const float* q;
  const float* k;
  const float* att;
  int64_t heads, dk;
  float slope;
  const float* ea = nullptr;  // [E, fe] or null
  const float* we = nullptr;  // [H * dk, fe]
  int64_t fe = 0;

  static float act(float u, float slope) { return kTanh ? fast_tanh(u) : leaky_relu(u, slope); }
  static float act_grad(float u, float slope) {
    if constexpr (kTanh) {
      const float t = fast_tanh(u);
      return 1.f - t * t;
    } else {
      return leaky_relu_grad(u, slope);
    }
  }

  [[gnu::always_inline]] int64_t width() const { return heads * dk; }
  [[gnu::always_inline]] void prefetch_src(int64_t j) const { prefetch_row(k + j * heads * dk, heads * dk); }
  [[gnu::always_inline]] void prefetch_dst(int64_t i) const { prefetch_row(q + i * heads * dk, heads * dk); }
  // The edge term of feature hc of edge e (kEdge only).
  [[gnu::always_inline]] float edge_term(int64_t e, int64_t hc) const {
    return dot(we + hc * fe, ea + e * fe, fe);
  }
  // The activation input of feature hc.
  [[gnu::always_inline]] float input(const float* qi, const float* kj, int64_t e, int64_t hc) const {
    if constexpr (kEdge)
      return qi[hc] + kj[hc] + edge_term(e, hc);
    else
      return (void)e, qi[hc] + kj[hc];
  }
  [[gnu::always_inline]] void scores(int64_t i, int64_t j, int64_t e, float* __restrict s) const {
    const float* qi = q + i * heads * dk;
    const float* kj = k + j * heads * dk;
    for (int64_t h = 0; h < heads; ++h) {
      float t = 0.f;
      for (int64_t c = 0; c < dk; ++c) t += att[h * dk + c] * act(input(qi, kj, e, h * dk + c), slope);
      s[h] = t;
    }
  }
  // dq_i += ds * a * act'(u);  datt += ds * act(u)
  [[gnu::always_inline]] void grad_dst(int64_t i, int64_t j, int64_t e, const float* ds, float* dst_acc,
                                       float* datt) const {
    const float* qi = q + i * heads * dk;
    const float* kj = k + j * heads * dk;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < dk; ++c) {
        const float u = input(qi, kj, e, h * dk + c);
        dst_acc[h * dk + c] += ds[h] * att[h * dk + c] * act_grad(u, slope);
        if (datt) datt[h * dk + c] += ds[h] * act(u, slope);
      }
  }
  [[gnu::always_inline]] void grad_src(int64_t i, int64_t j, int64_t e, const float* __restrict ds,
                                       float* __restrict src_acc) const {
    const float* qi = q + i * heads * dk;
    const float* kj = k + j * heads * dk;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < dk; ++c)
        src_acc[h * dk + c] += ds[h] * att[h * dk + c] * act_grad(input(qi, kj, e, h * dk + c), slope);
  }
  // With edge attributes: dea_e = sum_hc dz_hc we_hc (written whole, when dea_e is given) and
  // dwe_hc += dz_hc ea_e, where dz_hc = ds_h a_hc act'(u_hc).
  [[gnu::always_inline]] void grad_edge(int64_t i, int64_t j, int64_t e, const float* ds, float* dea_e,
                                        float* dwe) const {
    const float* qi = q + i * heads * dk;
    const float* kj = k + j * heads * dk;
    const float* a_e = ea + e * fe;
    if (dea_e) std::fill_n(dea_e, fe, 0.f);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < dk; ++c) {
        const int64_t hc = h * dk + c;
        const float dz = ds[h] * att[hc] * act_grad(input(qi, kj, e, hc), slope);
        const float* w = we + hc * fe;
        if (dea_e)
          for (int64_t f = 0; f < fe; ++f) dea_e[f] += dz * w[f];
        if (dwe)
          for (int64_t f = 0; f < fe; ++f) dwe[hc * fe + f] += dz * a_e[f];
      }
  }
};

template <class S>
inline constexpr bool kIsVector = false;
template <bool kTanh, bool kEdge>
inline constexpr bool kIsVector<VectorScore<kTanh, kEdge>> = true;

/// True for the instantiations that read edge attributes (ScoreArgs::ea).
template <class S>
inline constexpr bool kHasEdgeAttributes = false;
template <bool kEdge>
inline constexpr bool kHasEdgeAttributes<DotScore<kEdge>> = kEdge;
template <bool kTanh, bool kEdge>
inline constexpr bool kHasEdgeAttributes<VectorScore<kTanh, kEdge>> = kEdge;

/// Calls f(score) with the concrete score struct for a.score.kind.
template <class F>
decltype(auto) visit_score(const KernelArgs& a, F&& f) {
  const ScoreArgs& s = a.score;
  switch (s.kind) {
    case EdgeScore::dot:
      if (s.ea) return f(DotScore<true>{s.q, s.k, a.heads, s.dk, s.scale, s.ea, s.we, s.fe});
      return f(DotScore<false>{s.q, s.k, a.heads, s.dk, s.scale});
    case EdgeScore::additive:
      return f(AdditiveScore<>{s.sd, s.ss, a.heads, s.slope, s.se});
    case EdgeScore::vector_leaky:
      if (s.ea) return f(VectorScore<false, true>{s.q, s.k, s.att, a.heads, s.dk, s.slope, s.ea, s.we, s.fe});
      return f(VectorScore<false>{s.q, s.k, s.att, a.heads, s.dk, s.slope});
    case EdgeScore::vector_tanh:
      break;
  }
  if (s.ea) return f(VectorScore<true, true>{s.q, s.k, s.att, a.heads, s.dk, s.slope, s.ea, s.we, s.fe});
  return f(VectorScore<true>{s.q, s.k, s.att, a.heads, s.dk, s.slope});
}

/// Compile-time extents for the row kernels: kH heads and kD value features per head (0: read
/// from KernelArgs at run time).
template <int kH, int kD>
struct Dims {
  static constexpr int heads = kH;
  static constexpr int dv = kD;
};

/// Like visit_score, and also passes Dims: GAT's shapes (additive score with 8 heads of 8
/// features, as in the GAT paper's hidden layer, or one head, as in its output layer) get
/// kernels whose loops over heads and features have compile-time bounds; everything else runs
/// the generic instantiation.
template <class F>
decltype(auto) visit_score_dims(const KernelArgs& a, F&& f) {
  const ScoreArgs& s = a.score;
  if (s.kind == EdgeScore::additive) {
    if (a.heads == 8 && a.dv == 8)
      return f(AdditiveScore<8>{s.sd, s.ss, a.heads, s.slope, s.se}, Dims<8, 8>{});
    if (a.heads == 1)
      return f(AdditiveScore<1>{s.sd, s.ss, a.heads, s.slope, s.se, a.v, s.ss_att, a.dv}, Dims<1, 0>{});
  }
  return visit_score(a, [&](const auto& score) -> decltype(auto) { return f(score, Dims<0, 0>{}); });
}

}  // namespace edgeattn::kernels
