// The fused parallel kernels against the serial reference: every score and normalisation, with
// and without dropout and edge bias, concat and mean heads, on uniform and power-law graphs (with
// isolated rows and self-loops), on bipartite graphs and on every structured pattern. Plus
// bit-identical results for 1 and 2 threads, extreme logits, and weights mapped back to input order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "graph/transpose_edges.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/parallel/block_sums.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::random_tensor;

// All operands for one configuration, sized from the pattern.
struct Operands {
  Tensor query, key, value, score_dst, score_src, weight, key_weight, att, edge_bias, score_edge, edge_attr,
      edge_proj, grad_out;
  AttentionInputs inputs() const {
    AttentionInputs in{.value = value,
                       .edge_bias = edge_bias,
                       .score_edge = score_edge,
                       .edge_attr = edge_attr,
                       .edge_proj = edge_proj};
    if (!query.absent()) in.query = query, in.key = key;
    if (!score_dst.absent()) in.score_dst = score_dst, in.score_src = score_src;
    if (!weight.absent()) in.weight = weight;
    if (!key_weight.absent()) in.key_weight = key_weight;
    if (!att.absent()) in.att = att;
    return in;
  }
};

// `bias`: an edge bias, and for the additive score also its per-edge term inside the activation
// (score_edge); `edge_term` adds score_edge alone (additive), or edge attributes with their
// projection (gatv2, perceptron).
Operands make_operands(const Pattern& p, const AttentionConfig& c, int64_t heads, int64_t dk, int64_t dv,
                       bool bias, uint64_t seed, bool edge_term = false) {
  const int64_t nd = num_dst(p), ns = num_src(p), hidden = 5;
  Operands o;
  o.value = random_tensor({ns, heads, dv}, seed + 1);
  if (c.score == Score::additive) {
    o.score_dst = random_tensor({nd, heads}, seed + 2, -2.f, 2.f);
    o.score_src = random_tensor({ns, heads}, seed + 3, -2.f, 2.f);
  } else {
    o.query = random_tensor({nd, heads, dk}, seed + 4, -1.5f, 1.5f);
    o.key = random_tensor({ns, heads, dk}, seed + 5, -1.5f, 1.5f);
  }
  if (c.score == Score::bilinear) o.weight = random_tensor({heads, dk, dk}, seed + 6);
  if (c.score == Score::gatv2) o.att = random_tensor({heads, dk}, seed + 7);
  if (c.score == Score::perceptron) {
    o.weight = random_tensor({heads, hidden, dk}, seed + 6);
    o.key_weight = random_tensor({heads, hidden, dk}, seed + 8);
    o.att = random_tensor({heads, hidden}, seed + 7);
  }
  if (bias) o.edge_bias = random_tensor({num_edges(p), heads}, seed + 9, -0.5f, 0.5f);
  if ((bias || edge_term) && c.score == Score::additive)
    o.score_edge = random_tensor({num_edges(p), heads}, seed + 11, -1.5f, 1.5f);
  if (edge_term &&
      (c.score == Score::gatv2 || c.score == Score::perceptron || c.score == Score::dot_product)) {
    const int64_t fe = 3;
    o.edge_attr = random_tensor({num_edges(p), fe}, seed + 12);
    o.edge_proj =
        random_tensor({heads, c.score == Score::perceptron ? hidden : dk, fe}, seed + 13, -0.7f, 0.7f);
  }
  const int64_t out_heads = c.combine == HeadCombine::concat ? heads : 0;
  o.grad_out = out_heads ? random_tensor({nd, heads, dv}, seed + 10) : random_tensor({nd, dv}, seed + 10);
  return o;
}

// Max |a - b| / (1 + max|b|): a relative-to-scale error that is robust for values near 0.
float scaled_error(const Tensor& a, const Tensor& b) {
  if (a.absent() || b.absent()) return a.absent() == b.absent() ? 0.f : INFINITY;
  float scale = 0.f;
  for (float v : b.span()) scale = std::max(scale, std::fabs(v));
  return max_abs_diff(a, b) / (1.f + scale);
}

void expect_close(const char* what, const Tensor& got, const Tensor& want, float tol = 2e-4f) {
  ASSERT_EQ(got.absent(), want.absent()) << what;
  if (got.absent()) return;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(scaled_error(got, want), tol) << what;
}

void expect_same_grads(const AttentionGrads& a, const AttentionGrads& b, float tol = 2e-4f) {
  expect_close("d query", a.query, b.query, tol);
  expect_close("d key", a.key, b.key, tol);
  expect_close("d value", a.value, b.value, tol);
  expect_close("d score_dst", a.score_dst, b.score_dst, tol);
  expect_close("d score_src", a.score_src, b.score_src, tol);
  expect_close("d weight", a.weight, b.weight, tol);
  expect_close("d key_weight", a.key_weight, b.key_weight, tol);
  expect_close("d att", a.att, b.att, tol);
  expect_close("d edge_bias", a.edge_bias, b.edge_bias, tol);
  expect_close("d score_edge", a.score_edge, b.score_edge, tol);
  expect_close("d edge_attr", a.edge_attr, b.edge_attr, tol);
  expect_close("d edge_proj", a.edge_proj, b.edge_proj, tol);
}

// Row log-sum-exps: -inf for empty rows must match exactly; elsewhere close.
void expect_same_row_stats(const Tensor& got, const Tensor& want, float tol = 1e-4f) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t k = 0; k < want.numel(); ++k) {
    const float a = got.data()[k], b = want.data()[k];
    if (std::isinf(b)) {
      EXPECT_EQ(a, b) << "row_stats[" << k << "]";
    } else {
      EXPECT_NEAR(a, b, tol * (1.f + std::fabs(b))) << "row_stats[" << k << "]";
    }
  }
}

// Runs forward + backward on `path` and on the reference, and compares everything. Without
// `weights` the path is not asked for the attention weights (the kernels then take other routes:
// the one-head forward's batched lse), and only the reference returns them.
void check_against_reference(const Pattern& p, AttentionConfig c, AttentionPath path, bool bias,
                             int64_t heads = 3, int64_t dk = 4, int64_t dv = 5, bool edge_term = false,
                             bool weights = true) {
  const Operands o = make_operands(p, c, heads, dk, dv, bias, 42, edge_term);
  c.return_attention = true;
  c.path = AttentionPath::reference;
  const AttentionResult want = attention_forward(p, o.inputs(), c);
  const AttentionGrads want_g = attention_backward(p, o.inputs(), c, want, o.grad_out);
  c.path = path;
  c.return_attention = weights;
  const AttentionResult got = attention_forward(p, o.inputs(), c);
  EXPECT_EQ(got.path, path);
  expect_close("out", got.out, want.out);
  if (weights) expect_close("attention", got.attention, want.attention);
  if (!want.row_stats.absent()) expect_same_row_stats(got.row_stats, want.row_stats);
  const AttentionGrads got_g = attention_backward(p, o.inputs(), c, got, o.grad_out);
  expect_same_grads(got_g, want_g);
}

struct Case {
  Score score;
  Normalization norm;
  float dropout;
  bool bias;
  HeadCombine combine;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(to_string(c.score)) + "_" + to_string(c.norm) + (c.dropout > 0 ? "_dropout" : "") +
         (c.bias ? "_bias" : "") + (c.combine == HeadCombine::mean ? "_mean" : "");
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Score s : {Score::dot_product, Score::additive, Score::gatv2, Score::bilinear, Score::perceptron})
    for (Normalization n : {Normalization::softmax, Normalization::relu}) {
      cases.push_back({s, n, 0.f, false, HeadCombine::concat});
      cases.push_back({s, n, 0.3f, true, HeadCombine::concat});
      cases.push_back({s, n, 0.f, true, HeadCombine::mean});
    }
  return cases;
}

class ParallelVsReference : public ::testing::TestWithParam<Case> {
 protected:
  AttentionConfig config() const {
    const Case& k = GetParam();
    return {.score = k.score, .normalization = k.norm, .combine = k.combine, .dropout = k.dropout, .seed = 7};
  }
};

// GAT's shapes run kernels specialised at compile time (additive score, 8 heads of 8 features,
// or a single head): every normalisation, dropout, bias and head combination against the
// reference, on a graph with isolated rows and self-loops.
TEST(ParallelAttention, SpecialisedGatShapesMatchTheReference) {
  const Graph g = testing::power_law_graph(120, 900, 2);
  for (const auto& [heads, dv] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {1, 7}, {1, 16}})
    for (Normalization n : {Normalization::softmax, Normalization::relu})
      for (const auto& [dropout, bias, combine] :
           std::vector<std::tuple<float, bool, HeadCombine>>{{0.f, false, HeadCombine::concat},
                                                             {0.4f, true, HeadCombine::concat},
                                                             {0.f, true, HeadCombine::mean}}) {
        SCOPED_TRACE("heads " + std::to_string(heads) + " dv " + std::to_string(dv) + " " + to_string(n) +
                     (dropout > 0 ? " dropout" : "") + (bias ? " bias" : ""));
        const AttentionConfig c{
            .score = Score::additive, .normalization = n, .combine = combine, .dropout = dropout, .seed = 11};
        check_against_reference(g, c, AttentionPath::sparse, bias, heads, /*dk=*/4, dv);
      }
}

// GAT's output layer: one head of a few features, its rows of at most 32 edges in a loop of their
// own and every row's lse computed 64 rows at a time (without weights asked for). A graph of
// hubs (rows of more than 32 edges), isolated rows and chunks of more than 64 rows, without and
// with weights, dropout and bias, for one and two threads.
TEST(ParallelAttention, OneHeadRowsMatchTheReferenceWithAndWithoutWeights) {
  const Graph g = testing::power_law_graph(700, 6000, 3);
  int64_t long_rows = 0, empty_rows = 0;
  for (int64_t i = 0; i < g.num_dst(); ++i) {
    const int64_t degree = g.row_ptr()[i + 1] - g.row_ptr()[i];
    long_rows += degree > 32;
    empty_rows += degree == 0;
  }
  ASSERT_GT(long_rows, 0);
  ASSERT_GT(empty_rows, 0);
  const auto chunks = g.partition();
  int64_t longest_chunk = 0;
  for (size_t k = 0; k + 1 < chunks.size(); ++k)
    longest_chunk = std::max(longest_chunk, chunks[k + 1] - chunks[k]);
  ASSERT_GT(longest_chunk, 2 * 64);
  for (const int threads : {1, 2}) {
    const ThreadLimit limit(threads);
    for (const int64_t dv : {7, 3, 12})
      for (const bool weights : {false, true})
        for (const auto& [dropout, bias] : std::vector<std::pair<float, bool>>{{0.f, false}, {0.4f, true}}) {
          SCOPED_TRACE("threads " + std::to_string(threads) + " dv " + std::to_string(dv) +
                       (weights ? " weights" : "") + (dropout > 0 ? " dropout" : "") + (bias ? " bias" : ""));
          const AttentionConfig c{.score = Score::additive, .dropout = dropout, .seed = 11};
          check_against_reference(g, c, AttentionPath::sparse, bias, 1, 4, dv, false, weights);
        }
  }
}

// GAT with edge features: the additive score's per-edge term alone (no edge bias), which makes the
// source pass walk edge ids, on an explicit graph (its transpose's edge map), every structured
// pattern, and GAT's specialised shapes.
TEST(ParallelAttention, AdditiveScoreWithAPerEdgeTermMatchesTheReference) {
  for (Normalization n : {Normalization::softmax, Normalization::relu})
    for (float dropout : {0.f, 0.3f}) {
      SCOPED_TRACE(std::string(to_string(n)) + (dropout > 0 ? " dropout" : ""));
      const AttentionConfig c{.score = Score::additive, .normalization = n, .dropout = dropout, .seed = 5};
      check_against_reference(testing::power_law_graph(120, 900, 2), c, AttentionPath::sparse, false, 3, 4, 5,
                              true);
      check_against_reference(testing::uniform_graph(30, 70, 250, 3), c, AttentionPath::sparse, false, 8, 4,
                              8, true);
      check_against_reference(testing::uniform_graph(50, 50, 300, 4), c, AttentionPath::sparse, false, 1, 4,
                              7, true);
      for (const Pattern& p : {Pattern(CausalPattern(40)), Pattern(WindowPattern::sliding(50, 3, true, 2)),
                               Pattern(BlockDiagonalPattern::padded_batch(9, {9, 0, 4, 7}))})
        check_against_reference(p, c, AttentionPath::sparse, false, 2, 4, 3, true);
    }
}

// GATv2 (and the perceptron score) with edge features: projected edge attributes inside the
// activation, on explicit graphs (bipartite too) and structured patterns, including d edge_attr
// and d edge_proj.
TEST(ParallelAttention, VectorScoresWithEdgeAttributesMatchTheReference) {
  for (Score score : {Score::gatv2, Score::perceptron})
    for (Normalization n : {Normalization::softmax, Normalization::relu})
      for (float dropout : {0.f, 0.3f}) {
        SCOPED_TRACE(std::string(to_string(score)) + " " + to_string(n) + (dropout > 0 ? " dropout" : ""));
        const AttentionConfig c{.score = score, .normalization = n, .dropout = dropout, .seed = 5};
        check_against_reference(testing::power_law_graph(120, 900, 2), c, AttentionPath::sparse, false, 3, 4,
                                5, true);
        check_against_reference(testing::uniform_graph(30, 70, 250, 3), c, AttentionPath::sparse, true, 2, 4,
                                3, true);
        for (const Pattern& p : {Pattern(CausalPattern(40)), Pattern(WindowPattern::sliding(50, 3, true, 2))})
          check_against_reference(p, c, AttentionPath::sparse, false, 2, 4, 3, true);
      }
}

// TransformerConv with edge features: the dot score's projected edge attributes in keys and values
// (Dv = Dk), on explicit graphs and on the patterns the tiled and dense paths would otherwise take.
TEST(ParallelAttention, DotScoreWithEdgeAttributesMatchesTheReference) {
  for (Normalization n : {Normalization::softmax, Normalization::relu})
    for (float dropout : {0.f, 0.3f})
      for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
        SCOPED_TRACE(std::string(to_string(n)) + (dropout > 0 ? " dropout" : "") +
                     (combine == HeadCombine::mean ? " mean" : ""));
        const AttentionConfig c{.score = Score::dot_product,
                                .normalization = n,
                                .combine = combine,
                                .dropout = dropout,
                                .seed = 5};
        check_against_reference(testing::power_law_graph(120, 900, 2), c, AttentionPath::sparse, false, 3, 4,
                                4, true);
        check_against_reference(testing::uniform_graph(30, 70, 250, 3), c, AttentionPath::sparse, true, 2, 5,
                                5, true);
        for (const Pattern& p : {Pattern(CompletePattern(24, 24)), Pattern(CausalPattern(64)),
                                 Pattern(WindowPattern::sliding(50, 3, true, 2))})
          check_against_reference(p, c, AttentionPath::sparse, false, 2, 4, 4, true);
      }
  // The automatic path takes the sparse kernel for a dense pattern when edge attributes come.
  const Pattern complete = CompletePattern(16, 16);
  const Operands o = make_operands(complete, {.score = Score::dot_product}, 2, 4, 4, false, 3, true);
  EXPECT_EQ(attention_forward(complete, o.inputs(), {.score = Score::dot_product}).path,
            AttentionPath::sparse);
}

TEST(ParallelAttention, TheBackwardRefusesAPatternOtherThanTheForwards) {
  const AttentionConfig c{.score = Score::dot_product};
  const auto backward_message = [&](const Pattern& fwd, const Pattern& bwd) {
    const Operands o = make_operands(fwd, c, 2, 4, 4, false, 3);
    const AttentionResult r = attention_forward(fwd, o.inputs(), c);
    try {
      (void)attention_backward(bwd, o.inputs(), c, r, o.grad_out);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The same pattern (a copy of the graph, an equal structured pattern) is accepted.
  const Graph g = testing::uniform_graph(40, 40, 200, 1);
  const Graph copy = g;
  EXPECT_EQ(backward_message(g, copy), "no error");
  EXPECT_EQ(backward_message(CompletePattern(8, 8), CompletePattern(8, 8)), "no error");
  // Another kind, other parameters, or another graph of the same size: refused, naming both.
  EXPECT_THAT(backward_message(CompletePattern(5, 5), CausalPattern(5, 5)),
              ::testing::AllOf(::testing::HasSubstr("attention_backward: the pattern is causal"),
                               ::testing::HasSubstr("but the forward ran on complete")));
  EXPECT_THAT(backward_message(WindowPattern(30, 2, 2), WindowPattern(30, 3, 3)),
              ::testing::HasSubstr("the forward ran on window"));
  const Graph other = testing::uniform_graph(40, 40, 200, 2);
  EXPECT_THAT(backward_message(g, other), ::testing::HasSubstr("but the forward ran on graph"));
  // An explicit complete graph routes to the complete kernels; the check is on what was given.
  EXPECT_THAT(backward_message(materialize(CompletePattern(6, 6)), CompletePattern(6, 6)),
              ::testing::HasSubstr("the forward ran on graph"));
}

TEST(ParallelAttention, EdgeAttributesAreRejectedForOtherScoresAndWrongShapes) {
  const Graph g = testing::uniform_graph(10, 10, 30, 1);
  const Tensor v = random_tensor({10, 2, 3}, 1), q = random_tensor({10, 2, 4}, 3),
               att = random_tensor({2, 4}, 4);
  const int64_t e = g.num_edges();
  const Tensor ea = random_tensor({e, 5}, 5), we = random_tensor({2, 4, 5}, 6);
  const auto message = [&](const AttentionInputs& in, Score score) {
    try {
      attention_forward(g, in, {.score = score});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message({.query = q,
                       .key = q,
                       .value = v,
                       .weight = random_tensor({2, 4, 4}, 9),
                       .edge_attr = ea,
                       .edge_proj = we},
                      Score::bilinear),
              ::testing::HasSubstr("edge_attr was given but score 'bilinear' does not use it"));
  EXPECT_THAT(
      message({.query = q, .key = q, .value = v, .edge_attr = ea, .edge_proj = we}, Score::dot_product),
      ::testing::HasSubstr("key dim 4 and value dim 3"));
  try {
    const Tensor v4 = random_tensor({10, 2, 4}, 10);
    attention_forward(g, {.query = q, .key = q, .value = v4, .edge_attr = ea, .edge_proj = we},
                      {.score = Score::dot_product, .path = AttentionPath::dense});
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& err) {
    EXPECT_THAT(err.what(), ::testing::HasSubstr("path=dense does not take edge attributes"));
  }
  EXPECT_THAT(message({.query = q, .key = q, .value = v, .att = att, .edge_attr = ea}, Score::gatv2),
              ::testing::HasSubstr("edge_proj is missing"));
  EXPECT_THAT(message({.query = q,
                       .key = q,
                       .value = v,
                       .att = att,
                       .edge_attr = random_tensor({e - 1, 5}, 7),
                       .edge_proj = we},
                      Score::gatv2),
              ::testing::HasSubstr("edge_attr has shape [" + std::to_string(e - 1) +
                                   ", 5], expected [num_edges=" + std::to_string(e) + ", F_e]"));
  EXPECT_THAT(message({.query = q,
                       .key = q,
                       .value = v,
                       .att = att,
                       .edge_attr = ea,
                       .edge_proj = random_tensor({2, 4, 4}, 8)},
                      Score::gatv2),
              ::testing::HasSubstr("edge_proj"));
}

TEST(ParallelAttention, PerEdgeScoreTermIsRejectedForOtherScoresAndWrongShapes) {
  const Graph g = testing::uniform_graph(10, 10, 30, 1);
  const Tensor v = random_tensor({10, 2, 3}, 1), s = random_tensor({10, 2}, 2);
  const Tensor q = random_tensor({10, 2, 3}, 3);
  EXPECT_THROW(attention_forward(g, {.query = q, .key = q, .value = v, .score_edge = Tensor({30, 2})}),
               InvalidArgument);
  try {
    attention_forward(
        g, {.value = v, .score_dst = s, .score_src = s, .score_edge = Tensor({g.num_edges() + 1, 2})},
        {.score = Score::additive});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("score_edge"), std::string::npos) << e.what();
  }
}

TEST_P(ParallelVsReference, MatchesOnUniformRandomGraph) {
  check_against_reference(testing::uniform_graph(60, 60, 400, 1), config(), AttentionPath::sparse,
                          GetParam().bias);
}

TEST_P(ParallelVsReference, MatchesOnPowerLawGraphWithIsolatedRowsAndSelfLoops) {
  const Graph g = testing::power_law_graph(120, 900, 2);
  ASSERT_GT(g.degree_stats().isolated_rows, 0);
  ASSERT_GT(g.degree_stats().self_loops, 0);
  check_against_reference(g, config(), AttentionPath::sparse, GetParam().bias);
}

TEST_P(ParallelVsReference, MatchesOnBipartiteGraph) {
  check_against_reference(testing::uniform_graph(30, 70, 250, 3), config(), AttentionPath::sparse,
                          GetParam().bias);
}

TEST_P(ParallelVsReference, MatchesOnEveryStructuredPattern) {
  const std::vector<std::pair<std::string, Pattern>> patterns = {
      {"complete", CompletePattern(23, 31)},
      {"causal", CausalPattern(40)},
      {"causal_kv", CausalPattern(17, 40)},
      {"window", WindowPattern::sliding(50, 4)},
      {"window_causal_dilated", WindowPattern::sliding(50, 3, /*causal=*/true, /*dilation=*/2)},
      {"padded_batch", BlockDiagonalPattern::padded_batch(9, {9, 0, 4, 7})},
      {"window_global", WindowGlobalPattern(45, 2, {0, 44, 20})},
  };
  for (const auto& [name, p] : patterns) {
    SCOPED_TRACE(name);
    check_against_reference(p, config(), AttentionPath::sparse, GetParam().bias);
  }
}

INSTANTIATE_TEST_SUITE_P(AllScores, ParallelVsReference, ::testing::ValuesIn(all_cases()), case_name);

TEST(ParallelAttention, TiledKernelOnLongContiguousRowsMatchesReference) {
  // Rows of >= 64 sources take the tiled schedule (kernels/parallel/tiled_forward.cpp); row
  // tiles straddle block boundaries and windows clip at the sequence ends.
  const std::vector<std::pair<std::string, Pattern>> patterns = {
      {"complete", CompletePattern(150, 300)},
      {"causal", CausalPattern(260)},
      {"causal_kv", CausalPattern(100, 400)},
      {"window", WindowPattern::sliding(300, 40)},
      {"padded_batch", BlockDiagonalPattern::padded_batch(100, {100, 0, 70, 1})},
      // An explicit graph this full runs tiled too, its rows masked within their hulls.
      {"graph_30%", testing::uniform_graph(150, 300, 15000, 8)},
  };
  for (const auto& [name, p] : patterns)
    for (Score s : {Score::dot_product, Score::bilinear})
      for (Normalization n : {Normalization::softmax, Normalization::relu})
        for (bool extras : {false, true}) {
          SCOPED_TRACE(name + " " + to_string(s) + " " + to_string(n) + (extras ? " dropout+bias" : ""));
          AttentionConfig c{.score = s, .normalization = n, .dropout = extras ? 0.25f : 0.f, .seed = 11};
          // return_attention would route to the per-edge kernel: compare outputs without it.
          const Operands o = make_operands(p, c, 2, 16, 12, extras, 5);
          c.path = AttentionPath::reference;
          const AttentionResult want = attention_forward(p, o.inputs(), c);
          c.path = AttentionPath::sparse;
          const AttentionResult got = attention_forward(p, o.inputs(), c);
          expect_close("out", got.out, want.out);
          if (n == Normalization::softmax)
            for (int64_t k = 0; k < want.row_stats.numel(); ++k) {
              if (!std::isfinite(want.row_stats.data()[k])) continue;
              EXPECT_NEAR(got.row_stats.data()[k], want.row_stats.data()[k],
                          1e-4f * (1.f + std::fabs(want.row_stats.data()[k])));
            }
          expect_same_grads(attention_backward(p, o.inputs(), c, got, o.grad_out),
                            attention_backward(p, o.inputs(),
                                               {.score = s,
                                                .normalization = n,
                                                .dropout = c.dropout,
                                                .seed = 11,
                                                .path = AttentionPath::reference},
                                               want, o.grad_out));
        }
}

// Every element finite in `want` is finite in `got` and agrees with it; with `both_ways`, every
// element that is not finite in `want` is not in `got` either.
void expect_same_finite_elements(const char* what, const Tensor& got, const Tensor& want, bool both_ways,
                                 float tol = 2e-4f) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  float scale = 0.f;
  for (float w : want.span())
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  int64_t lost = 0, gained = 0;
  for (int64_t k = 0; k < want.numel(); ++k) {
    const float g = got.data()[k], w = want.data()[k];
    if (!std::isfinite(w))
      gained += std::isfinite(g) ? 1 : 0;
    else if (!std::isfinite(g))
      ++lost;
    else
      EXPECT_LE(std::fabs(g - w), tol * (1.f + scale)) << what << " element " << k;
  }
  EXPECT_EQ(lost, 0) << what << ": elements finite in the reference but not here";
  if (both_ways) {
    EXPECT_EQ(gained, 0) << what << ": elements not finite in the reference but finite here";
  }
}

// An inf or NaN in a key or value row reaches only the rows that attend that source (and the
// gradients that depend on those rows), on the automatic and sparse paths as on the reference: the dense and
// tiled kernels, which compute whole tiles (0 x inf = NaN at a masked pair), are not used for such operands
// on a masked pattern.
TEST(ParallelAttention, NonFiniteKeysOrValuesReachOnlyTheRowsThatAttendThem) {
  struct PatternCase {
    std::string name;
    Pattern pattern;
    int64_t nan_key, inf_value;  // sources whose key / value row is poisoned
  };
  // 100 x 100 with 10000 edges that still masks pairs: row 0 attends every source and sources
  // 0-98 twice (kept by CsrCheck::sort), row i > 0 every source but (i + 1) % 100.
  std::vector<int64_t> row_ptr{0};
  std::vector<int32_t> cols;
  for (int32_t i = 0; i < 100; ++i) {
    for (int32_t j = 0; j < 100; ++j)
      if (i == 0 || j != (i + 1) % 100) cols.push_back(j);
    if (i == 0)
      for (int32_t j = 0; j < 99; ++j) cols.push_back(j);
    row_ptr.push_back(static_cast<int64_t>(cols.size()));
  }
  const Graph repeated = Graph::from_csr(100, 100, row_ptr, cols, CsrCheck::sort);
  ASSERT_EQ(repeated.num_edges(), 100 * 100);
  const std::vector<PatternCase> patterns = {
      {"causal", CausalPattern(260), 200, 150},  // rows >= 200 (>= 150) attend them
      {"repeated_edges", repeated, 5, 5},        // only row 4 does not attend it
      {"window", WindowPattern::sliding(300, 40), 100, 250},
      // block 1 has no valid position; row 280 is past block 2's 70
      {"padded_batch", BlockDiagonalPattern::padded_batch(100, {100, 0, 70, 1}), 150, 280},
      {"graph_30%", testing::uniform_graph(150, 300, 15000, 8), 17, 255},
      {"complete", CompletePattern(150, 300), 5, 290},  // every row attends: all non-finite
  };
  for (const auto& [name, p, nan_key, inf_value] : patterns)
    for (Score s : {Score::dot_product, Score::bilinear})
      for (Normalization n : {Normalization::softmax, Normalization::relu})
        for (AttentionPath path : {AttentionPath::automatic, AttentionPath::sparse})
          for (bool query_side : {false, true}) {
            SCOPED_TRACE(name + " " + to_string(s) + " " + to_string(n) + " " + to_string(path) +
                         (query_side ? " NaN query and inf output gradient" : " NaN key and inf value"));
            AttentionConfig c{.score = s, .normalization = n, .path = AttentionPath::reference};
            Operands o = make_operands(p, c, 2, 16, 16, false, 9);
            if (query_side) {  // destination rows, here
              const int64_t i = nan_key % num_dst(p), i2 = inf_value % num_dst(p);
              for (float& x : o.query.span().subspan(static_cast<size_t>(i * 32), 32)) x = NAN;
              for (float& x : o.grad_out.span().subspan(static_cast<size_t>(i2 * 32), 32)) x = INFINITY;
            } else {
              for (float& x : o.key.span().subspan(static_cast<size_t>(nan_key * 32), 32)) x = NAN;
              for (float& x : o.value.span().subspan(static_cast<size_t>(inf_value * 32), 32)) x = INFINITY;
            }
            const AttentionResult want = attention_forward(p, o.inputs(), c);
            const AttentionGrads want_grads = attention_backward(p, o.inputs(), c, want, o.grad_out);
            int64_t finite_rows = 0;
            for (int64_t i = 0; i < num_dst(p); ++i) finite_rows += std::isfinite(want.out(i, 0, 0)) ? 1 : 0;
            if (name == "complete" && !query_side)
              EXPECT_EQ(finite_rows, 0);
            else if (name == "repeated_edges" && !query_side)
              EXPECT_EQ(finite_rows, 1);
            else
              EXPECT_GT(finite_rows, num_dst(p) / 4);  // the poison must not be everywhere
            c.path = path;
            const AttentionResult got = attention_forward(p, o.inputs(), c);
            expect_same_finite_elements("out", got.out, want.out, /*both_ways=*/true);
            // Gradients through a row that is already NaN are NaN or not by the order of operations
            // (the reference's double sums, a relu of NaN): only those finite there are compared.
            const AttentionGrads grads = attention_backward(p, o.inputs(), c, got, o.grad_out);
            expect_same_finite_elements("dq", grads.query, want_grads.query, false);
            expect_same_finite_elements("dk", grads.key, want_grads.key, false);
            expect_same_finite_elements("dv", grads.value, want_grads.value, false);
          }
}

// attention_backward(..., value_grad): the value gradient lands in the caller's buffer, or over
// the value itself, with the bits of the returned form on every path (the per-edge kernel writes
// it directly; the tiled, dense and reference paths, and a buffer that overlaps another operand,
// copy it after the last read of v).
TEST(ParallelAttention, ValueGradientIntoABufferOrOverTheValueEqualsTheReturnedOne) {
  struct Run {
    std::string name;
    Pattern pattern;
    Score score;
    AttentionPath path;
  };
  const Graph power_law = testing::power_law_graph(60, 400, 7);
  const std::vector<Run> runs = {
      {"per-edge additive", power_law, Score::additive, AttentionPath::sparse},
      {"per-edge dot", power_law, Score::dot_product, AttentionPath::sparse},
      {"per-edge bilinear", WindowPattern::sliding(50, 3), Score::bilinear, AttentionPath::sparse},
      {"tiled dot", CompletePattern(90, 120), Score::dot_product, AttentionPath::sparse},
      {"dense dot", CompletePattern(40, 40), Score::dot_product, AttentionPath::dense},
      {"reference additive", power_law, Score::additive, AttentionPath::reference},
  };
  for (const Run& run : runs)
    for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
      SCOPED_TRACE(run.name + (combine == HeadCombine::mean ? " mean" : " concat"));
      const AttentionConfig c{
          .score = run.score, .combine = combine, .dropout = 0.2f, .seed = 4, .path = run.path};
      const Operands o = make_operands(run.pattern, c, 2, 16, 8, /*bias=*/true, 9);
      const AttentionResult fwd = attention_forward(run.pattern, o.inputs(), c);
      const AttentionGrads want = attention_backward(run.pattern, o.inputs(), c, fwd, o.grad_out);
      auto expect_rest_equal = [&](const AttentionGrads& got) {
        EXPECT_TRUE(got.value.absent());
        for (const auto& [g, w] : {std::pair{&got.query, &want.query},
                                   {&got.key, &want.key},
                                   {&got.score_dst, &want.score_dst},
                                   {&got.score_src, &want.score_src},
                                   {&got.weight, &want.weight},
                                   {&got.edge_bias, &want.edge_bias}}) {
          ASSERT_EQ(g->absent(), w->absent());
          if (!w->absent()) {
            EXPECT_EQ(max_abs_diff(*g, *w), 0.f);
          }
        }
      };
      {  // a separate buffer, holding garbage: every element is written
        Tensor buffer(o.value.shape(), std::nanf(""));
        expect_rest_equal(attention_backward(run.pattern, o.inputs(), c, fwd, o.grad_out, buffer));
        EXPECT_EQ(max_abs_diff(buffer, want.value), 0.f);
      }
      {                     // over the value itself
        Operands mine = o;  // a deep copy
        expect_rest_equal(attention_backward(run.pattern, mine.inputs(), c, fwd, o.grad_out, mine.value));
        EXPECT_EQ(max_abs_diff(mine.value, want.value), 0.f);
      }
    }
  // A buffer that is another operand (here the output gradient, read by the whole backward) is
  // written only after the last read.
  const AttentionConfig c{.score = Score::additive, .path = AttentionPath::sparse};
  const Operands o = make_operands(power_law, c, 2, 4, 4, false, 3);
  const AttentionResult fwd = attention_forward(power_law, o.inputs(), c);
  const AttentionGrads want = attention_backward(power_law, o.inputs(), c, fwd, o.grad_out);
  Tensor shared = o.grad_out;
  (void)attention_backward(power_law, o.inputs(), c, fwd, shared, shared);
  EXPECT_EQ(max_abs_diff(shared, want.value), 0.f);
  Tensor wrong({60, 2, 5});
  EXPECT_THROW((void)attention_backward(power_law, o.inputs(), c, fwd, o.grad_out, wrong), ShapeError);
}

TEST(ParallelAttention, SparseKernelsOnStructuredPatternsMatchTheDensePath) {
  // Dense attention with a mask is the classical formulation; every structured pattern, short rows
  // (per-edge kernel) and long rows (tiled kernel), must agree with it.
  const std::vector<std::pair<std::string, Pattern>> patterns = {
      {"complete", CompletePattern(300, 300)},
      {"complete_short", CompletePattern(40, 30)},
      {"causal", CausalPattern(300)},
      {"window", WindowPattern::sliding(400, 70)},
      {"window_short", WindowPattern::sliding(100, 3)},
      {"padded_batch", BlockDiagonalPattern::padded_batch(128, {128, 5, 0, 90})},
      {"window_global", WindowGlobalPattern(200, 8, {0, 100})},
  };
  for (const auto& [name, p] : patterns)
    for (Normalization n : {Normalization::softmax, Normalization::relu}) {
      SCOPED_TRACE(name + " " + to_string(n));
      AttentionConfig c{.normalization = n, .dropout = 0.1f, .seed = 3};
      const Operands o = make_operands(p, c, 2, 32, 16, /*bias=*/true, 8);
      c.path = AttentionPath::dense;
      const AttentionResult dense = attention_forward(p, o.inputs(), c);
      const AttentionGrads dense_g = attention_backward(p, o.inputs(), c, dense, o.grad_out);
      c.path = AttentionPath::sparse;
      const AttentionResult sparse = attention_forward(p, o.inputs(), c);
      expect_close("out", sparse.out, dense.out);
      expect_same_grads(attention_backward(p, o.inputs(), c, sparse, o.grad_out), dense_g);
    }
}

TEST(ParallelAttention, LargeHeadAndFeatureDimsMatchReference) {
  check_against_reference(testing::power_law_graph(200, 3000, 4), {.score = Score::dot_product},
                          AttentionPath::sparse, true, /*heads=*/8, /*dk=*/64, /*dv=*/64);
  check_against_reference(testing::power_law_graph(200, 3000, 4), {.score = Score::additive},
                          AttentionPath::sparse, false, /*heads=*/8, /*dk=*/8, /*dv=*/8);
}

TEST(ParallelAttention, ResultsAreBitIdenticalForOneAndTwoThreads) {
  const Graph g = testing::power_law_graph(3000, 60000, 5);
  for (Score s : {Score::dot_product, Score::additive, Score::gatv2}) {
    SCOPED_TRACE(to_string(s));
    AttentionConfig c{
        .score = s, .dropout = 0.2f, .seed = 3, .return_attention = true, .path = AttentionPath::sparse};
    const Operands o = make_operands(g, c, 4, 8, 8, true, 9);
    auto run = [&](int threads) {
      ThreadLimit limit(threads);
      AttentionResult r = attention_forward(g, o.inputs(), c);
      AttentionGrads d = attention_backward(g, o.inputs(), c, r, o.grad_out);
      return std::make_pair(std::move(r), std::move(d));
    };
    const auto [r1, g1] = run(1);
    const auto [r2, g2] = run(2);
    EXPECT_EQ(max_abs_diff(r1.out, r2.out), 0.f);
    EXPECT_EQ(max_abs_diff(r1.attention, r2.attention), 0.f);
    EXPECT_EQ(max_abs_diff(g1.value, g2.value), 0.f);
    EXPECT_EQ(max_abs_diff(g1.edge_bias, g2.edge_bias), 0.f);
    if (!g1.score_edge.absent()) {
      EXPECT_EQ(max_abs_diff(g1.score_edge, g2.score_edge), 0.f);
    }
    if (!g1.query.absent()) {
      EXPECT_EQ(max_abs_diff(g1.query, g2.query), 0.f);
    }
    if (!g1.key.absent()) {
      EXPECT_EQ(max_abs_diff(g1.key, g2.key), 0.f);
    }
    if (!g1.att.absent()) {
      EXPECT_EQ(max_abs_diff(g1.att, g2.att), 0.f);
    }
    if (!g1.score_src.absent()) {
      EXPECT_EQ(max_abs_diff(g1.score_src, g2.score_src), 0.f);
    }
  }
}

// Puts the edge-records switch back to automatic when a test that forces it ends, pass or fail.
struct RestoreEdgeRecords {
  RestoreEdgeRecords() = default;
  RestoreEdgeRecords(const RestoreEdgeRecords&) = delete;
  RestoreEdgeRecords& operator=(const RestoreEdgeRecords&) = delete;
  ~RestoreEdgeRecords() { kernels::set_edge_records(kernels::EdgeRecords::automatic); }
};

// The sparse backward's edge records (kernels/attention_backend.hpp: EdgeRecords): the source pass
// reading the destination pass's per-edge weight and score gradient gives the recomputing pass's
// gradients bit for bit, for GAT's specialised shapes (8 x 8, and one head: its passes' per-edge
// arrays) and a generic one, with and without dropout, on a
// square and on a bipartite (sampled-block-like) graph, with the output given for D_i (concat) or
// not (mean: the two-sweep destination pass).
TEST(ParallelAttention, EdgeRecordsGiveTheRecomputedGradientsBitForBit) {
  const RestoreEdgeRecords restore;
  const Graph square = testing::power_law_graph(2000, 30000, 8);
  const Graph bipartite = testing::uniform_graph(700, 2500, 6000, 4);
  const Graph long_columns = testing::uniform_graph(3000, 50, 20000, 6);  // ~400 in-edges a source
  // The same graphs with 64-bit transpose edge ids (what a graph of 2^31 edges or more gets).
  detail::set_narrow_edge_limit(0);
  const Graph square_wide = testing::power_law_graph(2000, 30000, 8);
  const Graph bipartite_wide = testing::uniform_graph(700, 2500, 6000, 4);
  const Graph long_columns_wide = testing::uniform_graph(3000, 50, 20000, 6);
  ASSERT_TRUE(square_wide.transpose_edges().is_wide() && bipartite_wide.transpose_edges().is_wide() &&
              long_columns_wide.transpose_edges().is_wide());
  detail::set_narrow_edge_limit(std::numeric_limits<int32_t>::max());
  ASSERT_FALSE(square.transpose_edges().is_wide());
  // Columns of several blocks of summed terms (block_sums.hpp: kSumBlock), of lengths that are not
  // a multiple of one: the two source passes must cut their sums into the same blocks.
  const auto& col_ptr = long_columns.transpose().col_ptr;
  int64_t odd_long_columns = 0;
  for (size_t j = 0; j + 1 < col_ptr.size(); ++j) {
    const int64_t length = col_ptr[j + 1] - col_ptr[j];
    odd_long_columns += length > 2 * kernels::kSumBlock && length % kernels::kSumBlock != 0;
  }
  ASSERT_GT(odd_long_columns, 10);
  for (const auto& [g, wide] : {std::pair{&square, &square_wide}, std::pair{&bipartite, &bipartite_wide},
                                std::pair{&long_columns, &long_columns_wide}})
    for (const auto& [heads, dv] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {1, 7}, {3, 5}})
      for (const float dropout : {0.f, 0.3f})
        for (const HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
          SCOPED_TRACE(g->describe() + " heads " + std::to_string(heads) + " dv " + std::to_string(dv) +
                       " dropout " + std::to_string(dropout) + (combine == HeadCombine::mean ? " mean" : ""));
          const AttentionConfig c{.score = Score::additive,
                                  .combine = combine,
                                  .dropout = dropout,
                                  .seed = 7,
                                  .path = AttentionPath::sparse};
          const Operands o = make_operands(*g, c, heads, 4, dv, false, 13);
          auto run = [&](kernels::EdgeRecords mode) {
            kernels::set_edge_records(mode);
            const AttentionResult r = attention_forward(*g, o.inputs(), c);
            return attention_backward(*g, o.inputs(), c, r, o.grad_out);
          };
          const AttentionGrads with = run(kernels::EdgeRecords::always);
          const AttentionGrads without = run(kernels::EdgeRecords::never);
          EXPECT_EQ(max_abs_diff(with.value, without.value), 0.f);
          EXPECT_EQ(max_abs_diff(with.score_src, without.score_src), 0.f);
          EXPECT_EQ(max_abs_diff(with.score_dst, without.score_dst), 0.f);
          EXPECT_GT(max_abs_diff(with.score_src, Tensor(with.score_src.shape())), 0.f);  // not all zero
          kernels::set_edge_records(kernels::EdgeRecords::always);
          const AttentionResult r = attention_forward(*wide, o.inputs(), c);
          const AttentionGrads with_wide = attention_backward(*wide, o.inputs(), c, r, o.grad_out);
          EXPECT_EQ(max_abs_diff(with_wide.value, without.value), 0.f);
          EXPECT_EQ(max_abs_diff(with_wide.score_src, without.score_src), 0.f);
        }
}

// The forward with or without its destination terms (checking it kept them when asked), then the
// backward, at a thread count.
std::pair<AttentionResult, AttentionGrads> forward_backward_saving(const Graph& g, const Operands& o,
                                                                   AttentionConfig c, bool save,
                                                                   int threads) {
  ThreadLimit limit(threads);
  c.save_for_backward = save;
  AttentionResult r = attention_forward(g, o.inputs(), c);
  EXPECT_EQ(r.dst_terms.absent(), !save);
  AttentionGrads d = attention_backward(g, o.inputs(), c, r, o.grad_out);
  return {std::move(r), std::move(d)};
}

// The forward's destination terms (AttentionConfig::save_for_backward, AttentionResult::dst_terms):
// kept for GAT's 8 x 8 additive softmax (and one head: the next test) over explicit graphs only;
// with them the backward's destination pass reads O_i and V_i instead of the row's edges. With
// concatenated heads the source-side gradients are the recomputing pass's bit for bit (averaged
// heads: to rounding, as D_i = <dO_i, O_i> replaces the sum over the row); d score_dst, now
// <dO_i, V_i> instead of a sum over the edges, agrees to float rounding. On a square and on a
// bipartite graph (rows with no edges included), with and without dropout, concatenated or
// averaged heads, and for one and two threads.
TEST(ParallelAttention, DestinationTermsGiveTheSameGradientsToRounding) {
  const RestoreEdgeRecords restore;
  const Graph square = testing::power_law_graph(2000, 30000, 8);
  const Graph bipartite = testing::uniform_graph(700, 2500, 3000, 4);
  for (const Graph* g : {&square, &bipartite})
    for (const float dropout : {0.f, 0.3f})
      for (const HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
        SCOPED_TRACE(g->describe() + " dropout " + std::to_string(dropout) +
                     (combine == HeadCombine::mean ? " mean" : ""));
        AttentionConfig c{.score = Score::additive,
                          .combine = combine,
                          .dropout = dropout,
                          .seed = 7,
                          .path = AttentionPath::sparse};
        const Operands o = make_operands(*g, c, 8, 8, 8, false, 13);
        auto run = [&](bool save, int threads) { return forward_backward_saving(*g, o, c, save, threads); };
        kernels::set_edge_records(kernels::EdgeRecords::never);  // the recomputing source pass
        const auto [r0, without] = run(false, 2);
        kernels::set_edge_records(kernels::EdgeRecords::always);  // the terms on a graph this small
        const auto [r1, with] = run(true, 2);
        EXPECT_EQ(max_abs_diff(r0.out, r1.out), 0.f);
        if (combine == HeadCombine::concat) {  // D_i = <dO_i, O_i> both ways
          EXPECT_EQ(max_abs_diff(with.value, without.value), 0.f);
          EXPECT_EQ(max_abs_diff(with.score_src, without.score_src), 0.f);
        } else {  // without the terms, D_i is summed over the row's edges (no per-head output)
          EXPECT_LE(max_abs_diff(with.value, without.value), 1e-6f);
          EXPECT_LE(max_abs_diff(with.score_src, without.score_src), 1e-6f);
        }
        const float scale = max_abs_diff(without.score_dst, Tensor(without.score_dst.shape()));
        EXPECT_GT(scale, 0.f);
        EXPECT_LE(max_abs_diff(with.score_dst, without.score_dst), 1e-5f * scale);
        const auto [r2, with_one_thread] = run(true, 1);
        EXPECT_EQ(max_abs_diff(r1.dst_terms, r2.dst_terms), 0.f);
        EXPECT_EQ(max_abs_diff(with.score_dst, with_one_thread.score_dst), 0.f);
        EXPECT_EQ(max_abs_diff(with.value, with_one_thread.value), 0.f);
      }
  // Not kept: other shapes, an edge bias, a structured pattern, the reference path, records off,
  // or (automatic) source rows that fit in cache.
  const AttentionConfig c{.score = Score::additive, .save_for_backward = true, .path = AttentionPath::sparse};
  EXPECT_TRUE(
      attention_forward(square, make_operands(square, c, 3, 5, 5, false, 2).inputs(), c).dst_terms.absent());
  EXPECT_TRUE(
      attention_forward(square, make_operands(square, c, 8, 8, 8, true, 2).inputs(), c).dst_terms.absent());
  const Pattern complete = CompletePattern(40, 40);
  EXPECT_TRUE(attention_forward(complete, make_operands(complete, c, 8, 8, 8, false, 2).inputs(), c)
                  .dst_terms.absent());
  AttentionConfig reference = c;
  reference.path = AttentionPath::reference;
  EXPECT_TRUE(attention_forward(square, make_operands(square, c, 8, 8, 8, false, 2).inputs(), reference)
                  .dst_terms.absent());
  kernels::set_edge_records(kernels::EdgeRecords::never);
  EXPECT_TRUE(
      attention_forward(square, make_operands(square, c, 8, 8, 8, false, 2).inputs(), c).dst_terms.absent());
  kernels::set_edge_records(kernels::EdgeRecords::automatic);
  EXPECT_TRUE(
      attention_forward(square, make_operands(square, c, 8, 8, 8, false, 2).inputs(), c).dst_terms.absent());
  // A sampled block's shape: 60k sources, 17 MB of gathered rows, beyond the cache.
  const Graph block = testing::uniform_graph(1000, 60000, 5000, 9);
  EXPECT_FALSE(
      attention_forward(block, make_operands(block, c, 8, 8, 8, false, 2).inputs(), c).dst_terms.absent());
}

// The same terms for one head (GAT's output layer): O_i and V_i [dv] a row, kept for graphs whose
// gathered source rows exceed the cache. Rows of up to 32 edges and 8 features take the short-row
// loop, longer or wider ones the blocked one (the power-law graph's hubs, dv = 12); source terms
// rising with the source's id (a ramp to 40) make a long row's later blocks raise its shift,
// rescaling U and G with l and acc, and leave a peaked softmax. The output is unchanged bit for
// bit, and so are the source-side gradients with concatenated heads; d score_dst agrees to
// rounding; one thread gives the two-thread bits.
TEST(ParallelAttention, OneHeadDestinationTermsGiveTheSameGradientsToRounding) {
  const RestoreEdgeRecords restore;
  const Graph square = testing::power_law_graph(2000, 30000, 8);
  const Graph bipartite = testing::uniform_graph(700, 2500, 3000, 4);
  for (const Graph* g : {&square, &bipartite})
    for (const int64_t dv : {7, 8, 12})
      for (const bool ramp : {false, true})
        for (const float dropout : {0.f, 0.3f})
          for (const HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
            SCOPED_TRACE(g->describe() + " dv " + std::to_string(dv) + (ramp ? " ramp" : "") + " dropout " +
                         std::to_string(dropout) + (combine == HeadCombine::mean ? " mean" : ""));
            AttentionConfig c{.score = Score::additive,
                              .combine = combine,
                              .dropout = dropout,
                              .seed = 7,
                              .path = AttentionPath::sparse};
            Operands o = make_operands(*g, c, 1, 8, dv, false, 13);
            if (ramp)
              for (int64_t j = 0; j < num_src(*g); ++j) o.score_src.data()[j] = 0.02f * static_cast<float>(j);
            auto run = [&](bool save, int threads) {
              return forward_backward_saving(*g, o, c, save, threads);
            };
            kernels::set_edge_records(kernels::EdgeRecords::never);  // the recomputing passes
            const auto [r0, without] = run(false, 2);
            kernels::set_edge_records(kernels::EdgeRecords::always);  // the terms on a graph this small
            const auto [r1, with] = run(true, 2);
            EXPECT_EQ(max_abs_diff(r0.out, r1.out), 0.f);
            ASSERT_EQ(r0.row_stats.numel(), r1.row_stats.numel());  // (an empty row's lse is -inf)
            EXPECT_EQ(
                std::memcmp(r0.row_stats.data(), r1.row_stats.data(), r0.row_stats.numel() * sizeof(float)),
                0);
            // To rounding: relative to the operands' unit scale (dO and v in [-1, 1]) where a
            // peaked softmax (the ramp) leaves gradients far smaller than the terms that cancel
            // in them (ds_ij = alpha (dalpha_ij - D_i), D_i up to dv).
            if (combine == HeadCombine::concat) {  // D_i = <dO_i, O_i> both ways
              EXPECT_EQ(max_abs_diff(with.value, without.value), 0.f);
              EXPECT_EQ(max_abs_diff(with.score_src, without.score_src), 0.f);
            } else {  // without the terms, D_i is summed over the row's edges
              EXPECT_LE(scaled_error(with.value, without.value), 1e-6f);
              EXPECT_LE(scaled_error(with.score_src, without.score_src), 1e-5f);
            }
            EXPECT_GT(max_abs_diff(without.score_dst, Tensor(without.score_dst.shape())), 0.f);
            EXPECT_LE(scaled_error(with.score_dst, without.score_dst), 1e-5f);
            // O_i in the terms is the output's own bits.
            const float* terms = r1.dst_terms.data();
            const float* out = r1.out.data();
            for (int64_t i = 0; i < num_dst(*g); ++i)
              for (int64_t d = 0; d < dv; ++d)
                ASSERT_EQ(terms[i * 2 * dv + d], out[i * dv + d]) << i << " " << d;
            const auto [r2, with_one_thread] = run(true, 1);
            EXPECT_EQ(max_abs_diff(r1.dst_terms, r2.dst_terms), 0.f);
            EXPECT_EQ(max_abs_diff(with.score_dst, with_one_thread.score_dst), 0.f);
            EXPECT_EQ(max_abs_diff(with.value, with_one_thread.value), 0.f);
          }
  // Automatic: kept where the gathered source rows (1 + dv floats each) pass 16 MiB and the edge
  // records (8 bytes an edge) pass their budget (64 MiB here), not where either does not.
  kernels::set_edge_records(kernels::EdgeRecords::automatic);
  const AttentionConfig c{.score = Score::additive, .save_for_backward = true, .path = AttentionPath::sparse};
  EXPECT_TRUE(
      attention_forward(square, make_operands(square, c, 1, 8, 7, false, 2).inputs(), c).dst_terms.absent());
  const Graph wide = testing::uniform_graph(300, 600000, 3000, 9);  // 600k sources, 19 MB of rows
  EXPECT_TRUE(attention_forward(wide, make_operands(wide, c, 1, 8, 7, false, 2).inputs(), c)
                  .dst_terms.absent());  // the records fit
  // 100k rows of 90 edges over the same 600k sources: 72 MB of records.
  const int64_t rows = 100000, per_row = 90, sources = 600000, stride = sources / per_row;
  std::vector<int64_t> row_ptr(rows + 1);
  std::vector<int32_t> col_idx(static_cast<size_t>(rows * per_row));
  for (int64_t i = 0; i < rows; ++i) {
    row_ptr[size_t(i) + 1] = (i + 1) * per_row;
    for (int64_t k = 0; k < per_row; ++k)  // ascending within the row
      col_idx[size_t(i * per_row + k)] = static_cast<int32_t>(k * stride + i % stride);
  }
  const Graph many_edges = Graph::from_csr(rows, sources, std::move(row_ptr), std::move(col_idx));
  kernels::KernelArgs a;
  a.heads = 1;
  a.dv = 7;
  a.score.kind = kernels::EdgeScore::additive;
  a.norm = Normalization::softmax;
  EXPECT_TRUE(kernels::parallel_dst_terms_apply(many_edges, a));
  a.dv = 8;  // the records' budget (the value and output rows held, 22 MB) still below 72 MB
  EXPECT_TRUE(kernels::parallel_dst_terms_apply(many_edges, a));
  a.score.slope = -0.1f;  // g would not follow from the score's sign
  EXPECT_FALSE(kernels::parallel_dst_terms_apply(many_edges, a));
  a.score.slope = 0.2f;
  a.heads = 2;
  EXPECT_FALSE(kernels::parallel_dst_terms_apply(many_edges, a));
  a.heads = 1;
  a.norm = Normalization::relu;
  EXPECT_FALSE(kernels::parallel_dst_terms_apply(many_edges, a));
  // The forward keeps them there.
  const Operands big = make_operands(many_edges, c, 1, 8, 7, false, 2);
  EXPECT_FALSE(attention_forward(many_edges, big.inputs(), c).dst_terms.absent());
}

TEST(ParallelAttention, ConcurrentGemmPathsGiveIdenticalResultsOnEveryCall) {
  // The tiled sparse path (microkernels) and the dense path (BLAS) run from several TBB tasks at once. A BLAS
  // that is not thread-safe (Debian's serial OpenBLAS) corrupts results nondeterministically; repeated
  // identical calls must agree bit for bit.
  ThreadLimit limit(2);
  const Pattern p = CompletePattern(512, 512);
  for (AttentionPath path : {AttentionPath::sparse, AttentionPath::dense}) {
    SCOPED_TRACE(to_string(path));
    AttentionConfig c{.path = path};
    const Operands o = make_operands(p, c, 4, 64, 64, false, 21);
    const AttentionResult first = attention_forward(p, o.inputs(), c);
    const AttentionGrads first_g = attention_backward(p, o.inputs(), c, first, o.grad_out);
    for (int rep = 0; rep < 8; ++rep) {
      const AttentionResult again = attention_forward(p, o.inputs(), c);
      ASSERT_EQ(max_abs_diff(again.out, first.out), 0.f) << "repetition " << rep;
      const AttentionGrads g = attention_backward(p, o.inputs(), c, again, o.grad_out);
      ASSERT_EQ(max_abs_diff(g.query, first_g.query), 0.f) << "repetition " << rep;
      ASSERT_EQ(max_abs_diff(g.key, first_g.key), 0.f) << "repetition " << rep;
      ASSERT_EQ(max_abs_diff(g.value, first_g.value), 0.f) << "repetition " << rep;
    }
  }
}

TEST(ParallelAttention, LogitsOfTenThousandStayFiniteAndPickTheMaximum) {
  // Row 0 <- {0, 1, 2}: scores 1e4, -1e4, 1e4 - 1 => weights (1/(1+e^-1), 0, e^-1/(1+e^-1)).
  const Graph g = Graph::from_csr(1, 3, {0, 3}, {0, 1, 2});
  Tensor sd({1, 1}, 0.f), ss({3, 1}), v({3, 1, 1});
  ss(0, 0) = 1e4f, ss(1, 0) = -1e4f, ss(2, 0) = 1e4f - 1.f;
  v(0, 0, 0) = 1.f, v(1, 0, 0) = 100.f, v(2, 0, 0) = 0.f;
  for (AttentionPath path : {AttentionPath::sparse, AttentionPath::reference}) {
    const AttentionConfig c{.score = Score::additive, .return_attention = true, .path = path};
    const auto r = attention_forward(g, {.value = v, .score_dst = sd, .score_src = ss}, c);
    const float w0 = 1.f / (1.f + std::exp(-1.f));
    EXPECT_NEAR(r.out(0, 0, 0), w0, 1e-5f) << to_string(path);
    EXPECT_NEAR(r.attention(1, 0), 0.f, 1e-6f);
    EXPECT_TRUE(std::isfinite(r.row_stats(0, 0)));
    const auto d =
        attention_backward(g, {.value = v, .score_dst = sd, .score_src = ss}, c, r, Tensor({1, 1, 1}, 1.f));
    for (float x : d.score_src.span()) EXPECT_TRUE(std::isfinite(x));
  }
}

// A hub row's sums: one destination reading 200k sources (scores N(0, 3^2), as a trained layer's
// logits spread). Summed edge by edge into one float, the row's weights lost ~3e-4 of their total
// (each term rounding into an ever larger sum) and every output, weight and gradient of the row
// with them; the kernel now adds each block's float sum into a double. Softmax and ReLU, one head
// and GAT's 8 x 8 (the specialised kernel), against the reference to a tolerance 20x tighter.
TEST(ParallelAttention, AHubRowOfTwoHundredThousandEdgesSumsWithoutDrift) {
  const int64_t n = 200000;
  std::vector<int64_t> row_ptr = {0, n};
  std::vector<int32_t> cols(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) cols[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  const Graph hub = Graph::from_csr(1, n, std::move(row_ptr), std::move(cols));
  for (const auto& [heads, dv] : {std::pair<int64_t, int64_t>{1, 4}, {8, 8}}) {
    const Tensor v = random_tensor({n, heads, dv}, 5);
    const Tensor sd({1, heads}, 0.f);
    Tensor ss = random_tensor({n, heads}, 6, -1.f, 1.f);
    for (float& x : ss.span()) x = 3.f * std::tan(1.4f * x);  // heavy-ish tails, |s| up to ~17
    for (const Normalization norm : {Normalization::softmax, Normalization::relu}) {
      SCOPED_TRACE(std::to_string(heads) + " heads, " +
                   (norm == Normalization::softmax ? "softmax" : "relu"));
      const AttentionInputs in{.value = v, .score_dst = sd, .score_src = ss};
      AttentionConfig c{.score = Score::additive, .normalization = norm, .return_attention = true};
      c.path = AttentionPath::reference;
      const auto want = attention_forward(hub, in, c);
      c.path = AttentionPath::sparse;
      const auto got = attention_forward(hub, in, c);
      expect_close("out", got.out, want.out, 1e-5f);
      if (norm == Normalization::softmax) expect_same_row_stats(got.row_stats, want.row_stats, 1e-6f);
      float total = 0.f;  // the weights of head 0 sum to 1
      double sum = 0.0;
      for (int64_t e = 0; e < n; ++e) sum += got.attention(e, 0);
      total = static_cast<float>(sum);
      if (norm == Normalization::softmax) {
        EXPECT_NEAR(total, 1.f, 2e-5f);
      }
      const Tensor dout = random_tensor({1, heads, dv}, 7);
      expect_same_grads(attention_backward(hub, in, c, got, dout),
                        attention_backward(
                            hub, in,
                            [&] {
                              AttentionConfig r = c;
                              r.path = AttentionPath::reference;
                              return r;
                            }(),
                            want, dout),
                        1e-5f);
    }
  }
}

// The backward's sums over a hub: a destination reading 2^18 sources (its row: D_i, d score_dst
// or dq, and GATv2's d att) and two sources each read by 2^18 destinations (their columns: dv,
// d score_src or dk). Summed edge by edge into one float, such sums were off by up to 2.7e-5 of
// their scale here (9e-5 at 1M edges); in blocks of 32 into double, by at most 8e-7, the rounding
// of their float terms (and, for dq, of the forward's output in D_i = <dO_i, O_i>).
// Every score kind's kernel (one head, GAT's 8 x 8, the generic one), with edge records and
// recomputing, softmax and ReLU, and with dropout and edge terms (GAT's score_edge and an edge
// bias; GATv2's and the dot product's edge attributes, whose projection's gradient d we sums over
// every edge), against the reference.
TEST(ParallelAttention, HubRowsAndColumnsOfAQuarterMillionEdgesSumTheirGradientsWithoutDrift) {
  const RestoreEdgeRecords restore;
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan (the reference and this file at -O0) 2^18 took 290 s: the sanitizer build checks
  // the paths' memory on hubs of 2^14 edges (512 blocks), the release build their sums on 2^18.
  const int64_t n = 1 << 14;
#else
  const int64_t n = 1 << 18;
#endif
  const Graph row_hub = testing::hub_row_graph(n);
  const Graph column_hubs = testing::hub_columns_graph(n, /*square=*/false);
  struct Case {
    Score score;
    int64_t heads, dv;
  };
  struct Variant {
    Normalization norm;
    float dropout;
    bool edge_terms;
  };
  for (const Graph* g : {&row_hub, &column_hubs})
    for (const Case& k :
         {Case{Score::additive, 1, 4}, Case{Score::additive, 8, 8}, Case{Score::additive, 3, 5},
          Case{Score::gatv2, 2, 4}, Case{Score::dot_product, 2, 4}})
      for (const Variant& v :
           {Variant{Normalization::softmax, 0.f, false}, Variant{Normalization::relu, 0.f, false},
            Variant{Normalization::softmax, 0.3f, true}})
        for (const auto records : {kernels::EdgeRecords::always, kernels::EdgeRecords::never}) {
          if (records == kernels::EdgeRecords::always && k.score != Score::additive) continue;
          SCOPED_TRACE(g->describe() + " " + to_string(k.score) + " heads " + std::to_string(k.heads) +
                       " dv " + std::to_string(k.dv) +
                       (v.norm == Normalization::softmax ? " softmax" : " relu") +
                       (v.dropout > 0 ? " dropout" : "") + (v.edge_terms ? " edge terms" : "") +
                       (records == kernels::EdgeRecords::always ? " records" : ""));
          kernels::set_edge_records(records);
          AttentionConfig c{.score = k.score,
                            .normalization = v.norm,
                            .dropout = v.dropout,
                            .seed = 29,
                            .path = AttentionPath::reference};
          const Operands o = make_operands(*g, c, k.heads, 4, k.dv, v.edge_terms, 17, v.edge_terms);
          ASSERT_EQ(o.edge_proj.absent(), !v.edge_terms || k.score == Score::additive);
          const auto want = attention_forward(*g, o.inputs(), c);
          const auto want_grads = attention_backward(*g, o.inputs(), c, want, o.grad_out);
          c.path = AttentionPath::sparse;
          const auto got = attention_forward(*g, o.inputs(), c);
          const auto grads = attention_backward(*g, o.inputs(), c, got, o.grad_out);
          expect_same_grads(grads, want_grads, 2e-6f);
        }
}

// The forward reads a row's edges in blocks of 32 and moves its softmax shift only when a block's
// maximum exceeds it by more than a margin (vector_math.hpp: kRescaleMargin), so the shift may lag
// the row maximum. Rows of two blocks whose scores rise in steps below the margin (past it from
// block to block) or fall, and a row of one block that jumps far above it late, on the kernel
// specialised for 8 heads of 8 features and on the generic one, against the reference: outputs,
// log-sum-exp, weights and gradients.
TEST(ParallelAttention, ScoresRisingBelowTheRescaleMarginOrJumpingPastItMatchTheReference) {
  // Row 0 reads sources 0..63, whose scores rise by 0.45 each (28 in all, in steps far below the
  // margin of 8); row 1 reads 64..127, falling the same way; row 2 reads 128..136, whose scores
  // jump past the margin twice (by 80, then by 40 above the rest) and fall back.
  const std::vector<float> base = [] {
    std::vector<float> b;
    for (int k = 0; k < 64; ++k) b.push_back(0.45f * static_cast<float>(k));
    for (int k = 0; k < 64; ++k) b.push_back(0.45f * static_cast<float>(63 - k));
    for (float x : {0.f, 1.f, 2.f, 3.f, 80.f, 4.f, 5.f, 120.f, 6.f}) b.push_back(x);
    return b;
  }();
  const int64_t n = static_cast<int64_t>(base.size());
  std::vector<int32_t> cols(static_cast<size_t>(n));
  for (int32_t j = 0; j < static_cast<int32_t>(n); ++j) cols[static_cast<size_t>(j)] = j;
  const Graph g = Graph::from_csr(3, n, {0, 64, 128, n}, cols);
  for (const auto& [heads, dv] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {3, 5}}) {
    SCOPED_TRACE("heads " + std::to_string(heads) + " dv " + std::to_string(dv));
    Tensor sd = random_tensor({3, heads}, 1, -1.f, 1.f), ss({n, heads});
    for (int64_t j = 0; j < n; ++j)
      for (int64_t h = 0; h < heads; ++h)
        ss(j, h) = base[static_cast<size_t>(j)] * (1.f + 0.1f * static_cast<float>(h));
    const Tensor v = random_tensor({n, heads, dv}, 2), grad_out = random_tensor({3, heads, dv}, 3);
    const AttentionInputs in{.value = v, .score_dst = sd, .score_src = ss};
    AttentionConfig c{.score = Score::additive, .return_attention = true, .path = AttentionPath::reference};
    const AttentionResult want = attention_forward(g, in, c);
    const AttentionGrads want_g = attention_backward(g, in, c, want, grad_out);
    c.path = AttentionPath::sparse;
    const AttentionResult got = attention_forward(g, in, c);
    expect_close("out", got.out, want.out, 1e-5f);
    expect_close("attention", got.attention, want.attention, 1e-5f);
    expect_same_row_stats(got.row_stats, want.row_stats, 1e-5f);
    expect_same_grads(attention_backward(g, in, c, got, grad_out), want_g, 1e-4f);
  }
}

// Edges masked with an edge bias of -inf get weight 0, also when a whole block of the forward's
// 32-edge blocks is masked before the row's first finite score (the shift must stay finite, or
// exp(-inf - -inf) would be NaN): rows of 40 edges masked on their first 35, their last 35, or
// every other one, on both kernels, against the reference.
TEST(ParallelAttention, EdgesMaskedByMinusInfinityBiasAcrossBlocksGetZeroWeight) {
  constexpr int64_t rows = 3, degree = 40, n = rows * degree;
  std::vector<int64_t> offsets;
  std::vector<int32_t> cols;
  for (int64_t i = 0; i <= rows; ++i) offsets.push_back(i * degree);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < degree; ++k) cols.push_back(static_cast<int32_t>(i + k * 3));  // sorted, < n
  const Graph g = Graph::from_csr(rows, n, offsets, cols);
  for (const auto& [heads, dv] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {3, 5}}) {
    SCOPED_TRACE("heads " + std::to_string(heads) + " dv " + std::to_string(dv));
    Tensor bias = random_tensor({n, heads}, 4, -0.5f, 0.5f);
    for (int64_t k = 0; k < degree; ++k)
      for (int64_t h = 0; h < heads; ++h) {
        if (k < 35) bias(k, h) = -INFINITY;                   // row 0: the first 35
        if (k >= 5) bias(degree + k, h) = -INFINITY;          // row 1: the last 35
        if (k % 2 == 1) bias(2 * degree + k, h) = -INFINITY;  // row 2: every other one
      }
    const Tensor sd = random_tensor({rows, heads}, 1), ss = random_tensor({n, heads}, 2),
                 v = random_tensor({n, heads, dv}, 3);
    const AttentionInputs in{.value = v, .score_dst = sd, .score_src = ss, .edge_bias = bias};
    AttentionConfig c{.score = Score::additive, .return_attention = true, .path = AttentionPath::reference};
    const AttentionResult want = attention_forward(g, in, c);
    c.path = AttentionPath::sparse;
    const AttentionResult got = attention_forward(g, in, c);
    for (float x : got.out.span()) ASSERT_TRUE(std::isfinite(x));
    expect_close("out", got.out, want.out, 1e-5f);
    expect_close("attention", got.attention, want.attention, 1e-5f);
    expect_same_row_stats(got.row_stats, want.row_stats, 1e-5f);
    for (int64_t k = 0; k < 35; ++k) EXPECT_EQ(got.attention(k, 0), 0.f) << "edge " << k;
  }
}

// Outputs of 32 MiB and more are written with streaming stores (vector_math.hpp:
// kStreamingStoreBytes): 131072 rows of 8 heads x 8 features is exactly that size, for the
// forward's out and the backward's dv, also when dv is written over the value itself.
TEST(ParallelAttention, OutputsLargeEnoughForStreamingStoresMatchTheReference) {
  constexpr int64_t n = 131072, heads = 8, dv = 8;
  const Graph g = testing::uniform_graph(n, n, n, 5);
  const Tensor sd = random_tensor({n, heads}, 1), ss = random_tensor({n, heads}, 2),
               v = random_tensor({n, heads, dv}, 3), grad_out = random_tensor({n, heads, dv}, 4);
  const AttentionInputs in{.value = v, .score_dst = sd, .score_src = ss};
  AttentionConfig c{.score = Score::additive, .path = AttentionPath::reference};
  const AttentionResult want = attention_forward(g, in, c);
  const AttentionGrads want_g = attention_backward(g, in, c, want, grad_out);
  c.path = AttentionPath::sparse;
  const AttentionResult got = attention_forward(g, in, c);
  ASSERT_EQ(got.out.numel() * static_cast<int64_t>(sizeof(float)), int64_t{32} << 20);
  expect_close("out", got.out, want.out, 1e-5f);
  expect_same_row_stats(got.row_stats, want.row_stats, 1e-5f);
  const AttentionGrads got_g = attention_backward(g, in, c, got, grad_out);
  expect_same_grads(got_g, want_g, 1e-5f);
  Tensor v_then_dv = v;  // the value, overwritten by its gradient
  const AttentionInputs in_place{.value = v_then_dv, .score_dst = sd, .score_src = ss};
  (void)attention_backward(g, in_place, c, got, grad_out, v_then_dv.view());
  EXPECT_EQ(max_abs_diff(v_then_dv, got_g.value), 0.f);
}

TEST(ParallelAttention, EmptyGraphGivesEmptyOutputs) {
  const Graph g;
  const Tensor q({0, 2, 3}), v({0, 2, 3});
  const auto r = attention_forward(g, {.query = q, .key = q, .value = v}, {.path = AttentionPath::sparse});
  EXPECT_EQ(r.out.shape(), Shape({0, 2, 3}));
  const auto d =
      attention_backward(g, {.query = q, .key = q, .value = v}, {.path = AttentionPath::sparse}, r, r.out);
  EXPECT_EQ(d.query.shape(), Shape({0, 2, 3}));
}

TEST(ParallelAttention, RowsWithoutEdgesGiveZerosNotNaN) {
  const Graph g = Graph::from_csr(3, 3, {0, 0, 2, 2}, {0, 2});  // rows 0 and 2 are empty
  const Tensor q = random_tensor({3, 2, 4}, 1), v = random_tensor({3, 2, 4}, 2);
  for (Normalization n : {Normalization::softmax, Normalization::relu}) {
    const auto r = attention_forward(g, {.query = q, .key = q, .value = v},
                                     {.normalization = n, .path = AttentionPath::sparse});
    for (int64_t d = 0; d < 4; ++d) {
      EXPECT_EQ(r.out(0, 1, d), 0.f);
      EXPECT_EQ(r.out(2, 0, d), 0.f);
    }
    for (float x : r.out.span()) EXPECT_FALSE(std::isnan(x));
  }
}

TEST(ParallelAttention, AttentionWeightsMapBackToTheCallersEdgeOrderAfterAddingSelfLoops) {
  // Input edges (src -> dst): 2->0, 1->0, 0->1, 0->0 (self-loop, removed then re-added), 2->0 (dup).
  const std::vector<int64_t> src = {2, 1, 0, 0, 2}, dst = {0, 0, 1, 0, 0};
  const Graph g =
      build_graph(3, 3, src, dst, {.self_loops = SelfLoops::add, .duplicates = Duplicates::merge});
  const Tensor sd = random_tensor({3, 2}, 1), ss = random_tensor({3, 2}, 2), v = random_tensor({3, 2, 2}, 3);
  const auto r = attention_forward(g, {.value = v, .score_dst = sd, .score_src = ss},
                                   {.score = Score::additive, .return_attention = true});
  const Tensor by_input = to_input_edge_order(g, r.attention);
  ASSERT_EQ(by_input.shape(), Shape({5, 2}));
  for (int64_t k = 0; k < 5; ++k) {
    const int64_t e = g.csr_edge_of_input()[static_cast<size_t>(k)];
    for (int64_t h = 0; h < 2; ++h) {
      if (e < 0) {
        EXPECT_EQ(by_input(k, h), 0.f) << "dropped input edge " << k;
        continue;
      }
      // The weight is that of the edge (src[k] -> dst[k]): recompute it from the scores.
      const int64_t i = dst[static_cast<size_t>(k)], j = src[static_cast<size_t>(k)];
      double z = 0;
      for (int32_t jj : g.row(i))
        z += std::exp(std::max(0.2 * (sd(i, h) + ss(jj, h)), double(sd(i, h) + ss(jj, h))));
      const double s = sd(i, h) + ss(j, h);
      EXPECT_NEAR(by_input(k, h), std::exp(std::max(0.2 * s, s)) / z, 1e-5) << "input edge " << k;
    }
  }
  EXPECT_EQ(by_input(0, 0), by_input(4, 0));  // merged duplicate gets the kept edge's weight
}

TEST(ParallelAttention, AutomaticPathPicksDenseOnlyForDenseGemmScores) {
  const Pattern full = CompletePattern(16, 16);
  const Tensor q = random_tensor({16, 1, 4}, 1);
  EXPECT_EQ(attention_forward(full, {.query = q, .key = q, .value = q}, {}).path, AttentionPath::dense);
  const Pattern sparse = WindowPattern::sliding(16, 1);
  EXPECT_EQ(attention_forward(sparse, {.query = q, .key = q, .value = q}, {}).path, AttentionPath::sparse);
  const Tensor a = random_tensor({1, 4}, 2);
  EXPECT_EQ(
      attention_forward(full, {.query = q, .key = q, .value = q, .att = a}, {.score = Score::gatv2}).path,
      AttentionPath::sparse);
  EXPECT_THROW(attention_forward(full, {.query = q, .key = q, .value = q, .att = a},
                                 {.score = Score::gatv2, .path = AttentionPath::dense}),
               InvalidArgument);
}

TEST(ParallelAttention, ShapeMismatchesAreRejectedWithTheOperandNamed) {
  const Graph g = testing::uniform_graph(5, 5, 10, 1);
  const Tensor q = random_tensor({5, 2, 4}, 1), bad = random_tensor({4, 2, 4}, 2);
  try {
    attention_forward(g, {.query = q, .key = bad, .value = q});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("key"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[4, 2, 4]"));
  }
  EXPECT_THROW(attention_forward(g, {.query = q, .key = q, .value = q}, {.dropout = 1.f}), InvalidArgument);
  EXPECT_THROW(attention_forward(g, {.query = q, .key = q, .value = Tensor({5, 0, 4})}), InvalidArgument);
  EXPECT_THROW(attention_forward(g, {.query = q, .key = q}), ShapeError);
  EXPECT_THROW(attention_forward(g, {.query = q, .key = q, .value = q}, {.score = Score::additive}),
               ShapeError);
  EXPECT_THROW(attention_forward(g, {.query = q, .key = q, .value = q, .edge_bias = Tensor({3, 2})}),
               ShapeError);
}

TEST(ParallelAttention, AnExplicitDenseCausalOrBandedGraphRunsAsItsPatternWithTheSameResults) {
  // attention_forward/backward (any path but the reference) route such graphs to the structured
  // kernels; the reference path takes the graph as given, so the two must agree to rounding, per-edge tensors
  // (edge bias in, attention weights out) in the same CSR numbering.
  for (const Pattern& structured : {Pattern(CompletePattern(40, 40)), Pattern(CausalPattern(33, 40)),
                                    Pattern(WindowPattern::sliding(60, 5, true))}) {
    const Pattern explicit_graph = materialize(structured);
    for (const Score score : {Score::dot_product, Score::additive}) {
      AttentionConfig c{.score = score, .return_attention = true};
      const Operands o = make_operands(explicit_graph, c, 2, 8, 8, true, 17);
      const AttentionResult routed = attention_forward(explicit_graph, o.inputs(), c);
      const AttentionResult direct = attention_forward(structured, o.inputs(), c);
      AttentionConfig ref_c = c;
      ref_c.path = AttentionPath::reference;
      const AttentionResult ref = attention_forward(explicit_graph, o.inputs(), ref_c);
      const std::string what = describe(structured) + " " + to_string(score);
      EXPECT_EQ(max_abs_diff(routed.out, direct.out), 0.f) << what << ": not routed to the pattern";
      EXPECT_EQ(routed.path, direct.path) << what;
      expect_close(what.c_str(), routed.out, ref.out);
      expect_close(what.c_str(), routed.attention, ref.attention);
      expect_same_grads(attention_backward(explicit_graph, o.inputs(), c, routed, o.grad_out),
                        attention_backward(explicit_graph, o.inputs(), ref_c, ref, o.grad_out));
    }
  }
}

}  // namespace
}  // namespace edgeattn
