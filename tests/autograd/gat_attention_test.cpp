// gat_attention, one GAT attention step as a single op that recomputes h = dropout(x) W^T in its
// backward: the same forward bits as the unfused ops (dropout_linear, reshape, head_scores twice,
// graph_attention with its epilogue) and the same gradients to rounding, for concat and mean
// heads, with and without input dropout and epilogue, releasing in backward or not, training or
// not, over a square pattern and over a block whose destinations are the first sources, with two
// heads and with one (whose terms the attention op takes from h itself);
// finite-difference gradients of every operand; the returned attention weights; typed errors
// naming the operand. With a SourceExpansion (a distributed part: x holds the destinations' rows,
// the other sources' projected rows come from elsewhere), simulated in one process by sources
// that repeat some own rows: the op over the expanded input, in value and in the gradient the
// repeated rows' owners receive; finite differences; the expansion's own op, expand_sources.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "support/expect_error.hpp"
#include "support/expect_tensor.hpp"
#include "support/gradcheck.hpp"
#include "support/repeat_expansion.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_near_all;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

constexpr int64_t kNodes = 9, kIn = 5, kHeads = 2, kDim = 3;

Graph test_graph() { return edgeattn::testing::power_law_graph(kNodes, 30, 4); }
// A block whose 6 destinations are the first of x's 9 rows (a sampled block, a distributed part);
// uniform_graph leaves some rows without in-edges and some sources without out-edges.
constexpr int64_t kBlockDst = 6;
Graph block_graph() { return edgeattn::testing::uniform_graph(kBlockDst, kNodes, 25, 7); }

// `heads` 1 is GAT's output layer, which hands the attention op h with the score vectors (its
// kernels take a source's term from the gathered value row); kHeads the score terms themselves.
struct Operands {
  explicit Operands(int64_t heads = kHeads)
      : w{"w", random_tensor({heads * kDim, kIn}, 2), {}},
        a_dst{"att_dst", random_tensor({heads, kDim}, 3), {}},
        a_src{"att_src", random_tensor({heads, kDim}, 4), {}},
        bias_concat{"bias", random_tensor({heads * kDim}, 5), {}} {}
  Parameter x{"x", random_tensor({kNodes, kIn}, 1), {}};
  Parameter w, a_dst, a_src, bias_concat;
  Parameter bias_mean{"bias", random_tensor({kDim}, 5), {}};
};

struct Setting {
  HeadCombine combine = HeadCombine::concat;
  float input_dropout = 0.f;
  bool epilogue = false;
  bool release = false;
  bool training = true;
  bool block = false;  // block_graph() instead of the square test_graph()
  int64_t heads = kHeads;
  std::string name() const {
    return std::string(combine == HeadCombine::concat ? "concat" : "mean") + ", input dropout " +
           std::to_string(input_dropout) + (epilogue ? ", epilogue" : "") + (release ? ", release" : "") +
           (training ? "" : ", eval") + (block ? ", block" : "") + ", " + std::to_string(heads) + " heads";
  }
};

struct LayerRun {
  Tensor y;
  Tensor attention;
  std::vector<Tensor> grads;  // x, w, att_dst, att_src, bias
};

// The layer as one op (`fused`) or as the ops it replaces; loss = weighted sum of the output.
LayerRun run_layer(const Setting& s, bool fused) {
  Operands o(s.heads);
  Parameter& bias = s.combine == HeadCombine::concat ? o.bias_concat : o.bias_mean;
  const Graph graph = s.block ? block_graph() : test_graph();
  Tape t;
  t.release_in_backward = s.release;
  t.training = s.training;
  const AttentionConfig config{
      .score = Score::additive, .combine = s.combine, .dropout = 0.25f, .seed = 6, .return_attention = true};
  AttentionEpilogue epilogue;
  if (s.epilogue)
    epilogue = {.bias = t.parameter(bias), .elu = true, .elu_alpha = 1.f, .dropout = 0.3f, .seed = 8};
  const Var x = t.parameter(o.x), w = t.parameter(o.w), a_dst = t.parameter(o.a_dst),
            a_src = t.parameter(o.a_src);
  LayerRun r;
  Var y;
  if (fused) {
    y = gat_attention(t, graph,
                      {.x = x,
                       .weight = w,
                       .att_dst = a_dst,
                       .att_src = a_src,
                       .input_dropout = s.input_dropout,
                       .input_seed = 12},
                      config, &r.attention, epilogue);
  } else {
    const Var h =
        s.input_dropout > 0.f ? dropout_linear(t, x, s.input_dropout, 12, w, Var{}) : linear(t, x, w);
    const Var h3 = reshape(t, h, {kNodes, s.heads, kDim});
    y = graph_attention(t, graph,
                        {.value = h3,
                         .score_dst = head_scores(t, h3, a_dst, graph.num_dst()),
                         .score_src = head_scores(t, h3, a_src)},
                        config, &r.attention, epilogue);
  }
  r.y = t.value(y);
  t.backward(weighted_sum(t, y, 10));
  for (Parameter* p : {&o.x, &o.w, &o.a_dst, &o.a_src, &bias}) r.grads.push_back(p->grad);
  return r;
}

TEST(GatAttention, EqualsTheUnfusedOpsForwardAndBackward) {
  std::vector<Setting> settings;
  for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean})
    for (float input_dropout : {0.f, 0.4f})
      for (bool epilogue : {false, true})
        for (bool release : {false, true})
          settings.push_back({combine, input_dropout, epilogue, release, true});
  settings.push_back({HeadCombine::concat, 0.4f, true, true, /*training=*/false});
  for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean})
    for (bool epilogue : {false, true})
      settings.push_back({combine, 0.4f, epilogue, epilogue, true, /*block=*/true});
  for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean})
    for (bool block : {false, true})
      for (bool epilogue : {false, true})
        settings.push_back({combine, 0.4f, epilogue, !epilogue, true, block, /*heads=*/1});
  settings.push_back({HeadCombine::concat, 0.4f, true, false, /*training=*/false, false, /*heads=*/1});
  for (const Setting& s : settings) {
    SCOPED_TRACE(s.name());
    const LayerRun fused = run_layer(s, true), unfused = run_layer(s, false);
    // Same GEMM on the same rows, same score loops, same kernel: the same bits.
    EXPECT_EQ(max_abs_diff(fused.y, unfused.y), 0.f);
    EXPECT_EQ(max_abs_diff(fused.attention, unfused.attention), 0.f);
    // The score vectors' gradients take another summation order (through W): rounding only.
    for (size_t k = 0; k < fused.grads.size(); ++k) {
      SCOPED_TRACE("gradient " + std::to_string(k));
      if (k == 4 && !s.epilogue) continue;  // no bias
      expect_near_all(fused.grads[k], unfused.grads[k], 2e-5f);
    }
  }
}

TEST(GatAttention, GradientsMatchFiniteDifferences) {
  for (const int64_t heads : {kHeads, int64_t{1}})
    for (const bool block : {false, true})
      for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
        SCOPED_TRACE(std::string(combine == HeadCombine::concat ? "concat" : "mean") +
                     (block ? ", block" : "") + ", " + std::to_string(heads) + " heads");
        const Graph graph = block ? block_graph() : test_graph();
        Operands o(heads);
        Parameter& bias = combine == HeadCombine::concat ? o.bias_concat : o.bias_mean;
        EXPECT_TRUE(check_gradients({&o.x, &o.w, &o.a_dst, &o.a_src, &bias}, [&](Tape& t) {
          return weighted_sum(
              t,
              gat_attention(t, graph,
                            {.x = t.parameter(o.x),
                             .weight = t.parameter(o.w),
                             .att_dst = t.parameter(o.a_dst),
                             .att_src = t.parameter(o.a_src),
                             .input_dropout = 0.3f,
                             .input_seed = 2},
                            {.score = Score::additive, .combine = combine, .dropout = 0.2f, .seed = 3},
                            nullptr, {.bias = t.parameter(bias), .elu = true, .dropout = 0.25f, .seed = 9}),
              11);
        }));
      }
}

TEST(GatAttention, OnlyOperandsThatNeedItGetAGradient) {
  // x a constant (the first layer's features): the parameters still get theirs, equal to the
  // run where x is a parameter.
  for (const int64_t heads : {kHeads, int64_t{1}}) {
    SCOPED_TRACE(std::to_string(heads) + " heads");
    Operands o(heads);
    const Graph graph = test_graph();
    Tensor with_x_grad;
    for (bool x_constant : {false, true}) {
      o.w.grad = Tensor();
      Tape t;
      const Var x = x_constant ? t.constant_ref(o.x.value) : t.parameter(o.x);
      const Var y = gat_attention(t, graph,
                                  {.x = x,
                                   .weight = t.parameter(o.w),
                                   .att_dst = t.constant(o.a_dst.value),
                                   .att_src = t.constant(o.a_src.value)},
                                  {.score = Score::additive});
      t.backward(weighted_sum(t, y, 3));
      ASSERT_FALSE(o.w.grad.absent());
      if (x_constant)
        EXPECT_EQ(max_abs_diff(o.w.grad, with_x_grad), 0.f);
      else
        with_x_grad = o.w.grad;
    }
  }
}

TEST(GatAttention, RejectsOtherScoresShapesAndPatterns) {
  Operands o;
  const Graph graph = test_graph();
  Tape t;
  const GatVars v{.x = t.parameter(o.x),
                  .weight = t.parameter(o.w),
                  .att_dst = t.parameter(o.a_dst),
                  .att_src = t.parameter(o.a_src)};
  expect_throw_naming<InvalidArgument>(
      [&] { (void)gat_attention(t, graph, v, {.score = Score::dot_product}); }, {"dot_product", "additive"});
  GatVars wide = v;
  wide.weight = t.constant(Tensor({kHeads * kDim + 1, kIn}));
  expect_throw_naming<ShapeError>([&] { (void)gat_attention(t, graph, wide, {.score = Score::additive}); },
                                  {"weight", "[7, 5]", "[6, 5]"});
  GatVars other_src = v;
  other_src.att_src = t.constant(Tensor({kHeads, kDim + 1}));
  expect_throw_naming<ShapeError>(
      [&] { (void)gat_attention(t, graph, other_src, {.score = Score::additive}); }, {"att_src"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)gat_attention(t, edgeattn::testing::uniform_graph(kNodes, kNodes + 1, 20, 1), v,
                            {.score = Score::additive});
      },
      {"9 x 10", "first"});
  // More destinations than sources: they cannot be the first sources.
  expect_throw_naming<ShapeError>(
      [&] {
        (void)gat_attention(t, edgeattn::testing::uniform_graph(kNodes + 1, kNodes, 20, 1), v,
                            {.score = Score::additive});
      },
      {"10 x 9", "num_dst <= num_src"});
  GatVars bad_rate = v;
  bad_rate.input_dropout = 1.f;
  expect_throw_naming<InvalidArgument>(
      [&] { (void)gat_attention(t, graph, bad_rate, {.score = Score::additive}); }, {"input_dropout"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)gat_attention(t, graph, {.x = v.x, .weight = v.weight}, {.score = Score::additive}); },
      {"att_dst"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)gat_attention(t, graph, v, {.score = Score::additive}, nullptr,
                            {.bias = t.constant(Tensor({kDim + 1}))});
      },
      {"gat_attention epilogue", "bias"});
}

TEST(GatAttention, EmptyGraphGivesAnEmptyOutputAndZeroGradients) {
  Parameter x{"x", Tensor({0, kIn}), {}};
  Parameter w{"w", random_tensor({kHeads * kDim, kIn}, 2), {}};
  Parameter a{"a", random_tensor({kHeads, kDim}, 3), {}};
  Tape t;
  const Var y = gat_attention(
      t, Graph(),
      {.x = t.parameter(x), .weight = t.parameter(w), .att_dst = t.parameter(a), .att_src = t.parameter(a)},
      {.score = Score::additive});
  EXPECT_EQ(t.value(y).shape(), Shape({0, kHeads, kDim}));
  t.backward(sum(t, y));
  EXPECT_EQ(max_abs_diff(w.grad, Tensor(w.value.shape())), 0.f);
}

// A part whose other sources are copies of own rows 5, 1 and 3 (support/repeat_expansion.hpp), over
// block_graph(): kBlockDst own rows, kNodes sources.
const autograd::SourceExpansion kRepeat = edgeattn::testing::repeat_expansion({5, 1, 3});

Tensor copy_of(ConstView v) {
  return Tensor(v.shape(), std::span<const float>(v.data(), static_cast<size_t>(v.numel())));
}

// Counts its calls, to check that each runs once per forward / backward.
struct CountingExpansion {
  int expands = 0, reduces = 0;
  SourceExpansion get() {
    return {.expand =
                [this](ConstView own) {
                  ++expands;
                  return kRepeat.expand(own);
                },
            .reduce =
                [this](ConstView g) {
                  ++reduces;
                  return kRepeat.reduce(g);
                }};
  }
};

TEST(GatAttentionWithSources, EqualsTheOpOverTheExpandedInput) {
  for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean})
    for (bool epilogue : {false, true})
      for (bool release : {false, true}) {
        SCOPED_TRACE(std::string(combine == HeadCombine::concat ? "concat" : "mean") +
                     (epilogue ? ", epilogue" : "") + (release ? ", release" : ""));
        const Graph graph = block_graph();
        const AttentionConfig config{.score = Score::additive,
                                     .combine = combine,
                                     .dropout = 0.25f,
                                     .seed = 6,
                                     .return_attention = true};
        LayerRun runs[2];
        CountingExpansion counting;
        for (int expanded = 0; expanded < 2; ++expanded) {
          Operands o;
          Parameter own{"x_own", random_tensor({kBlockDst, kIn}, 1), {}};
          Parameter& bias = combine == HeadCombine::concat ? o.bias_concat : o.bias_mean;
          Tape t;
          t.release_in_backward = release;
          AttentionEpilogue e;
          if (epilogue)
            e = {.bias = t.parameter(bias), .elu = true, .elu_alpha = 1.f, .dropout = 0.3f, .seed = 8};
          GatVars v{.x = t.parameter(own),
                    .weight = t.parameter(o.w),
                    .att_dst = t.parameter(o.a_dst),
                    .att_src = t.parameter(o.a_src)};
          if (expanded)
            v.sources = counting.get();
          else  // the input rows the other sources would have: x_src = [x; x[{5, 1, 3}]]
            v.x = expand_sources(t, v.x, kRepeat);
          const Var y = gat_attention(t, graph, v, config, &runs[expanded].attention, e);
          runs[expanded].y = t.value(y);
          t.backward(weighted_sum(t, y, 10));
          for (Parameter* p : {&own, &o.w, &o.a_dst, &o.a_src, &bias})
            runs[expanded].grads.push_back(p->grad);
        }
        EXPECT_EQ(counting.expands, 1);
        EXPECT_EQ(counting.reduces, 2);  // dh and the source scores' gradient
        // The other sources' h rows are the own rows' (a row-independent GEMM): the same bits.
        EXPECT_EQ(max_abs_diff(runs[1].y, runs[0].y), 0.f);
        EXPECT_EQ(max_abs_diff(runs[1].attention, runs[0].attention), 0.f);
        for (size_t k = 0; k < runs[0].grads.size(); ++k) {
          SCOPED_TRACE("gradient " + std::to_string(k));
          if (k == 4 && !epilogue) continue;  // no bias
          expect_near_all(runs[1].grads[k], runs[0].grads[k], 2e-5f);
        }
      }
}

TEST(GatAttentionWithSources, GradientsMatchFiniteDifferences) {
  const Graph graph = block_graph();
  for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
    SCOPED_TRACE(combine == HeadCombine::concat ? "concat" : "mean");
    Operands o;
    Parameter own{"x_own", random_tensor({kBlockDst, kIn}, 1), {}};
    Parameter& bias = combine == HeadCombine::concat ? o.bias_concat : o.bias_mean;
    EXPECT_TRUE(check_gradients({&own, &o.w, &o.a_dst, &o.a_src, &bias}, [&](Tape& t) {
      return weighted_sum(
          t,
          gat_attention(t, graph,
                        {.x = t.parameter(own),
                         .weight = t.parameter(o.w),
                         .att_dst = t.parameter(o.a_dst),
                         .att_src = t.parameter(o.a_src),
                         .input_dropout = 0.3f,
                         .input_seed = 2,
                         .sources = kRepeat},
                        {.score = Score::additive, .combine = combine, .dropout = 0.2f, .seed = 3}, nullptr,
                        {.bias = t.parameter(bias), .elu = true, .dropout = 0.25f, .seed = 9}),
          11);
    }));
  }
}

TEST(GatAttentionWithSources, ReducesEvenWhereNoOperandNeedsTheGradient) {
  // Every operand a constant but the edge term: the reductions still run (a collective the other
  // ranks are in).
  Operands o;
  Parameter edge{"score_edge", random_tensor({block_graph().num_edges(), kHeads}, 4), {}};
  CountingExpansion counting;
  Tape t;
  const Var y = gat_attention(t, block_graph(),
                              {.x = t.constant(random_tensor({kBlockDst, kIn}, 1)),
                               .weight = t.constant(o.w.value),
                               .att_dst = t.constant(o.a_dst.value),
                               .att_src = t.constant(o.a_src.value),
                               .score_edge = t.parameter(edge),
                               .sources = counting.get()},
                              {.score = Score::additive});
  t.backward(weighted_sum(t, y, 3));
  EXPECT_EQ(counting.expands, 1);
  EXPECT_EQ(counting.reduces, 2);
  EXPECT_GT(max_abs_diff(edge.grad, Tensor(edge.value.shape())), 0.f);
}

TEST(GatAttentionWithSources, RejectsMisshapenExpansions) {
  Operands o;
  Parameter own{"x_own", random_tensor({kBlockDst, kIn}, 1), {}};
  const Graph graph = block_graph();
  Tape t;
  const GatVars v{.x = t.parameter(own),
                  .weight = t.parameter(o.w),
                  .att_dst = t.parameter(o.a_dst),
                  .att_src = t.parameter(o.a_src),
                  .sources = kRepeat};
  // x must be the destinations' rows.
  GatVars all_rows = v;
  all_rows.x = t.parameter(o.x);
  expect_throw_naming<ShapeError>(
      [&] { (void)gat_attention(t, graph, all_rows, {.score = Score::additive}); },
      {"9 rows", "6 x 9", "num_dst"});
  GatVars no_reduce = v;
  no_reduce.sources.reduce = nullptr;
  expect_throw_naming<InvalidArgument>(
      [&] { (void)gat_attention(t, graph, no_reduce, {.score = Score::additive}); }, {"reduce"});
  // An expansion that gives another number of sources than the pattern has.
  GatVars short_expand = v;
  short_expand.sources.expand = copy_of;
  expect_throw_naming<ShapeError>(
      [&] { (void)gat_attention(t, graph, short_expand, {.score = Score::additive}); },
      {"6 rows", "9 sources"});
  GatVars narrow = v;
  narrow.sources.expand = [](ConstView) { return Tensor({kNodes, kHeads}); };
  expect_throw_naming<ShapeError>([&] { (void)gat_attention(t, graph, narrow, {.score = Score::additive}); },
                                  {"sources.expand", "[9, 2]"});
  // A reduction of the wrong shape is caught in backward.
  GatVars bad_reduce = v;
  bad_reduce.sources.reduce = copy_of;
  const Var y = gat_attention(t, graph, bad_reduce, {.score = Score::additive});
  expect_throw_naming<ShapeError>([&] { t.backward(sum(t, y)); },
                                  {"sources.reduce", "[9, 2, 3]", "[6, 2, 3]"});
}

TEST(ExpandSources, ForwardBackwardAndErrors) {
  Parameter own{"own", random_tensor({kBlockDst, 4}, 1), {}};
  EXPECT_TRUE(check_gradients(
      {&own}, [&](Tape& t) { return weighted_sum(t, expand_sources(t, t.parameter(own), kRepeat), 5); }));
  Tape t;
  const Var y = expand_sources(t, t.parameter(own), kRepeat);
  ASSERT_EQ(t.value(y).shape(), Shape({kNodes, 4}));
  EXPECT_EQ(t.value(y).data()[kBlockDst * 4], own.value.data()[5 * 4]);  // a copy of own row 5
  expect_throw_naming<InvalidArgument>(
      [&] { (void)expand_sources(t, t.parameter(own), {.expand = kRepeat.expand, .reduce = {}}); },
      {"expand_sources", "reduce"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)expand_sources(t, t.parameter(own),
                             {.expand =
                                  [](ConstView) {
                                    return Tensor({kNodes, 5});
                                  },
                              .reduce = kRepeat.reduce});
      },
      {"expand_sources", "[6, 4]", "[9, 5]"});
  // A reduction that keeps the other sources' rows, caught in backward.
  int reduces = 0;
  Tape u;
  const Var z = expand_sources(u, u.parameter(own), {.expand = kRepeat.expand, .reduce = [&](ConstView g) {
                                                       ++reduces;
                                                       return copy_of(g);
                                                     }});
  expect_throw_naming<ShapeError>([&] { u.backward(sum(u, z)); }, {"expand_sources", "[9, 4]", "[6, 4]"});
  EXPECT_EQ(reduces, 1);
}

}  // namespace
}  // namespace edgeattn::autograd
