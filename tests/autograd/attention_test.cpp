// graph_attention and head_scores on the tape: gradient checks for the additive (GAT), gatv2 and
// dot-product scores, with and without attention dropout (fixed seed), with edge bias (and the
// additive score's per-edge term) and mean
// heads; only given operands get gradients; eval mode switches dropout off; attention weights
// can be returned; shape errors name the operand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "support/expect_error.hpp"
#include "support/expect_tensor.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_near_all;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

std::vector<float> values(const Tensor& t) { return {t.span().begin(), t.span().end()}; }

constexpr int64_t kNodes = 7, kHeads = 2, kDim = 3;

Graph test_graph() { return edgeattn::testing::uniform_graph(kNodes, kNodes, 18, 3); }

struct AttentionCase {
  Score score;
  float dropout;
  AttentionPath path;
};

class GraphAttentionGradient : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(GraphAttentionGradient, MatchesFiniteDifferences) {
  const auto [score, drop, path] = GetParam();
  const Pattern graph = test_graph();
  Parameter value{"value", random_tensor({kNodes, kHeads, kDim}, 1), {}};
  Parameter query{"query", random_tensor({kNodes, kHeads, kDim}, 2), {}};
  Parameter key{"key", random_tensor({kNodes, kHeads, kDim}, 3), {}};
  Parameter sd{"score_dst", random_tensor({kNodes, kHeads}, 4, -2.f, 2.f), {}};
  Parameter ss{"score_src", random_tensor({kNodes, kHeads}, 5, -2.f, 2.f), {}};
  Parameter att{"att", random_tensor({kHeads, kDim}, 6), {}};
  Parameter bias{"edge_bias", random_tensor({num_edges(graph), kHeads}, 7, -0.5f, 0.5f), {}};
  Parameter se{"score_edge", random_tensor({num_edges(graph), kHeads}, 8, -1.5f, 1.5f), {}};
  Parameter ea{"edge_attr", random_tensor({num_edges(graph), 2}, 9), {}};
  Parameter we{"edge_proj", random_tensor({kHeads, kDim, 2}, 10, -0.5f, 0.5f), {}};
  std::vector<Parameter*> params = {&value, &bias};
  if (score == Score::additive) params.insert(params.end(), {&sd, &ss, &se});
  if (score != Score::additive) params.insert(params.end(), {&query, &key});
  if (score == Score::gatv2) params.insert(params.end(), {&att, &ea, &we});
  const AttentionConfig config{.score = score, .dropout = drop, .seed = 99, .path = path};
  EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
    AttentionVars v{.value = t.parameter(value), .edge_bias = t.parameter(bias)};
    if (score == Score::additive) {
      v.score_dst = t.parameter(sd);
      v.score_src = t.parameter(ss);
      v.score_edge = t.parameter(se);  // GAT's edge-feature term, inside the LeakyReLU
    } else {
      v.query = t.parameter(query);
      v.key = t.parameter(key);
    }
    if (score == Score::gatv2) {
      v.att = t.parameter(att);
      v.edge_attr = t.parameter(ea);  // GATv2's edge features, projected inside the LeakyReLU
      v.edge_proj = t.parameter(we);
    }
    return weighted_sum(t, graph_attention(t, graph, v, config), 8);
  }));
}

INSTANTIATE_TEST_SUITE_P(Scores, GraphAttentionGradient,
                         ::testing::Values(AttentionCase{Score::additive, 0.f, AttentionPath::automatic},
                                           AttentionCase{Score::additive, 0.4f, AttentionPath::automatic},
                                           AttentionCase{Score::gatv2, 0.f, AttentionPath::automatic},
                                           AttentionCase{Score::gatv2, 0.4f, AttentionPath::automatic},
                                           AttentionCase{Score::dot_product, 0.f, AttentionPath::sparse},
                                           AttentionCase{Score::dot_product, 0.4f, AttentionPath::sparse},
                                           AttentionCase{Score::dot_product, 0.4f, AttentionPath::reference}),
                         [](const auto& info) {
                           return std::string(to_string(info.param.score)) +
                                  (info.param.dropout > 0 ? "_dropout_" : "_") + to_string(info.param.path);
                         });

TEST(GraphAttention, MeanHeadsGradientMatchesFiniteDifferences) {
  const Pattern graph = test_graph();
  Parameter value{"value", random_tensor({kNodes, kHeads, kDim}, 1), {}};
  Parameter sd{"score_dst", random_tensor({kNodes, kHeads}, 4), {}},
      ss{"score_src", random_tensor({kNodes, kHeads}, 5), {}};
  const AttentionConfig config{.score = Score::additive, .combine = HeadCombine::mean};
  EXPECT_TRUE(check_gradients({&value, &sd, &ss}, [&](Tape& t) {
    const Var out = graph_attention(
        t, graph, {.value = t.parameter(value), .score_dst = t.parameter(sd), .score_src = t.parameter(ss)},
        config);
    EXPECT_EQ(t.shape(out), (Shape{kNodes, kDim}));
    return weighted_sum(t, out, 9);
  }));
}

// The additive score's node terms taken from the value (att_dst/att_src), on a block-shaped
// bipartite graph (destinations = the first sources), with dropout and the per-edge term: the
// value's gradient includes the score terms, and the attention vectors get theirs.
TEST(GraphAttention, ScoresFromTheValueHaveTheGradientsOfFiniteDifferences) {
  const Pattern graph = edgeattn::testing::uniform_graph(5, kNodes, 16, 4);
  for (const auto& [norm, drop] :
       {std::pair{Normalization::softmax, 0.3f}, std::pair{Normalization::relu, 0.f}}) {
    SCOPED_TRACE(to_string(norm));
    Parameter value{"value", random_tensor({kNodes, kHeads, kDim}, 1), {}};
    Parameter a_dst{"att_dst", random_tensor({kHeads, kDim}, 2), {}};
    Parameter a_src{"att_src", random_tensor({kHeads, kDim}, 3), {}};
    Parameter se{"score_edge", random_tensor({num_edges(graph), kHeads}, 4, -1.f, 1.f), {}};
    const AttentionConfig config{.score = Score::additive, .normalization = norm, .dropout = drop, .seed = 5};
    EXPECT_TRUE(check_gradients({&value, &a_dst, &a_src, &se}, [&](Tape& t) {
      return weighted_sum(t,
                          graph_attention(t, graph,
                                          {.value = t.parameter(value),
                                           .score_edge = t.parameter(se),
                                           .att_dst = t.parameter(a_dst),
                                           .att_src = t.parameter(a_src)},
                                          config),
                          6);
    }));
  }
}

// ... and the op equals head_scores + graph_attention with the score vectors, forward and backward.
TEST(GraphAttention, ScoresFromTheValueEqualHeadScoresPassedAsScoreVectors) {
  const Pattern graph = edgeattn::testing::power_law_graph(60, 400, 3);
  Parameter value{"value", random_tensor({60, 8, 8}, 1), {}};
  Parameter a_dst{"att_dst", random_tensor({8, 8}, 2), {}}, a_src{"att_src", random_tensor({8, 8}, 3), {}};
  const AttentionConfig config{.score = Score::additive, .dropout = 0.2f, .seed = 7};
  std::vector<Tensor> outs, grads;
  for (bool fused : {false, true}) {
    for (Parameter* p : {&value, &a_dst, &a_src}) p->zero_grad();
    Tape t;
    const Var v = t.parameter(value), ad = t.parameter(a_dst), as = t.parameter(a_src);
    const Var out =
        fused ? graph_attention(t, graph, {.value = v, .att_dst = ad, .att_src = as}, config)
              : graph_attention(
                    t, graph,
                    {.value = v, .score_dst = head_scores(t, v, ad), .score_src = head_scores(t, v, as)},
                    config);
    outs.push_back(t.value(out));
    t.backward(weighted_sum(t, out, 4));
    for (Parameter* p : {&value, &a_dst, &a_src}) grads.push_back(p->grad);
  }
  expect_near_all(outs[1], outs[0], 1e-5f);
  for (size_t k = 0; k < 3; ++k) expect_near_all(grads[3 + k], grads[k], 1e-4f);
}

TEST(GraphAttention, OnlyOperandsThatNeedGradientsReceiveThem) {
  const Pattern graph = test_graph();
  Parameter value{"value", random_tensor({kNodes, kHeads, kDim}, 1), {}};
  Tape tape;
  const Var sd = tape.constant(random_tensor({kNodes, kHeads}, 4));
  const Var ss = tape.constant(random_tensor({kNodes, kHeads}, 5));
  const Var out =
      graph_attention(tape, graph, {.value = tape.parameter(value), .score_dst = sd, .score_src = ss},
                      {.score = Score::additive});
  tape.backward(sum(tape, out));
  EXPECT_TRUE(tape.grad(sd).absent());
  EXPECT_TRUE(tape.grad(ss).absent());
  // sum over outputs of softmax-weighted values: each source's value gradient is the total
  // attention it receives, so the value gradient sums to the number of non-empty rows per head.
  const Graph& g = std::get<Graph>(graph);
  int64_t nonempty = 0;
  for (int64_t i = 0; i < kNodes; ++i)
    nonempty += g.row_ptr()[static_cast<size_t>(i) + 1] > g.row_ptr()[static_cast<size_t>(i)];
  double total = 0;
  for (float v : value.grad.span()) total += v;
  EXPECT_NEAR(total, static_cast<double>(nonempty * kHeads * kDim), 1e-4);
}

TEST(GraphAttention, EvalModeSwitchesAttentionDropoutOff) {
  const Pattern graph = test_graph();
  const Tensor value = random_tensor({kNodes, kHeads, kDim}, 1), sd = random_tensor({kNodes, kHeads}, 2),
               ss = random_tensor({kNodes, kHeads}, 3);
  auto run = [&](bool training, float drop) {
    Tape tape;
    tape.training = training;
    const Var out = graph_attention(
        tape, graph,
        {.value = tape.constant(value), .score_dst = tape.constant(sd), .score_src = tape.constant(ss)},
        {.score = Score::additive, .dropout = drop, .seed = 5});
    return values(tape.value(out));
  };
  EXPECT_EQ(run(false, 0.6f), run(true, 0.f));
  EXPECT_NE(run(true, 0.6f), run(true, 0.f));
}

TEST(GraphAttention, ReturnsAttentionWeightsWhenAsked) {
  const Pattern graph = test_graph();
  Tape tape;
  Tensor alpha;
  (void)graph_attention(tape, graph,
                        {.value = tape.constant(random_tensor({kNodes, kHeads, kDim}, 1)),
                         .score_dst = tape.constant(random_tensor({kNodes, kHeads}, 2)),
                         .score_src = tape.constant(random_tensor({kNodes, kHeads}, 3))},
                        {.score = Score::additive, .return_attention = true}, &alpha);
  ASSERT_EQ(alpha.shape(), (Shape{num_edges(graph), kHeads}));
  const Graph& g = std::get<Graph>(graph);
  for (int64_t i = 0; i < kNodes; ++i) {
    const int64_t b = g.row_ptr()[static_cast<size_t>(i)], e = g.row_ptr()[static_cast<size_t>(i) + 1];
    if (b == e) continue;
    for (int64_t h = 0; h < kHeads; ++h) {
      double s = 0;
      for (int64_t k = b; k < e; ++k) s += alpha(k, h);
      EXPECT_NEAR(s, 1.0, 1e-5) << "row " << i;
    }
  }
}

TEST(GraphAttention, ShapeErrorsNameTheOperand) {
  const Pattern graph = test_graph();
  Tape tape;
  expect_throw_naming<ShapeError>(
      [&] {
        (void)graph_attention(tape, graph,
                              {.value = tape.constant(Tensor({kNodes, kHeads, kDim})),
                               .score_dst = tape.constant(Tensor({kNodes, kHeads + 1})),
                               .score_src = tape.constant(Tensor({kNodes, kHeads}))},
                              {.score = Score::additive});
      },
      {"score_dst", "[7, 3]", "[7, 2]"});
}

// --- the fused epilogue: dropout(elu(out + bias)) inside the op --------------------------------

struct EpilogueRun {
  Tensor y;
  std::vector<Tensor> grads;  // value, score_dst, score_src, bias
};

// One epilogue run: graph_attention on additive scores over `graph` (value [nodes, heads, dim]),
// then bias and (with elu) ELU and dropout: fused in the op or as the separate add_bias and
// elu_dropout ops; loss = weighted sum of the output.
struct EpilogueCase {
  Pattern graph;
  int64_t nodes, heads, dim;
  HeadCombine combine;
  bool release = false;  // Tape::release_in_backward
  bool training = true;  // false: no dropout
  bool elu = true;       // false: bias only
};

EpilogueRun run_epilogue(const EpilogueCase& c, bool fused) {
  const int64_t width = c.combine == HeadCombine::concat ? c.heads * c.dim : c.dim;
  Parameter value{"value", random_tensor({c.nodes, c.heads, c.dim}, 1), {}};
  Parameter sd{"score_dst", random_tensor({c.nodes, c.heads}, 4, -2.f, 2.f), {}};
  Parameter ss{"score_src", random_tensor({c.nodes, c.heads}, 5, -2.f, 2.f), {}};
  Parameter bias{"bias", random_tensor({width}, 6), {}};
  Tape t;
  t.release_in_backward = c.release;
  t.training = c.training;
  const AttentionConfig config{.score = Score::additive, .combine = c.combine, .dropout = 0.3f, .seed = 5};
  const AttentionVars v{
      .value = t.parameter(value), .score_dst = t.parameter(sd), .score_src = t.parameter(ss)};
  Var y;
  if (fused) {
    y = graph_attention(
        t, c.graph, v, config, nullptr,
        {.bias = t.parameter(bias), .elu = c.elu, .elu_alpha = 1.3f, .dropout = 0.4f, .seed = 21});
    y = reshape(t, y, {c.nodes, width});
  } else {
    y = add_bias(t, reshape(t, graph_attention(t, c.graph, v, config), {c.nodes, width}), t.parameter(bias));
    if (c.elu) y = elu_dropout(t, y, 1.3f, 0.4f, 21);
  }
  EpilogueRun r{t.value(y), {}};
  t.backward(weighted_sum(t, y, 8));
  for (Parameter* p : {&value, &sd, &ss, &bias}) r.grads.push_back(p->grad);
  return r;
}

EpilogueRun run_epilogue(HeadCombine combine, bool fused, bool release, bool training = true) {
  return run_epilogue({.graph = test_graph(),
                       .nodes = kNodes,
                       .heads = kHeads,
                       .dim = kDim,
                       .combine = combine,
                       .release = release,
                       .training = training},
                      fused);
}

TEST(GraphAttentionEpilogue, EqualsAddBiasThenEluDropout) {
  for (const HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
    for (const bool release : {false, true}) {
      SCOPED_TRACE(std::string(combine == HeadCombine::concat ? "concat" : "mean") +
                   (release ? ", release_in_backward" : ", keep"));
      const EpilogueRun fused = run_epilogue(combine, true, release);
      const EpilogueRun unfused = run_epilogue(combine, false, release);
      // The forward is the same arithmetic in the same order; the backward takes ELU's slope from
      // the dropped-and-scaled output, so it may differ by rounding.
      EXPECT_EQ(values(fused.y), values(unfused.y));
      for (size_t k = 0; k < fused.grads.size(); ++k) {
        SCOPED_TRACE("gradient " + std::to_string(k));
        expect_near_all(fused.grads[k], unfused.grads[k], 1e-5f);
      }
    }
  }
  // Not training: no dropout, and the gradients are ELU's from its output exactly.
  const EpilogueRun fused = run_epilogue(HeadCombine::concat, true, true, false);
  const EpilogueRun unfused = run_epilogue(HeadCombine::concat, false, true, false);
  EXPECT_EQ(values(fused.y), values(unfused.y));
}

// Rows narrower than a vector without dropout (GAT's output layer: one head of 7 classes, bias
// only) run 16 rows at a time as one flat span; 37 rows leave 5 to the row loop.
EpilogueRun run_narrow_epilogue(bool fused, bool elu) {
  constexpr int64_t nodes = 37;
  return run_epilogue({.graph = edgeattn::testing::uniform_graph(nodes, nodes, 150, 9),
                       .nodes = nodes,
                       .heads = 1,
                       .dim = 7,
                       .combine = HeadCombine::mean,
                       .training = false,  // no dropout: the narrow path
                       .elu = elu},
                      fused);
}

TEST(GraphAttentionEpilogue, NarrowRowsEqualAddBiasThenElu) {
  for (const bool elu : {false, true}) {
    SCOPED_TRACE(elu ? "bias and ELU" : "bias only");
    const EpilogueRun fused = run_narrow_epilogue(true, elu);
    const EpilogueRun unfused = run_narrow_epilogue(false, elu);
    EXPECT_EQ(values(fused.y), values(unfused.y));
    for (size_t k = 0; k < fused.grads.size(); ++k) {
      SCOPED_TRACE("gradient " + std::to_string(k));
      expect_near_all(fused.grads[k], unfused.grads[k], 1e-6f);
    }
  }
}

TEST(GraphAttentionEpilogue, GradientMatchesFiniteDifferences) {
  const Pattern graph = test_graph();
  Parameter value{"value", random_tensor({kNodes, kHeads, kDim}, 1), {}};
  Parameter sd{"score_dst", random_tensor({kNodes, kHeads}, 4, -2.f, 2.f), {}};
  Parameter ss{"score_src", random_tensor({kNodes, kHeads}, 5, -2.f, 2.f), {}};
  Parameter bias{"bias", random_tensor({kHeads * kDim}, 6), {}};
  // ELU with alpha 1 has a continuous slope at 0, so finite differences are smooth everywhere.
  for (const float p : {0.f, 0.5f}) {
    SCOPED_TRACE("dropout " + std::to_string(p));
    EXPECT_TRUE(check_gradients({&value, &sd, &ss, &bias}, [&](Tape& t) {
      const AttentionVars v{
          .value = t.parameter(value), .score_dst = t.parameter(sd), .score_src = t.parameter(ss)};
      return weighted_sum(
          t,
          graph_attention(t, graph, v, {.score = Score::additive, .dropout = 0.2f, .seed = 3}, nullptr,
                          {.bias = t.parameter(bias), .elu = true, .dropout = p, .seed = 9}),
          8);
    }));
  }
}

TEST(GraphAttentionEpilogue, RejectsABiasOfTheWrongWidthAndABadRate) {
  const Pattern graph = test_graph();
  Tape t;
  const AttentionVars v{.value = t.constant(random_tensor({kNodes, kHeads, kDim}, 1)),
                        .score_dst = t.constant(random_tensor({kNodes, kHeads}, 2)),
                        .score_src = t.constant(random_tensor({kNodes, kHeads}, 3))};
  expect_throw_naming<ShapeError>(
      [&] {
        (void)graph_attention(t, graph, v, {.score = Score::additive}, nullptr,
                              {.bias = t.constant(Tensor({kDim}))});
      },
      {"epilogue", "bias", "6"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)graph_attention(t, graph, v, {.score = Score::additive}, nullptr, {.dropout = 1.f}); },
      {"epilogue", "dropout"});
}

TEST(HeadScores, MatchHandComputedDotProducts) {
  Tape tape;
  // h: [N=1, H=2, D=2], a: [2, 2]
  const Var s = head_scores(tape, tape.constant(Tensor({1, 2, 2}, std::vector<float>{1, 2, 3, 4})),
                            tape.constant(Tensor({2, 2}, std::vector<float>{1, -1, 0.5f, 2})));
  EXPECT_EQ(values(tape.value(s)), (std::vector<float>{-1.f, 9.5f}));
}

TEST(HeadScores, GradientsMatchFiniteDifferences) {
  Parameter h{"h", random_tensor({5, 3, 4}, 1), {}}, a{"a", random_tensor({3, 4}, 2), {}};
  EXPECT_TRUE(check_gradients(
      {&h, &a}, [&](Tape& t) { return weighted_sum(t, head_scores(t, t.parameter(h), t.parameter(a)), 3); }));
}

// The first rows only: equal to the leading rows of all scores; gradients reach only those rows
// of h (the rest stay zero) and a, and match finite differences.
TEST(HeadScores, OfTheLeadingRowsEqualTheLeadingRowsOfAllScores) {
  Tape tape;
  const Var h = tape.constant(random_tensor({7, 3, 4}, 4)), a = tape.constant(random_tensor({3, 4}, 5));
  const Tensor all = tape.value(head_scores(tape, h, a));
  const Tensor first = tape.value(head_scores(tape, h, a, 4));
  ASSERT_EQ(first.shape(), Shape({4, 3}));
  for (int64_t i = 0; i < first.numel(); ++i) EXPECT_EQ(first.data()[i], all.data()[i]) << i;
  Parameter hp{"h", random_tensor({7, 3, 4}, 1), {}}, ap{"a", random_tensor({3, 4}, 2), {}};
  EXPECT_TRUE(check_gradients({&hp, &ap}, [&](Tape& t) {
    return weighted_sum(t, head_scores(t, t.parameter(hp), t.parameter(ap), 4), 3);
  }));
  for (int64_t i = 4 * 12; i < hp.grad.numel(); ++i) EXPECT_EQ(hp.grad.data()[i], 0.f) << i;
  expect_throw_naming<ShapeError>([&] { (void)head_scores(tape, h, a, 8); },
                                  {"head_scores", "[7, 3, 4]", "first 8 rows"});
}

TEST(HeadScores, RejectAMismatchedAttentionVector) {
  Tape tape;
  expect_throw_naming<ShapeError>(
      [&] {
        (void)head_scores(tape, tape.constant(Tensor({5, 3, 4})), tape.constant(Tensor({3, 5})));
      },
      {"head_scores: a", "[3, 5]", "[3, 4]"});
}

}  // namespace
}  // namespace edgeattn::autograd
