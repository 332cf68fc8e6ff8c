#include "edgeattn/autograd/ops/attention.hpp"

#include <memory>
#include <utility>

#include "autograd/elementwise.hpp"
#include "autograd/ops/output_epilogue.hpp"
#include "kernels/head_scores.hpp"

namespace edgeattn::autograd {
namespace {

// `Source` is the Tape (forward) or the BackwardContext (backward): anything with value(Var).
template <class Source>
ConstView view_of(const Source& tape, Var v) {
  return v ? ConstView(tape.value(v)) : ConstView();
}

template <class Source>
AttentionInputs inputs_of(const Source& tape, const AttentionVars& v) {
  return {.query = view_of(tape, v.query),
          .key = view_of(tape, v.key),
          .value = view_of(tape, v.value),
          .score_dst = view_of(tape, v.score_dst),
          .score_src = view_of(tape, v.score_src),
          .weight = view_of(tape, v.weight),
          .key_weight = view_of(tape, v.key_weight),
          .att = view_of(tape, v.att),
          .edge_bias = view_of(tape, v.edge_bias),
          .score_edge = view_of(tape, v.score_edge),
          .edge_attr = view_of(tape, v.edge_attr),
          .edge_proj = view_of(tape, v.edge_proj),
          .att_dst = view_of(tape, v.att_dst),
          .att_src = view_of(tape, v.att_src)};
}

// What backward needs from the forward, besides the output (which stays the node's value).
struct Saved {
  Pattern pattern;
  AttentionVars vars;
  AttentionConfig config;
  AttentionResult forward;  // row_stats and path; `out` is borrowed from the node during backward
  detail::SavedEpilogue epilogue;
};

// Puts the node's output back even if the kernel throws.
struct OutputLoan {
  Tensor& node_out;
  Tensor& borrowed;
  OutputLoan(Tensor& node, Tensor& into) : node_out(node), borrowed(into) { borrowed = std::move(node_out); }
  ~OutputLoan() { node_out = std::move(borrowed); }
  OutputLoan(const OutputLoan&) = delete;
  OutputLoan& operator=(const OutputLoan&) = delete;
};

}  // namespace

namespace detail {

void check_epilogue(const char* who, const AttentionEpilogue& epilogue) {
  if (!epilogue.active()) return;
  if (!(epilogue.dropout >= 0.f && epilogue.dropout < 1.f))
    raise<InvalidArgument>(who, " epilogue: dropout is ", epilogue.dropout, ", expected in [0, 1)");
  if (epilogue.elu && !(epilogue.elu_alpha > 0.f))
    raise<InvalidArgument>(who, " epilogue: elu_alpha is ", epilogue.elu_alpha, ", expected > 0");
}

void SavedEpilogue::apply(const Tape& tape, const char* who, const AttentionEpilogue& epilogue, Tensor& out) {
  if (!epilogue.active()) return;
  const int64_t rows = out.rank() > 0 ? out.shape()[0] : 0;
  width = rows > 0 ? out.numel() / rows : 0;
  const float* b = nullptr;
  if (epilogue.bias) {
    const Tensor& bv = tape.value(epilogue.bias);
    if (bv.numel() != width || bv.rank() != 1)
      raise<ShapeError>(who, " epilogue: bias has shape ", bv.shape().str(), ", expected [", width,
                        "] (the output's elements per row)");
    b = bv.data();
  }
  bias = epilogue.bias;
  active = true;
  applied = {.elu = epilogue.elu,
             .elu_alpha = epilogue.elu_alpha,
             .dropout = tape.training ? epilogue.dropout : 0.f,
             .seed = epilogue.seed};
  if (rows > 0) apply_output_epilogue(out, b, width, applied);
}

Tensor SavedEpilogue::take_grad(BackwardContext& ctx) const {
  Tensor dout = ctx.take_grad_out();
  if (active && dout.numel() > 0) {
    float* dbias = bias && ctx.needs_grad(bias) ? ctx.grad(bias).data() : nullptr;
    output_epilogue_backward(dout, ctx.out(), width, applied, dbias);
  }
  ctx.release_out();
  return dout;
}

}  // namespace detail

Var graph_attention(Tape& tape, const Pattern& pattern, const AttentionVars& vars, AttentionConfig config,
                    Tensor* attention, const AttentionEpilogue& epilogue) {
  detail::check_epilogue("graph_attention", epilogue);  // before the attention runs
  if (!tape.training) config.dropout = 0.f;
  config.save_for_backward = tape.training;  // a backward follows (AttentionResult::dst_terms)
  const bool want_attention = config.return_attention && attention != nullptr;
  config.return_attention = want_attention;
  AttentionResult result = attention_forward(pattern, inputs_of(tape, vars), config);
  Tensor out = std::move(result.out);
  if (want_attention) *attention = std::move(result.attention);
  result.attention = Tensor();
  config.return_attention = false;
  auto saved = std::make_shared<Saved>(Saved{pattern, vars, config, std::move(result), {}});
  saved->epilogue.apply(tape, "graph_attention", epilogue, out);
  const std::initializer_list<Var> inputs = {vars.query,     vars.key,        vars.value,      vars.score_dst,
                                             vars.score_src, vars.weight,     vars.key_weight, vars.att,
                                             vars.edge_bias, vars.score_edge, vars.edge_attr,  vars.edge_proj,
                                             vars.att_dst,   vars.att_src,    epilogue.bias};
  return tape.record("graph_attention", std::move(out), inputs, [saved](BackwardContext& ctx) {
    const AttentionVars& v = saved->vars;
    AttentionGrads g;
    if (saved->epilogue.active) {
      // The epilogue's backward turns dy into d(attention output) in place, from the output;
      // then the output is no longer needed (D_i comes from the edges: forward.out is empty).
      const Tensor dout = saved->epilogue.take_grad(ctx);
      g = attention_backward(saved->pattern, inputs_of(ctx, v), saved->config, saved->forward, dout);
    } else {
      OutputLoan loan(ctx.mutable_out(), saved->forward.out);
      g = attention_backward(saved->pattern, inputs_of(ctx, v), saved->config, saved->forward,
                             ctx.grad_out());
    }
    ctx.add_grad(v.query, std::move(g.query));
    ctx.add_grad(v.key, std::move(g.key));
    ctx.add_grad(v.value, std::move(g.value));
    ctx.add_grad(v.score_dst, std::move(g.score_dst));
    ctx.add_grad(v.score_src, std::move(g.score_src));
    ctx.add_grad(v.weight, std::move(g.weight));
    ctx.add_grad(v.key_weight, std::move(g.key_weight));
    ctx.add_grad(v.att, std::move(g.att));
    ctx.add_grad(v.edge_bias, std::move(g.edge_bias));
    ctx.add_grad(v.score_edge, std::move(g.score_edge));
    ctx.add_grad(v.edge_attr, std::move(g.edge_attr));
    ctx.add_grad(v.edge_proj, std::move(g.edge_proj));
    ctx.add_grad(v.att_dst, std::move(g.att_dst));
    ctx.add_grad(v.att_src, std::move(g.att_src));
  });
}

Var head_scores(Tape& tape, Var h, Var a) {
  const Tensor& hv = tape.value(h);
  detail::expect_rank("head_scores", "h", hv, 3, "[N, heads, dim]");
  return head_scores(tape, h, a, hv.dim(0));
}

Var head_scores(Tape& tape, Var h, Var a, int64_t rows) {
  const Tensor& hv = tape.value(h);
  const Tensor& av = tape.value(a);
  detail::expect_rank("head_scores", "h", hv, 3, "[N, heads, dim]");
  if (rows < 0 || rows > hv.dim(0))
    raise<ShapeError>("head_scores: h has shape ", hv.shape().str(), ", cannot score its first ", rows,
                      " rows");
  const int64_t n = rows, heads = hv.dim(1), d = hv.dim(2);
  detail::expect_shape("head_scores", "a", av, {heads, d});
  Tensor s = Tensor::uninitialized({n, heads});
  const float *hd = hv.data(), *ad = av.data();
  float* sd = s.data();
  detail::for_each_row_block(n, heads * d, [&](int64_t r0, int64_t r1) {
    kernels::head_scores_rows(r1 - r0, heads, d, hd + r0 * heads * d, ad, sd + r0 * heads);
  });
  return tape.record("head_scores", std::move(s), {h, a}, [h, a, n, heads, d](BackwardContext& ctx) {
    const float* g = ctx.grad_out().data();
    const float* ad = ctx.value(a).data();
    float* dh = ctx.needs_grad(h) ? ctx.grad(h).data() : nullptr;
    if (ctx.needs_grad(a)) {
      // da[k, :] += sum_i ds[i, k] h[i, k, :], and dh's term row by row in the same sweep: h and
      // dh are read once (a sampled block's h is tens of MB).
      const float* hd = ctx.value(h).data();
      detail::column_sums(
          n, heads * d,
          [&](int64_t i, float* acc) {
            if (dh) kernels::head_scores_backward_rows(1, heads, d, g + i * heads, ad, dh + i * heads * d);
            for (int64_t k = 0; k < heads; ++k)
              for (int64_t c = 0; c < d; ++c)
                acc[k * d + c] += g[i * heads + k] * hd[(i * heads + k) * d + c];
          },
          ctx.grad(a).data(), true);
    } else if (dh) {  // dh[i, k, :] += ds[i, k] a[k, :]
      detail::for_each_row_block(n, heads * d, [&](int64_t r0, int64_t r1) {
        kernels::head_scores_backward_rows(r1 - r0, heads, d, g + r0 * heads, ad, dh + r0 * heads * d);
      });
    }
  });
}

Var fold_head_scores(Tape& tape, Var weight, Var a) {
  const Tensor& wv = tape.value(weight);
  const Tensor& av = tape.value(a);
  detail::expect_rank("fold_head_scores", "a", av, 2, "[heads, dim]");
  const int64_t heads = av.dim(0), d = av.dim(1);
  detail::expect_rank("fold_head_scores", "weight", wv, 2, "[heads * dim, in]");
  detail::expect_shape("fold_head_scores", "weight", wv, {heads * d, wv.dim(1)});
  const int64_t in = wv.dim(1);
  // u[k, f] = sum_c a[k, c] w[k*d + c, f], summed over c in index order.
  Tensor u({heads, in});
  for (int64_t k = 0; k < heads; ++k)
    for (int64_t c = 0; c < d; ++c) {
      const float ac = av.data()[k * d + c];
      const float* wr = wv.data() + (k * d + c) * in;
      float* ur = u.data() + k * in;
      for (int64_t f = 0; f < in; ++f) ur[f] += ac * wr[f];
    }
  return tape.record("fold_head_scores", std::move(u), {weight, a},
                     [weight, a, heads, d, in](BackwardContext& ctx) {
                       const float* g = ctx.grad_out().data();  // [heads, in]
                       if (ctx.needs_grad(weight)) {            // dw[k*d + c, f] += a[k, c] du[k, f]
                         const float* ad = ctx.value(a).data();
                         float* dw = ctx.grad(weight).data();
                         for (int64_t k = 0; k < heads; ++k)
                           for (int64_t c = 0; c < d; ++c)
                             for (int64_t f = 0; f < in; ++f)
                               dw[(k * d + c) * in + f] += ad[k * d + c] * g[k * in + f];
                       }
                       if (ctx.needs_grad(a)) {  // da[k, c] += sum_f w[k*d + c, f] du[k, f]
                         const float* wd = ctx.value(weight).data();
                         float* da = ctx.grad(a).data();
                         for (int64_t k = 0; k < heads; ++k)
                           for (int64_t c = 0; c < d; ++c) {
                             float acc = 0.f;
                             for (int64_t f = 0; f < in; ++f) acc += wd[(k * d + c) * in + f] * g[k * in + f];
                             da[k * d + c] += acc;
                           }
                       }
                     });
}

}  // namespace edgeattn::autograd
