// One GAT attention step as one tape op (see gat_attention in autograd/ops/attention.hpp).
// The pattern is square over x's N rows, or bipartite [num_dst x N] with the destinations x's
// first num_dst rows (a sampled block, a distributed part): s_dst is then read for those rows.
//
// Forward: h = dropout(x) W^T ([N, H*D], by row blocks: the dropped x is never stored), the score
// terms s_dst = <h_i, a_dst>, s_src = <h_j, a_src>, the fused attention, the epilogue. Only the
// output, the row log-sum-exp and, with input dropout, its mask as bits (N * ceil(in / 32) words, which
// the backward's two passes over x~ read instead of drawing it again) are kept.
//
// Backward, with dy the output's gradient:
//   1. the epilogue's backward turns dy into d(attention output) in place; the output is freed;
//   2. h, s_dst and s_src are recomputed (one GEMM over x; the same bits as the forward);
//   3. the attention backward writes dh over h (its value gradient, in place) and gives
//      ds_dst, ds_src [N, H];
//   4. dh += ds_src (x) a_src + ds_dst (x) a_dst (the score terms' h gradient, in the order the
//      unfused ops' backward adds them);
//   5. one pass over row blocks of dropout(x) gives dW = dh^T x~, and z_dst = ds_dst^T x~,
//      z_src = ds_src^T x~ [H, in]. The score vectors' gradients follow without h:
//        d a_dst[k, d] = sum_i ds_dst[i, k] h[i, k, d] = sum_c z_dst[k, c] W[k*D + d, c]
//   6. dx = mask * scale * (dh W), when x needs a gradient.
// Live at the peak of the backward: x, dy, h/dh and the [N, H] terms; never h and dh together.
//
// One head without a SourceExpansion (GAT's output layer) passes h with a_dst and a_src instead
// of the terms (AttentionInputs::att_dst/att_src; terms_from_value below): the attention op
// computes the terms, its one-head kernels take a source's term from the value row they gather
// for the edge anyway, and its backward does step 4 inside the pass that writes dh and returns
// d a_dst, d a_src; step 5 is then dW alone.
//
// With a SourceExpansion (a distributed part: x is the owned rows only), h is projected for the
// owned rows and expanded to every source; the other sources' h rows are kept (they cannot be
// recomputed here). In backward the own rows are projected again after which the kept rows follow;
// after step 4, dh and ds_src go through sources.reduce (the other sources' parts to the ranks
// that own them, theirs to here) and steps 5 and 6 run over the owned rows.
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"
#include "autograd/ops/dropped_projection.hpp"
#include "autograd/ops/expansion_checks.hpp"
#include "autograd/ops/output_epilogue.hpp"
#include "edgeattn/autograd/ops/attention.hpp"
#include "kernels/head_scores.hpp"

namespace edgeattn::autograd {
namespace {

struct Saved {
  Pattern pattern;
  GatVars vars;
  float input_dropout = 0.f;  // 0 when not training
  AttentionConfig config;
  AttentionResult forward;  // row_stats and path; `out` stays empty (two-sweep D_i in backward)
  detail::SavedEpilogue epilogue;
  int64_t heads = 0, head_dim = 0;
  Tensor other_h;  // with vars.sources: h of the sources after x's rows [num_src - num_dst, H, D]
  detail::KeepBits input_keep;  // the input dropout's mask, recorded by the forward's projection
};

// h [N, H, D] = dropout(x) W^T, and the two score terms [N, H].
struct Projected {
  Tensor h, score_dst, score_src;
};

// The score terms of h [N, H, D].
Projected scored(Tensor h, const Tensor& a_dst, const Tensor& a_src) {
  const int64_t n = h.dim(0), heads = h.dim(1), head_dim = h.dim(2);
  Projected p{std::move(h), Tensor::uninitialized({n, heads}), Tensor::uninitialized({n, heads})};
  const float* hd = p.h.data();
  const float *dst = a_dst.data(), *src = a_src.data();
  float *sd = p.score_dst.data(), *ss = p.score_src.data();
  detail::for_each_row_block(n, heads * head_dim, [&](int64_t r0, int64_t r1) {
    kernels::head_scores_rows(r1 - r0, heads, head_dim, hd + r0 * heads * head_dim, dst, sd + r0 * heads);
    kernels::head_scores_rows(r1 - r0, heads, head_dim, hd + r0 * heads * head_dim, src, ss + r0 * heads);
  });
  return p;
}

Tensor project_h(const detail::DroppedInput& dropped, const Tensor& w, int64_t heads, int64_t head_dim) {
  Tensor h = Tensor::uninitialized({dropped.x.dim(0), heads, head_dim});
  detail::dropped_project(dropped, w, h);  // every row block is written
  return h;
}

Projected project(const detail::DroppedInput& dropped, const Tensor& w, const Tensor& a_dst,
                  const Tensor& a_src, int64_t heads, int64_t head_dim) {
  return scored(project_h(dropped, w, heads, head_dim), a_dst, a_src);
}

// With a SourceExpansion, in forward: h of the own rows, expanded to every source. The other
// sources' rows are copied to `other_h` for the backward.
Projected project_expanded(const detail::DroppedInput& dropped, const Tensor& w, const Tensor& a_dst,
                           const Tensor& a_src, int64_t heads, int64_t head_dim,
                           const SourceExpansion& sources, int64_t num_src, Tensor& other_h) {
  const int64_t n = dropped.x.dim(0), width = heads * head_dim;
  Tensor h;
  {
    Tensor own = Tensor::uninitialized({n, heads, head_dim});
    detail::dropped_project(dropped, w, own);
    h = sources.expand(own);
    detail::check_expanded("gat_attention (sources.expand)", own.shape(), h);
  }
  if (h.dim(0) != num_src)
    raise<ShapeError>("gat_attention: sources.expand gave ", h.dim(0), " rows, the pattern has ", num_src,
                      " sources");
  other_h = Tensor::uninitialized({num_src - n, heads, head_dim});
  if (other_h.numel() > 0)
    std::memcpy(other_h.data(), h.data() + n * width, sizeof(float) * static_cast<size_t>(other_h.numel()));
  return scored(std::move(h), a_dst, a_src);
}

// The same in backward: the own rows projected again (the same bits), then the kept rows.
Projected reproject_expanded(const detail::DroppedInput& dropped, const Tensor& w, const Tensor& a_dst,
                             const Tensor& a_src, int64_t heads, int64_t head_dim, const Tensor& other_h) {
  const int64_t n = dropped.x.dim(0), width = heads * head_dim;
  Tensor h = Tensor::uninitialized({n + other_h.dim(0), heads, head_dim});
  detail::dropped_project(dropped, w, h.data());
  if (other_h.numel() > 0)
    std::memcpy(h.data() + n * width, other_h.data(), sizeof(float) * static_cast<size_t>(other_h.numel()));
  return scored(std::move(h), a_dst, a_src);
}

// The destinations are x's first num_dst rows: their score terms are the first rows of s_dst.
AttentionInputs attention_inputs(const Projected& p, int64_t num_dst, ConstView score_edge) {
  const ConstView score_dst(p.score_dst.data(), {num_dst, p.score_dst.dim(1)});
  return {.value = p.h, .score_dst = score_dst, .score_src = p.score_src, .score_edge = score_edge};
}

// One head without a SourceExpansion (GAT's output layer) hands the attention op h with the score
// vectors instead of the terms (AttentionInputs::att_dst/att_src): its one-head kernels then
// compute a source's term from the value row they gather for each edge, one random row an edge
// instead of two, and its backward folds the terms' gradients into dh and returns d a_dst and
// d a_src. dh gets step 4's terms inside the pass that writes it, and d a_* are summed over h's
// rows instead of through z = ds^T x~: the same gradients to rounding (tests/autograd).
bool terms_from_value(int64_t heads, const GatVars& v) { return heads == 1 && !v.sources; }

AttentionInputs value_inputs(const Tensor& h, const Tensor& a_dst, const Tensor& a_src,
                             ConstView score_edge) {
  return {.value = h, .score_edge = score_edge, .att_dst = a_dst, .att_src = a_src};
}

// da[k, d] += sum_c z[k, c] w[k*D + d, c]: the score vector's gradient from z = ds^T x~ [H, in].
void score_vector_grad(const Tensor& z, const Tensor& w, int64_t heads, int64_t head_dim, float* da) {
  const int64_t in = w.dim(1);
  for (int64_t k = 0; k < heads; ++k)
    for (int64_t d = 0; d < head_dim; ++d) {
      const float* zk = z.data() + k * in;
      const float* wr = w.data() + (k * head_dim + d) * in;
      float acc = 0.f;
      for (int64_t c = 0; c < in; ++c) acc += zk[c] * wr[c];
      da[k * head_dim + d] += acc;
    }
}

// The optional per-edge score term, from the Tape (forward) or the BackwardContext.
template <class Source>
ConstView edge_term(const Source& tape, const GatVars& v) {
  return v.score_edge ? ConstView(tape.value(v.score_edge)) : ConstView();
}

void check_operands(const Tape& tape, const Pattern& pattern, const GatVars& v,
                    const AttentionConfig& config) {
  if (!v.x || !v.weight || !v.att_dst || !v.att_src)
    raise<InvalidArgument>("gat_attention: x, weight, att_dst and att_src are all required");
  if (config.score != Score::additive)
    raise<InvalidArgument>("gat_attention: config.score is '", to_string(config.score),
                           "', expected 'additive' (GAT's score)");
  if (!(v.input_dropout >= 0.f && v.input_dropout < 1.f))
    raise<InvalidArgument>("gat_attention: input_dropout is ", v.input_dropout, ", expected in [0, 1)");
  const Tensor& x = tape.value(v.x);
  const Tensor& a_dst = tape.value(v.att_dst);
  detail::expect_rank("gat_attention", "att_dst", a_dst, 2, "[heads, head_dim]");
  const int64_t heads = a_dst.dim(0), head_dim = a_dst.dim(1);
  detail::expect_shape("gat_attention", "att_src", tape.value(v.att_src), {heads, head_dim});
  detail::expect_rank("gat_attention", "x", x, 2, "[num_nodes, in]");
  detail::expect_shape("gat_attention", "weight", tape.value(v.weight), {heads * head_dim, x.dim(1)});
  if (v.sources) {
    if (!v.sources.reduce)
      raise<InvalidArgument>("gat_attention: sources has an expand function but no reduce function");
    if (num_dst(pattern) > num_src(pattern) || x.dim(0) != num_dst(pattern))
      raise<ShapeError>("gat_attention: x has ", x.dim(0), " rows and the pattern is ", num_dst(pattern),
                        " x ", num_src(pattern),
                        ", expected x to hold the destinations' rows (num_dst) and sources.expand the "
                        "others' (num_dst <= num_src)");
    return;
  }
  if (num_dst(pattern) > num_src(pattern) || x.dim(0) != num_src(pattern))
    raise<ShapeError>(
        "gat_attention: x has ", x.dim(0), " rows and the pattern is ", num_dst(pattern), " x ",
        num_src(pattern),
        ", expected a pattern over x's rows as sources whose destinations are the first of "
        "them (num_dst <= num_src = x's rows: h of a node is both its query side and its value)");
}

}  // namespace

Var gat_attention(Tape& tape, const Pattern& pattern, const GatVars& vars, AttentionConfig config,
                  Tensor* attention, const AttentionEpilogue& epilogue) {
  check_operands(tape, pattern, vars, config);
  detail::check_epilogue("gat_attention", epilogue);
  if (!tape.training) config.dropout = 0.f;
  config.save_for_backward = tape.training;  // a backward follows (AttentionResult::dst_terms)
  const bool want_attention = config.return_attention && attention != nullptr;
  config.return_attention = want_attention;
  const Tensor& a_dst = tape.value(vars.att_dst);
  const int64_t heads = a_dst.dim(0), head_dim = a_dst.dim(1);
  const float input_dropout = tape.training ? vars.input_dropout : 0.f;

  AttentionResult result;
  Tensor other_h;
  detail::KeepBits input_keep;  // recorded here (with input dropout), read by both backward products
  {
    const detail::DroppedInput dropped{tape.value(vars.x), input_dropout, vars.input_seed, {}, &input_keep};
    const Tensor& w = tape.value(vars.weight);
    const Tensor& a_src = tape.value(vars.att_src);
    if (terms_from_value(heads, vars)) {
      const Tensor h = project_h(dropped, w, heads, head_dim);
      result = attention_forward(pattern, value_inputs(h, a_dst, a_src, edge_term(tape, vars)), config);
    } else {
      const Projected p = vars.sources ? project_expanded(dropped, w, a_dst, a_src, heads, head_dim,
                                                          vars.sources, num_src(pattern), other_h)
                                       : project(dropped, w, a_dst, a_src, heads, head_dim);
      result =
          attention_forward(pattern, attention_inputs(p, num_dst(pattern), edge_term(tape, vars)), config);
    }
  }  // h and the score terms are freed here
  Tensor out = std::move(result.out);
  if (want_attention) *attention = std::move(result.attention);
  result.attention = Tensor();
  config.return_attention = false;
  auto saved = std::make_shared<Saved>(Saved{pattern,
                                             vars,
                                             input_dropout,
                                             config,
                                             std::move(result),
                                             {},
                                             heads,
                                             head_dim,
                                             std::move(other_h),
                                             std::move(input_keep)});
  saved->epilogue.apply(tape, "gat_attention", epilogue, out);
  return tape.record(
      "gat_attention", std::move(out),
      {vars.x, vars.weight, vars.att_dst, vars.att_src, vars.score_edge, epilogue.bias},
      [saved](BackwardContext& ctx) {
        const GatVars& v = saved->vars;
        Tensor dout = saved->epilogue.take_grad(ctx);
        const bool want_x = ctx.needs_grad(v.x), want_w = ctx.needs_grad(v.weight);
        const bool want_dst = ctx.needs_grad(v.att_dst), want_src = ctx.needs_grad(v.att_src);
        const bool want_edge = ctx.needs_grad(v.score_edge);
        // With sources, the reductions below are collectives: every rank runs them.
        const bool expanded = static_cast<bool>(v.sources);
        if (!want_x && !want_w && !want_dst && !want_src && !want_edge && !expanded) return;

        const Tensor& x = ctx.value(v.x);
        const Tensor& w = ctx.value(v.weight);
        const Tensor& a_dst = ctx.value(v.att_dst);
        const Tensor& a_src = ctx.value(v.att_src);
        const int64_t heads = saved->heads, head_dim = saved->head_dim;
        const detail::DroppedInput dropped{x, saved->input_dropout, v.input_seed, {}, &saved->input_keep};
        const int64_t in = x.dim(1);
        // dW = dh^T x~ (with z_dst, z_src = ds^T x~ when given), then dx = mask * scale * (dh W).
        auto input_side = [&](const Tensor& dh, const float* ds_dst, const float* ds_src) {
          Tensor z_dst = ds_dst ? Tensor({heads, in}) : Tensor();
          Tensor z_src = ds_src ? Tensor({heads, in}) : Tensor();
          std::vector<detail::TransposeProduct> products;
          if (want_w) products.push_back({dh.data(), heads * head_dim, ctx.grad(v.weight).data()});
          if (ds_dst) products.push_back({ds_dst, heads, z_dst.data()});
          if (ds_src) products.push_back({ds_src, heads, z_src.data()});
          if (!products.empty()) detail::dropped_transpose_products(dropped, products);
          if (ds_dst) score_vector_grad(z_dst, w, heads, head_dim, ctx.grad(v.att_dst).data());
          if (ds_src) score_vector_grad(z_src, w, heads, head_dim, ctx.grad(v.att_src).data());
          if (want_x) {
            Tensor dx = Tensor::uninitialized(x.shape());  // every row block is written
            detail::dropped_input_grad(dropped, dh.data(), w, dx);
            ctx.add_grad(v.x, std::move(dx));
          }
        };
        if (terms_from_value(heads, v)) {  // steps 2-4 in the attention op, d a_* from it
          Tensor h = project_h(dropped, w, heads, head_dim);
          AttentionGrads g =
              attention_backward(saved->pattern, value_inputs(h, a_dst, a_src, edge_term(ctx, v)),
                                 saved->config, saved->forward, dout, /*value_grad=*/h);
          dout = Tensor();
          ctx.add_grad(v.score_edge, std::move(g.score_edge));
          ctx.add_grad(v.att_dst, std::move(g.att_dst));
          ctx.add_grad(v.att_src, std::move(g.att_src));
          if (want_x || want_w) input_side(h, nullptr, nullptr);  // h is dh now
          return;
        }
        Projected p = expanded ? reproject_expanded(dropped, w, a_dst, a_src, heads, head_dim, saved->other_h)
                               : project(dropped, w, a_dst, a_src, heads, head_dim);
        const int64_t n = p.h.dim(0);  // the sources: x's rows, or with sources every source
        const int64_t nd = num_dst(saved->pattern);
        AttentionGrads g = attention_backward(saved->pattern, attention_inputs(p, nd, edge_term(ctx, v)),
                                              saved->config, saved->forward, dout, /*value_grad=*/p.h);
        dout = Tensor();
        ctx.add_grad(v.score_edge, std::move(g.score_edge));
        if (!want_x && !want_w && !want_dst && !want_src && !expanded) return;
        p.score_dst = Tensor();
        p.score_src = Tensor();
        Tensor& dh = p.h;  // now the value gradient
        {
          // ds_dst covers the destinations, the first nd sources.
          const float* dsd = g.score_dst.data();
          const float* dss = g.score_src.data();
          float* dhd = dh.data();
          detail::for_each_row_block(n, heads * head_dim, [&](int64_t r0, int64_t r1) {
            float* rows = dhd + r0 * heads * head_dim;
            kernels::head_scores_backward_rows(r1 - r0, heads, head_dim, dss + r0 * heads, a_src.data(),
                                               rows);
            const int64_t dst_rows = std::min(r1, nd) - r0;
            if (dst_rows > 0)
              kernels::head_scores_backward_rows(dst_rows, heads, head_dim, dsd + r0 * heads, a_dst.data(),
                                                 rows);
          });
        }
        if (expanded) {
          // The other sources' dh and ds_src go to their owners, which send back this part's:
          // from here on, the rows are x's.
          const Shape own_h{x.dim(0), heads, head_dim}, own_s{x.dim(0), heads};
          Tensor dh_own = v.sources.reduce(dh);
          detail::check_reduced("gat_attention (sources.reduce)", own_h, dh_own);
          dh = std::move(dh_own);
          Tensor ds_own = v.sources.reduce(g.score_src);
          detail::check_reduced("gat_attention (sources.reduce)", own_s, ds_own);
          g.score_src = std::move(ds_own);  // ds_dst is over x's rows already: they are the destinations
        } else if (nd < n) {
          // A block's ds_dst covers x's first nd rows; the passes below run over all n rows of x,
          // so the others get a zero row.
          Tensor padded({n, heads});
          std::copy_n(g.score_dst.data(), nd * heads, padded.data());
          g.score_dst = std::move(padded);
        }
        input_side(dh, want_dst ? g.score_dst.data() : nullptr, want_src ? g.score_src.data() : nullptr);
      });
}

}  // namespace edgeattn::autograd
