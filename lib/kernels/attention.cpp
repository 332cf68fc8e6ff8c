// The one dispatch point of graph attention: validates operands, reduces every public score to a
// canonical edge form (attention_backend.hpp), picks the path, and combines heads.
//
// Score reductions (per head h):
//   bilinear    s = scale * q_i^T W k_j = scale * <q_i, W k_j>      -> dot with key' = W k
//   perceptron  s = v^T tanh(W q_i + U k_j)                          -> vector_tanh on (W q, U k)
// The projections are GEMMs over nodes (O(N * D^2)), never per edge; backward maps gradients back
// through them (kernels/head_projection.hpp).
//
// The additive score from the value (att_dst/att_src): the dispatch computes the node terms
// sd_i = <a_dst, v_i> and ss_j = <a_src, v_j> in one sweep over v (kept in
// AttentionResult::node_scores), and every backend folds their gradients into dv and d a_* in
// its backward (BackwardBuffers::fold_att_*).
#include "edgeattn/kernels/attention.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "edgeattn/core/parallel.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/head_projection.hpp"
#include "kernels/head_scores.hpp"
#include "kernels/parallel/tiled_attention.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn {
namespace {

using kernels::EdgeScore;

bool uses_query_key(Score s) { return s != Score::additive; }

// True when x[0, n) holds an inf or NaN: the largest exponent field of a piece is all ones. A
// max over integers vectorises (~60 GB/s on 2 Zen 4 cores from cache; a per-element predicate
// through parallel_find_first ran at 12).
bool has_non_finite(const float* x, int64_t n) {
  std::atomic<bool> found{false};
  parallel_for(0, n, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    if (found.load(std::memory_order_relaxed)) return;
    uint32_t top = 0;
    for (int64_t k = begin; k < end; ++k) top = std::max(top, std::bit_cast<uint32_t>(x[k]) & 0x7f800000u);
    if (top == 0x7f800000u) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

// Everything the backends need, plus the projected operands that must outlive the call.
struct Prepared {
  int64_t num_dst = 0, num_src = 0, num_edges = 0, heads = 0, dk = 0, dv = 0, hidden = 0;
  kernels::KernelArgs args;
  Tensor projected_q;  // perceptron: W q  [Nd, H, C]
  Tensor projected_k;  // bilinear: W k [Ns, H, Dk]; perceptron: U k [Ns, H, C]
  AttentionPath path = AttentionPath::sparse;
  bool from_value = false;   // additive with att_dst/att_src: args.score.sd/ss set by the caller
  bool masks_pairs = false;  // some (destination, source) pair is not an edge
};

std::string where(const AttentionConfig& c, const char* operand) {
  return detail::message("attention(score=", to_string(c.score), "): ", operand);
}

// check_shape with where()'s message built only for a mismatch: prepare runs on every call, and
// formatting a dozen messages that are then dropped cost more than the checks.
void check_operand(const AttentionConfig& c, const char* operand, ConstView v,
                   std::initializer_list<int64_t> expected) {
  bool ok = v.rank() == static_cast<int>(expected.size());
  int d = 0;
  for (const int64_t e : expected) {
    if (!ok) break;
    ok = e == kAny || v.dim(d++) == e;
  }
  if (!ok) check_shape(where(c, operand), v, expected);
}

void require_absent(const AttentionConfig& c, ConstView v, const char* operand) {
  if (!v.empty())
    raise<InvalidArgument>(where(c, operand), " was given but score '", to_string(c.score),
                           "' does not use it");
}

AttentionPath resolve_path(const Pattern& p, const AttentionConfig& c, int64_t num_edges) {
  const bool gemm_form = c.score == Score::dot_product || c.score == Score::bilinear;
  switch (c.path) {
    case AttentionPath::automatic:
      return gemm_form && num_edges > 0 && density(p) >= c.dense_threshold ? AttentionPath::dense
                                                                           : AttentionPath::sparse;
    case AttentionPath::dense:
      if (!gemm_form)
        raise<InvalidArgument>(
            "attention: path=dense computes scores with GEMM and supports score "
            "dot_product or bilinear, got score '",
            to_string(c.score), "'; use path=sparse");
      return AttentionPath::dense;
    default:
      return c.path;
  }
}

// True for a dot score on a pattern with masked pairs where the dense or tiled kernel may run
// (the tiled one needs rows of >= kTiledMinMeanRow edges on average). Those compute whole tiles:
// a masked pair's weight 0 times an inf or NaN is NaN, in the forward's sum over v and the
// backward's over k, q and the output gradient. Scanning the operands for such values reads
// each once, against the >= 64 edges a row that the kernels need to pay.
bool masked_tiles_may_run(const Prepared& r) {
  if (r.args.score.kind != EdgeScore::dot || !r.masks_pairs) return false;
  return r.path == AttentionPath::dense ||
         (r.path == AttentionPath::sparse &&
          static_cast<double>(r.num_edges) >= kernels::kTiledMinMeanRow * static_cast<double>(r.num_dst));
}

// Validates every operand against the pattern and config; fills sizes and raw pointers.
Prepared prepare(const Pattern& p, const AttentionInputs& in, const AttentionConfig& c) {
  Prepared r;
  r.num_dst = num_dst(p);
  r.num_src = num_src(p);
  r.num_edges = num_edges(p);
  if (!(c.dropout >= 0.f && c.dropout < 1.f))
    raise<InvalidArgument>("attention: dropout is ", c.dropout, ", expected in [0, 1)");
  if (!std::isfinite(c.scale) || c.scale < 0.f)
    raise<InvalidArgument>("attention: scale is ", c.scale,
                           ", expected finite and >= 0 (0 = 1/sqrt(head_dim))");
  if (!std::isfinite(c.negative_slope))
    raise<InvalidArgument>("attention: negative_slope is ", c.negative_slope, ", expected finite");
  if (!(c.dense_threshold >= 0.0 && c.dense_threshold <= 1.0))  // NaN too
    raise<InvalidArgument>(
        "attention: dense_threshold is ", c.dense_threshold,
        ", expected a density in [0, 1] (the dense path runs at or above it; 1: only complete "
        "patterns)");

  if (in.value.empty())
    raise<ShapeError>(where(c, "value"), " is required, shape [num_src, heads, value_dim]");
  if (in.value.rank() != 3)
    raise<ShapeError>(where(c, "value"), " has shape ", in.value.shape().str(),
                      ", expected [num_src=", r.num_src, ", heads, value_dim]");
  r.heads = in.value.dim(1);
  r.dv = in.value.dim(2);
  if (r.heads < 1) raise<InvalidArgument>(where(c, "value"), " has 0 heads, expected at least 1");
  check_operand(c, "value", in.value, {r.num_src, r.heads, kAny});

  auto& a = r.args;
  a.heads = r.heads;
  a.dv = r.dv;
  a.v = in.value.data();
  a.norm = c.normalization;
  a.dropout = c.dropout;
  a.seed = c.seed;
  a.score.slope = c.negative_slope;

  if (uses_query_key(c.score)) {
    if (in.query.empty() || in.key.empty())
      raise<ShapeError>(where(c, "query and key"),
                        " are required, shapes [num_dst, heads, dim] and [num_src, heads, dim]");
    if (in.query.rank() != 3)
      raise<ShapeError>(where(c, "query"), " has shape ", in.query.shape().str(),
                        ", expected rank 3 [num_dst, heads, dim]");
    r.dk = in.query.dim(2);
    check_operand(c, "query", in.query, {r.num_dst, r.heads, r.dk});
    check_operand(c, "key", in.key, {r.num_src, r.heads, r.dk});
    require_absent(c, in.score_dst, "score_dst");
    require_absent(c, in.score_src, "score_src");
    require_absent(c, in.att_dst, "att_dst");
    require_absent(c, in.att_src, "att_src");
  } else if (!in.att_dst.empty() || !in.att_src.empty()) {
    // GAT's node terms from the value itself (AttentionInputs::att_dst/att_src).
    if (!in.score_dst.empty() || !in.score_src.empty())
      raise<InvalidArgument>(where(c, in.score_dst.empty() ? "score_src" : "score_dst"),
                             " was given with att_dst/att_src: pass either the score vectors or the "
                             "vectors that take them from the value, not both");
    if (in.att_dst.empty() || in.att_src.empty())
      raise<InvalidArgument>(where(c, in.att_dst.empty() ? "att_dst" : "att_src"),
                             " is missing: att_dst and att_src [heads, value_dim] go together");
    check_operand(c, "att_dst", in.att_dst, {r.heads, r.dv});
    check_operand(c, "att_src", in.att_src, {r.heads, r.dv});
    if (r.num_dst > r.num_src)
      raise<ShapeError>(where(c, "att_dst"), ": takes destination i's score from value row i, so the ",
                        "pattern needs num_dst <= num_src; it has ", r.num_dst, " destinations and ",
                        r.num_src, " sources");
    require_absent(c, in.query, "query");
    require_absent(c, in.key, "key");
    r.from_value = true;
  } else {
    check_operand(c, "score_dst", in.score_dst, {r.num_dst, r.heads});
    check_operand(c, "score_src", in.score_src, {r.num_src, r.heads});
    require_absent(c, in.query, "query");
    require_absent(c, in.key, "key");
  }
  if (!in.edge_bias.empty()) {
    check_operand(c, "edge_bias", in.edge_bias, {r.num_edges, r.heads});
    a.bias = in.edge_bias.data();
  }
  if (!in.score_edge.empty()) {
    if (c.score != Score::additive)
      raise<InvalidArgument>(where(c, "score_edge"), " was given but score '", to_string(c.score),
                             "' does not use it (a per-edge term inside the additive score's LeakyReLU)");
    check_operand(c, "score_edge", in.score_edge, {r.num_edges, r.heads});
  }
  r.path = resolve_path(p, c, r.num_edges);
  const bool reference = r.path == AttentionPath::reference;
  // A graph with repeated edges may have nd * ns edges and still mask pairs; its distinct pairs
  // are counted once per graph (degree_stats is cached on it).
  r.masks_pairs = r.num_edges < r.num_dst * r.num_src;
  if (const Graph* g = std::get_if<Graph>(&p); g != nullptr && !r.masks_pairs)
    r.masks_pairs = r.num_edges - g->degree_stats().duplicate_edges < r.num_dst * r.num_src;
  const float default_scale = r.dk > 0 ? 1.f / std::sqrt(static_cast<float>(r.dk)) : 1.f;

  switch (c.score) {
    case Score::dot_product:
      require_absent(c, in.weight, "weight");
      require_absent(c, in.key_weight, "key_weight");
      require_absent(c, in.att, "att");
      a.score = {.kind = EdgeScore::dot,
                 .scale = c.scale > 0 ? c.scale : default_scale,
                 .slope = c.negative_slope,
                 .dk = r.dk,
                 .q = in.query.data(),
                 .k = in.key.data()};
      break;
    case Score::bilinear: {
      require_absent(c, in.key_weight, "key_weight");
      require_absent(c, in.att, "att");
      check_operand(c, "weight", in.weight, {r.heads, r.dk, r.dk});
      r.projected_k = Tensor({r.num_src, r.heads, r.dk});
      kernels::head_map_forward({r.num_src, r.heads, r.dk, r.dk}, in.key.data(), in.weight.data(),
                                r.projected_k.data(), reference);
      a.score = {.kind = EdgeScore::dot,
                 .scale = c.scale > 0 ? c.scale : default_scale,
                 .slope = c.negative_slope,
                 .dk = r.dk,
                 .q = in.query.data(),
                 .k = r.projected_k.data()};
      break;
    }
    case Score::additive:
      require_absent(c, in.weight, "weight");
      require_absent(c, in.key_weight, "key_weight");
      require_absent(c, in.att, "att");
      a.score = {.kind = EdgeScore::additive,
                 .slope = c.negative_slope,
                 .sd = in.score_dst.data(),
                 .ss = in.score_src.data(),
                 .se = in.score_edge.empty() ? nullptr : in.score_edge.data()};
      break;
    case Score::gatv2:
      require_absent(c, in.weight, "weight");
      require_absent(c, in.key_weight, "key_weight");
      check_operand(c, "att", in.att, {r.heads, r.dk});
      a.score = {.kind = EdgeScore::vector_leaky,
                 .slope = c.negative_slope,
                 .dk = r.dk,
                 .q = in.query.data(),
                 .k = in.key.data(),
                 .att = in.att.data()};
      break;
    case Score::perceptron: {
      if (in.weight.rank() != 3)
        raise<ShapeError>(where(c, "weight"), " has shape ",
                          in.weight.empty() ? "(missing)" : in.weight.shape().str(),
                          ", expected [heads=", r.heads, ", hidden, dim=", r.dk, "]");
      r.hidden = in.weight.dim(1);
      check_operand(c, "weight", in.weight, {r.heads, r.hidden, r.dk});
      check_operand(c, "key_weight", in.key_weight, {r.heads, r.hidden, r.dk});
      check_operand(c, "att", in.att, {r.heads, r.hidden});
      r.projected_q = Tensor({r.num_dst, r.heads, r.hidden});
      r.projected_k = Tensor({r.num_src, r.heads, r.hidden});
      kernels::head_map_forward({r.num_dst, r.heads, r.dk, r.hidden}, in.query.data(), in.weight.data(),
                                r.projected_q.data(), reference);
      kernels::head_map_forward({r.num_src, r.heads, r.dk, r.hidden}, in.key.data(), in.key_weight.data(),
                                r.projected_k.data(), reference);
      a.score = {.kind = EdgeScore::vector_tanh,
                 .slope = c.negative_slope,
                 .dk = r.hidden,
                 .q = r.projected_q.data(),
                 .k = r.projected_k.data(),
                 .att = in.att.data()};
      break;
    }
  }
  if (!in.edge_attr.empty() || !in.edge_proj.empty()) {
    if (c.score != Score::gatv2 && c.score != Score::perceptron && c.score != Score::dot_product)
      raise<InvalidArgument>(
          where(c, in.edge_attr.empty() ? "edge_proj" : "edge_attr"), " was given but score '",
          to_string(c.score),
          "' does not use it (edge attributes go inside the gatv2 or perceptron activation, "
          "or into dot_product's keys and values)");
    if (in.edge_attr.empty() || in.edge_proj.empty())
      raise<InvalidArgument>(where(c, in.edge_attr.empty() ? "edge_attr" : "edge_proj"),
                             " is missing: edge_attr [E, F_e] and edge_proj [H, Dk, F_e] go together");
    if (in.edge_attr.rank() != 2 || in.edge_attr.dim(0) != r.num_edges)
      raise<ShapeError>(where(c, "edge_attr"), " has shape ", in.edge_attr.shape().str(),
                        ", expected [num_edges=", r.num_edges, ", F_e]");
    const int64_t fe = in.edge_attr.dim(1);
    check_operand(c, "edge_proj", in.edge_proj, {r.heads, a.score.dk, fe});
    if (c.score == Score::dot_product && r.dv != r.dk)
      raise<ShapeError>(where(c, "edge_proj"),
                        ": dot_product adds the projected edge attributes to keys and values, ",
                        "so they need one width; found key dim ", r.dk, " and value dim ", r.dv);
    a.score.ea = in.edge_attr.data();
    a.score.we = in.edge_proj.data();
    a.score.fe = fe;
    if (r.path == AttentionPath::dense) {  // the dense path's GEMM scores have no per-edge term
      if (c.path == AttentionPath::dense)
        raise<InvalidArgument>(where(c, "edge_attr"),
                               ": path=dense does not take edge attributes; use path=sparse");
      r.path = AttentionPath::sparse;
    }
  }
  // An inf or NaN in q, k or v, where whole tiles may run (masked_tiles_may_run), would reach
  // rows that do not attend its source; such operands go to the per-edge kernels, which touch
  // edges only (as the reference does). attention_backward scans the output gradient as well.
  if (masked_tiles_may_run(r) && (has_non_finite(a.score.k, r.num_src * r.heads * r.dk) ||
                                  has_non_finite(a.v, r.num_src * r.heads * r.dv) ||
                                  has_non_finite(a.score.q, r.num_dst * r.heads * r.dk))) {
    a.masked_non_finite = true;
    if (c.path == AttentionPath::automatic) r.path = AttentionPath::sparse;
  }
  return r;
}

// Materialises the pattern only when it is not already a Graph.
const Graph& as_graph(const Pattern& p, std::optional<Graph>& storage) {
  if (const Graph* g = std::get_if<Graph>(&p)) return *g;
  storage = materialize(p);
  return *storage;
}

// The additive score's node terms from the value: sd_i = <a_dst, v_i> for i < Nd and
// ss_j = <a_src, v_j>, into node_scores [Nd + Ns, H] (sd's rows first), in one sweep over v: both
// terms of a row while it is in cache (8 heads x 8 with dot_8x8, in its order of sums; other
// shapes with head_scores_rows). Serial on the reference path; the bits are the same either way.
void value_head_scores(const Prepared& r, const AttentionInputs& in, Tensor& node_scores, bool serial) {
  const int64_t heads = r.heads, dv = r.dv, nd = r.num_dst, width = heads * dv;
  const float *v = in.value.data(), *a_dst = in.att_dst.data(), *a_src = in.att_src.data();
  float* sd = node_scores.data();
  float* ss = sd + nd * heads;
  const bool gat_8x8 = heads == 8 && dv == 8;
  auto score = [&](const float* vj, const float* a, float* s) {
    if (gat_8x8)
      kernels::dot_8x8(vj, a, s);
    else
      kernels::head_scores_rows(1, heads, dv, vj, a, s);
  };
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      score(v + j * width, a_src, ss + j * heads);
      if (j < nd) score(v + j * width, a_dst, sd + j * heads);
    }
  };
  if (serial)
    rows(0, r.num_src);
  else  // pieces of ~64 KiB of v, and at least 8 of them (one head's 7-float rows: 2 of 2340 and 368)
    parallel_for(0, r.num_src,
                 std::max<int64_t>(
                     16, std::min((int64_t{16} << 10) / std::max<int64_t>(width, 1), (r.num_src + 7) / 8)),
                 rows);
}

// HeadCombine::mean: out[i, d] = sum over h of per_head[i, h, d] / H, summed in head order from a
// zero start, rows in parallel pieces (each element's sum is one thread's: the bits do not depend
// on the thread count). forward_as_given skips it for one head, whose mean is the head itself.
Tensor mean_of_heads(const Tensor& per_head, int64_t nd, int64_t heads, int64_t dv) {
  Tensor out = Tensor::uninitialized({nd, dv});
  const float inv = 1.f / static_cast<float>(heads);
  const float* p = per_head.data();
  float* o = out.data();
  const int64_t width = heads * dv;
  parallel_for(0, nd, std::max<int64_t>(64, (int64_t{16} << 10) / std::max<int64_t>(width, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end; ++i) {
                   float* __restrict oi = o + i * dv;
                   const float* __restrict pi = p + i * width;
                   for (int64_t d = 0; d < dv; ++d) oi[d] = 0.f;
                   for (int64_t h = 0; h < heads; ++h)
                     for (int64_t d = 0; d < dv; ++d) oi[d] += pi[h * dv + d] * inv;
                 }
               });
  return out;
}

// The backward of mean_of_heads: d per_head[i, h, d] = grad_out[i, d] / H for every head h.
Tensor heads_of_mean_grad(ConstView grad_out, int64_t nd, int64_t heads, int64_t dv) {
  Tensor g = Tensor::uninitialized({nd, heads, dv});  // every element is written below
  const float inv = 1.f / static_cast<float>(heads);
  const float* go = grad_out.data();
  float* gd = g.data();
  const int64_t width = heads * dv;
  parallel_for(0, nd, std::max<int64_t>(64, (int64_t{16} << 10) / std::max<int64_t>(width, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end; ++i) {
                   const float* __restrict gi = go + i * dv;
                   float* __restrict row = gd + i * width;
                   for (int64_t h = 0; h < heads; ++h)
                     for (int64_t d = 0; d < dv; ++d) row[h * dv + d] = gi[d] * inv;
                 }
               });
  return g;
}

// The kernels' node terms from value_head_scores' [Nd + Ns, H]. With one head the per-edge
// kernels also get a_src, so that they compute a source's term from the value row they gather
// for each edge (ScoreArgs::ss_att) instead of gathering it too: at 8 floats a value row, two
// random lines an edge become one. Eight heads gather a 256-byte value row and a 32-byte term
// row an edge; taking their terms from the value row too (dot_8x8, the bits above) was measured
// on the 1M/10M GAT epoch and not kept: the forward's samples fell 6% (the term array mostly hits
// in the last-level cache), the backward's destination pass rose 25% (it computes the terms in
// both sweeps of a row), and gat_attention kept 64 MB of node_scores more (bench/RESULTS.md).
void set_node_scores(Prepared& prep, const AttentionInputs& in, const Tensor& node_scores) {
  prep.args.score.sd = node_scores.data();
  prep.args.score.ss = node_scores.data() + prep.num_dst * prep.heads;
  if (prep.heads == 1) prep.args.score.ss_att = in.att_src.data();
}

}  // namespace

const char* to_string(Score s) {
  switch (s) {
    case Score::dot_product:
      return "dot_product";
    case Score::additive:
      return "additive";
    case Score::gatv2:
      return "gatv2";
    case Score::bilinear:
      return "bilinear";
    case Score::perceptron:
      return "perceptron";
  }
  return "?";
}

const char* to_string(Normalization n) { return n == Normalization::softmax ? "softmax" : "relu"; }

const char* to_string(AttentionPath p) {
  switch (p) {
    case AttentionPath::automatic:
      return "automatic";
    case AttentionPath::sparse:
      return "sparse";
    case AttentionPath::dense:
      return "dense";
    case AttentionPath::reference:
      return "reference";
    case AttentionPath::cuda:
      return "cuda";
  }
  return "?";
}

Score parse_score(const std::string& name) {
  if (name == "dot_product" || name == "dot" || name == "scaled_dot_product") return Score::dot_product;
  if (name == "additive" || name == "gat") return Score::additive;
  if (name == "gatv2") return Score::gatv2;
  if (name == "bilinear" || name == "general") return Score::bilinear;
  if (name == "perceptron" || name == "concat") return Score::perceptron;
  raise<InvalidArgument>(
      "unknown score '", name,
      "', expected one of: dot_product (also dot, scaled_dot_product), additive (gat), gatv2, "
      "bilinear (general), perceptron (concat, Luong et al.'s name)");
}

namespace {

// The structured pattern an explicit graph equals (complete, causal, sliding window), on every
// CPU path but the reference (the oracle takes the graph as given): users who pass a dense or
// banded mask as edges get the structured kernels, with the same CSR edge numbering
// (graph/pattern.hpp: structured_equivalent). The cuda path runs any pattern as its graph.
std::optional<Pattern> routed_pattern(const Pattern& pattern, const AttentionConfig& config) {
  if (config.path == AttentionPath::reference || config.path == AttentionPath::cuda) return std::nullopt;
  const Graph* g = std::get_if<Graph>(&pattern);
  return g ? structured_equivalent(*g) : std::nullopt;
}

// AttentionResult::pattern: describe(), and for a graph 64 row offsets and 64 columns mixed in, so
// that two graphs of one size but different edges differ here too (O(1), not a hash of the CSR).
std::string pattern_signature(const Pattern& pattern) {
  std::string sig = describe(pattern);
  if (const Graph* g = std::get_if<Graph>(&pattern)) {
    const auto rows = g->row_ptr();
    const auto cols = g->col_idx();
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ull + (h >> 29); };
    for (size_t k = 0; k < 64 && !rows.empty(); ++k)
      mix(static_cast<uint64_t>(rows[k * (rows.size() - 1) / 63]));
    for (size_t k = 0; k < 64 && !cols.empty(); ++k)
      mix(static_cast<uint64_t>(static_cast<uint32_t>(cols[k * (cols.size() - 1) / 63])));
    char buf[24];
    std::snprintf(buf, sizeof buf, "#%016llx", static_cast<unsigned long long>(h));
    sig += buf;
  }
  return sig;
}

void check_forward_pattern(const Pattern& pattern, const AttentionResult& forward) {
  if (forward.pattern.empty()) return;
  const std::string now = pattern_signature(pattern);
  if (now != forward.pattern)
    raise<InvalidArgument>("attention_backward: the pattern is ", now, ", but the forward ran on ",
                           forward.pattern, ": pass the pattern (and the inputs) the forward was given");
}

// attention_forward on the pattern as routed (structured_equivalent), without the signature.
AttentionResult forward_as_given(const Pattern& pattern, const AttentionInputs& inputs,
                                 const AttentionConfig& config) {
  if (const std::optional<Pattern> s = routed_pattern(pattern, config))
    return forward_as_given(*s, inputs, config);
  Prepared prep = prepare(pattern, inputs, config);
  AttentionResult result;
  result.path = prep.path;
  if (prep.from_value) {
    result.node_scores = Tensor::uninitialized({prep.num_dst + prep.num_src, prep.heads});
    value_head_scores(prep, inputs, result.node_scores, prep.path == AttentionPath::reference);
    set_node_scores(prep, inputs, result.node_scores);
  }
  // Every backend writes out and lse in full (kernels::ForwardBuffers), so neither is zero-filled.
  Tensor per_head = Tensor::uninitialized({prep.num_dst, prep.heads, prep.dv});
  if (config.normalization == Normalization::softmax)
    result.row_stats = Tensor::uninitialized({prep.num_dst, prep.heads});
  if (config.return_attention) result.attention = Tensor({prep.num_edges, prep.heads});
  if (config.save_for_backward && prep.path == AttentionPath::sparse &&
      kernels::parallel_dst_terms_apply(pattern, prep.args))
    result.dst_terms = Tensor::uninitialized({prep.num_dst, 2, prep.heads, prep.dv});  // written in full
  const kernels::ForwardBuffers buffers{per_head.data(), result.row_stats.data(),
                                        config.return_attention ? result.attention.data() : nullptr,
                                        result.dst_terms.data()};
  switch (prep.path) {
    case AttentionPath::reference: {
      std::optional<Graph> storage;
      kernels::reference_forward(as_graph(pattern, storage), prep.args, buffers);
      break;
    }
    case AttentionPath::cuda: {
      std::optional<Graph> storage;
      kernels::cuda_forward(as_graph(pattern, storage), prep.args, buffers);
      break;
    }
    case AttentionPath::dense:
      kernels::dense_forward(pattern, prep.args, buffers);
      break;
    default:
      kernels::parallel_forward(pattern, prep.args, buffers);
  }
  // The mean of one head is that head: its buffer, reshaped to [Nd, dv] without a copy.
  if (config.combine == HeadCombine::concat)
    result.out = std::move(per_head);
  else if (prep.heads == 1)
    result.out = std::move(per_head).reshaped({prep.num_dst, prep.dv});
  else
    result.out = mean_of_heads(per_head, prep.num_dst, prep.heads, prep.dv);
  return result;
}

}  // namespace

AttentionResult attention_forward(const Pattern& pattern, const AttentionInputs& inputs,
                                  const AttentionConfig& config) {
  AttentionResult result = forward_as_given(pattern, inputs, config);
  result.pattern = pattern_signature(pattern);
  return result;
}

namespace {

// True when [a, a + an) and [b, b + bn) share a float.
bool overlaps(const float* a, int64_t an, const float* b, int64_t bn) {
  if (!a || !b || an <= 0 || bn <= 0) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + static_cast<uintptr_t>(bn) * sizeof(float) &&
         b0 < a0 + static_cast<uintptr_t>(an) * sizeof(float);
}

// attention_backward's body. With `to_caller`, `value_grad` receives the value gradient instead of
// AttentionGrads::value (see the public overload).
AttentionGrads backward(const Pattern& pattern, const AttentionInputs& inputs, const AttentionConfig& config,
                        const AttentionResult& forward, ConstView grad_out, bool to_caller, View value_grad) {
  if (const std::optional<Pattern> s = routed_pattern(pattern, config))  // as attention_forward routed it
    return backward(*s, inputs, config, forward, grad_out, to_caller, value_grad);
  Prepared prep = prepare(pattern, inputs, config);
  prep.path = forward.path;  // backward runs where forward ran
  const int64_t nd = prep.num_dst, ns = prep.num_src, h = prep.heads;
  if (config.normalization == Normalization::softmax)
    check_shape("attention_backward: forward.row_stats", forward.row_stats, {nd, h});
  if (prep.from_value) {
    check_shape("attention_backward: forward.node_scores (attention_forward's, with att_dst/att_src)",
                forward.node_scores, {nd + ns, h});
    set_node_scores(prep, inputs, forward.node_scores);
  }

  // Per-head output gradient [Nd, H, Dv].
  Tensor dout_storage;
  const float* dout = grad_out.data();
  if (config.combine == HeadCombine::concat) {
    check_shape("attention_backward: grad_out", grad_out, {nd, h, prep.dv});
  } else {
    check_shape("attention_backward: grad_out", grad_out, {nd, prep.dv});
    // One head: d out / d per_head = 1, and g * 1 is g, so the gradient is read as given.
    if (h > 1) {
      dout_storage = heads_of_mean_grad(grad_out, nd, h, prep.dv);
      dout = dout_storage.data();
    }
  }
  // An inf or NaN in the output gradient: as one in q, k or v (prepare), for the key and value
  // gradients of the sources its row does not attend.
  if (masked_tiles_may_run(prep) && !prep.args.masked_non_finite && has_non_finite(dout, nd * h * prep.dv)) {
    prep.args.masked_non_finite = true;
    if (config.path == AttentionPath::automatic) prep.path = AttentionPath::sparse;
  }

  // The value gradient goes straight into value_grad when the backend writes every element of dv
  // once, after its last read of v_j (the per-edge sparse backward: its source pass reads v_j only
  // in the task that writes dv_j), and value_grad is the value itself or shares no memory with any
  // other operand. Otherwise it is computed aside and copied at the end, after every read.
  bool direct = false;
  if (to_caller) {
    check_shape("attention_backward: value_grad (expected the shape of value)", value_grad,
                {inputs.value.dim(0), inputs.value.dim(1), inputs.value.dim(2)});
    const int64_t n = value_grad.numel();
    float* target = value_grad.data();
    const bool in_place = target == inputs.value.data();
    direct = prep.path == AttentionPath::sparse &&
             kernels::parallel_backward_writes_each_dv_once(pattern, prep.args);
    if (!in_place && overlaps(target, n, inputs.value.data(), inputs.value.numel())) direct = false;
    for (ConstView other :
         {inputs.query, inputs.key, inputs.score_dst, inputs.score_src, inputs.weight, inputs.key_weight,
          inputs.att, inputs.edge_bias, inputs.score_edge, inputs.edge_attr, inputs.edge_proj, inputs.att_dst,
          inputs.att_src, grad_out, ConstView(forward.row_stats), ConstView(forward.out),
          ConstView(forward.node_scores), ConstView(forward.dst_terms)})
      if (overlaps(target, n, other.data(), other.numel())) direct = false;
  }
  // The per-edge backward writes every element of dv, dq, dk, dsd, dss, dbias and dse once; the other
  // backends accumulate into zeroed buffers (d att always does).
  const bool writes_all = prep.path == AttentionPath::sparse &&
                          kernels::parallel_backward_writes_each_dv_once(pattern, prep.args);
  const auto grad = [&](Shape shape) { return writes_all ? Tensor::uninitialized(shape) : Tensor(shape); };
  AttentionGrads g;
  if (!direct) g.value = grad(inputs.value.shape());
  if (!inputs.edge_bias.empty()) g.edge_bias = grad(inputs.edge_bias.shape());
  if (!inputs.edge_attr.empty()) {
    g.edge_attr = grad(inputs.edge_attr.shape());    // written once per edge by the per-edge backward
    g.edge_proj = Tensor(inputs.edge_proj.shape());  // accumulated, as d att
  }
  kernels::BackwardBuffers b;
  b.dv = direct ? value_grad.data() : g.value.data();
  b.dbias = g.edge_bias.data();
  b.dea = g.edge_attr.data();
  b.dwe = g.edge_proj.data();
  // Gradients w.r.t. the canonical (possibly projected) q and k; the additive node terms' when
  // they come from the value.
  Tensor dq_canon, dk_canon, score_grads;
  switch (config.score) {
    case Score::dot_product:
    case Score::gatv2:
      g.query = grad(inputs.query.shape());
      g.key = grad(inputs.key.shape());
      b.dq = g.query.data();
      b.dk = g.key.data();
      if (config.score == Score::gatv2) {
        g.att = Tensor(inputs.att.shape());
        b.datt = g.att.data();
      }
      break;
    case Score::additive:
      if (prep.from_value) {
        // The score gradients stay internal (the backend folds them into dv and d a_*).
        score_grads = grad({nd + ns, h});
        b.dsd = score_grads.data();
        b.dss = score_grads.data() + nd * h;
        g.att_dst = Tensor(inputs.att_dst.shape());
        g.att_src = Tensor(inputs.att_src.shape());
        b.fold_att_dst = inputs.att_dst.data();
        b.fold_att_src = inputs.att_src.data();
        b.datt_dst = g.att_dst.data();
        b.datt_src = g.att_src.data();
      } else {
        g.score_dst = grad(inputs.score_dst.shape());
        g.score_src = grad(inputs.score_src.shape());
        b.dsd = g.score_dst.data();
        b.dss = g.score_src.data();
      }
      if (!inputs.score_edge.empty()) {
        g.score_edge = grad(inputs.score_edge.shape());
        b.dse = g.score_edge.data();
      }
      break;
    case Score::bilinear:
      g.query = grad(inputs.query.shape());
      dk_canon = grad({ns, h, prep.dk});
      b.dq = g.query.data();
      b.dk = dk_canon.data();
      break;
    case Score::perceptron:
      dq_canon = grad({nd, h, prep.hidden});
      dk_canon = grad({ns, h, prep.hidden});
      g.att = Tensor(inputs.att.shape());
      b.dq = dq_canon.data();
      b.dk = dk_canon.data();
      b.datt = g.att.data();
      break;
  }

  // The destination terms serve the sparse path that wrote them, with the forward's heads.
  const float* dst_terms = nullptr;
  if (!forward.dst_terms.absent() && prep.path == AttentionPath::sparse) {
    check_shape("attention_backward: forward.dst_terms", forward.dst_terms, {nd, 2, h, prep.dv});
    if (kernels::parallel_dst_terms_apply(pattern, prep.args)) dst_terms = forward.dst_terms.data();
  }
  const kernels::BackwardInputs bin{dout, forward.row_stats.absent() ? nullptr : forward.row_stats.data(),
                                    config.combine == HeadCombine::concat ? forward.out.data() : nullptr,
                                    dst_terms};
  switch (prep.path) {
    case AttentionPath::reference: {
      std::optional<Graph> storage;
      kernels::reference_backward(as_graph(pattern, storage), prep.args, bin, b);
      break;
    }
    case AttentionPath::cuda: {
      std::optional<Graph> storage;
      kernels::cuda_backward(as_graph(pattern, storage), prep.args, bin, b);
      break;
    }
    case AttentionPath::dense:
      kernels::dense_backward(pattern, prep.args, bin, b);
      break;
    default:
      kernels::parallel_backward(pattern, prep.args, bin, b);
  }

  const bool reference = prep.path == AttentionPath::reference;
  if (config.score == Score::bilinear) {  // key' = W key
    g.key = Tensor(inputs.key.shape());
    g.weight = Tensor(inputs.weight.shape());
    kernels::head_map_backward({ns, h, prep.dk, prep.dk}, inputs.key.data(), inputs.weight.data(),
                               dk_canon.data(), g.key.data(), g.weight.data(), reference);
  } else if (config.score == Score::perceptron) {  // q' = W q, k' = U k
    g.query = Tensor(inputs.query.shape());
    g.key = Tensor(inputs.key.shape());
    g.weight = Tensor(inputs.weight.shape());
    g.key_weight = Tensor(inputs.key_weight.shape());
    kernels::head_map_backward({nd, h, prep.dk, prep.hidden}, inputs.query.data(), inputs.weight.data(),
                               dq_canon.data(), g.query.data(), g.weight.data(), reference);
    kernels::head_map_backward({ns, h, prep.dk, prep.hidden}, inputs.key.data(), inputs.key_weight.data(),
                               dk_canon.data(), g.key.data(), g.key_weight.data(), reference);
  }
  if (to_caller && !direct) {  // every read of v is done: copying over it is safe now
    std::copy_n(g.value.data(), g.value.numel(), value_grad.data());
    g.value = Tensor();
  }
  return g;
}

}  // namespace

AttentionGrads attention_backward(const Pattern& pattern, const AttentionInputs& inputs,
                                  const AttentionConfig& config, const AttentionResult& forward,
                                  ConstView grad_out) {
  check_forward_pattern(pattern, forward);
  return backward(pattern, inputs, config, forward, grad_out, /*to_caller=*/false, View());
}

AttentionGrads attention_backward(const Pattern& pattern, const AttentionInputs& inputs,
                                  const AttentionConfig& config, const AttentionResult& forward,
                                  ConstView grad_out, View value_grad) {
  check_forward_pattern(pattern, forward);
  return backward(pattern, inputs, config, forward, grad_out, /*to_caller=*/true, value_grad);
}

Tensor to_input_edge_order(const Graph& graph, ConstView per_edge) {
  const auto map = graph.csr_edge_of_input();
  if (map.empty() && graph.input_edge_of_csr().empty() && graph.num_edges() > 0)  // no edges: nothing to map
    raise<GraphError>(
        "to_input_edge_order: the graph carries no input edge order (it was built from CSR); "
        "build it with build_graph to map per-edge values back");
  if (per_edge.rank() != 2)
    raise<ShapeError>("to_input_edge_order: per_edge has shape ", per_edge.shape().str(),
                      ", expected [num_edges=", graph.num_edges(), ", heads]");
  check_shape("to_input_edge_order: per_edge", per_edge, {graph.num_edges(), kAny});
  const int64_t h = per_edge.dim(1);
  Tensor out({static_cast<int64_t>(map.size()), h});
  for (size_t k = 0; k < map.size(); ++k)
    if (map[k] >= 0)
      for (int64_t c = 0; c < h; ++c) out(static_cast<int64_t>(k), c) = per_edge.data()[map[k] * h + c];
  return out;
}

}  // namespace edgeattn
