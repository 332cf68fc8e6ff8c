// GATConv: PyG's parameter names and shapes, a hand-computed forward on the 4-node graph,
// finite-difference gradient checks (dense and sparse input, concat/mean, residual, dropout), and
// the errors for unprepared graphs and wrong inputs. Also nn::prepare_graph and init.
#include "edgeattn/nn/gat_conv.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/init.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using autograd::Var;
using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::names_and_shapes;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;
using Names = std::map<std::string, std::string>;

TEST(GATConv, ParameterNamesAndShapesFollowPyG) {
  // torch_geometric.nn.GATConv(5, 3, heads=2): lin.weight [6, 5], att_src/att_dst [1, 2, 3], bias [6]
  GATConv a({.in_channels = 5, .out_channels = 3, .heads = 2}, "conv1", 1);
  EXPECT_EQ(names_and_shapes(a.parameters()), (Names{{"conv1.lin.weight", "[6, 5]"},
                                                     {"conv1.att_src", "[1, 2, 3]"},
                                                     {"conv1.att_dst", "[1, 2, 3]"},
                                                     {"conv1.bias", "[6]"}}));
  // concat=False: bias [3]; residual=True: res.weight [3, 5]; bias=False: no bias
  GATConv b({.in_channels = 5, .out_channels = 3, .heads = 2, .concat = false, .residual = true}, "", 1);
  EXPECT_EQ(names_and_shapes(b.parameters()), (Names{{"lin.weight", "[6, 5]"},
                                                     {"att_src", "[1, 2, 3]"},
                                                     {"att_dst", "[1, 2, 3]"},
                                                     {"bias", "[3]"},
                                                     {"res.weight", "[3, 5]"}}));
  GATConv c({.in_channels = 5, .out_channels = 3, .bias = false}, "", 1);
  EXPECT_EQ(names_and_shapes(c.parameters()),
            (Names{{"lin.weight", "[3, 5]"}, {"att_src", "[1, 1, 3]"}, {"att_dst", "[1, 1, 3]"}}));
}

TEST(GATConv, InitialisationIsGlorotWithZeroBiasAndDeterministic) {
  GATConv a({.in_channels = 50, .out_channels = 4, .heads = 3}, "conv1", 7);
  GATConv b({.in_channels = 50, .out_channels = 4, .heads = 3}, "conv1", 7);
  GATConv other({.in_channels = 50, .out_channels = 4, .heads = 3}, "conv1", 8);
  const float bound = std::sqrt(6.f / (12.f + 50.f));  // glorot over [12, 50]
  float max_abs = 0.f;
  for (float v : a.lin.weight.value.span()) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.9f * bound);                      // 600 draws reach near the bound
  const float att_bound = std::sqrt(6.f / (3.f + 4.f));  // PyG glorot on [1, 3, 4]: fan 3 + 4
  for (float v : a.att_src.value.span()) EXPECT_LE(std::fabs(v), att_bound);
  for (float v : a.bias.value.span()) EXPECT_EQ(v, 0.f);
  EXPECT_EQ(max_abs_diff(a.lin.weight.value, b.lin.weight.value), 0.f);
  EXPECT_GT(max_abs_diff(a.lin.weight.value, other.lin.weight.value), 0.f);
  EXPECT_GT(max_abs_diff(a.att_src.value, a.att_dst.value), 0.f);  // independent streams per name
}

// Node features of the 4-node graph: 0 (1, 0), 1 (0, 1), 2 (1, 1), 3 (2, 0).
Tensor four_node_features() { return Tensor({4, 2}, std::vector<float>{1, 0, 0, 1, 1, 1, 2, 0}); }

TEST(GATConv, OneHeadForwardMatchesHandComputation) {
  // Graph rows: 0 <- {0, 1}, 1 <- {0, 2}, 2 <- {} (isolated), 3 <- {1, 2, 3}; no self-loops added.
  GATConv conv({.in_channels = 2, .out_channels = 2, .add_self_loops = false}, "", 1);
  conv.lin.weight.value = Tensor({2, 2}, std::vector<float>{1, 0, 0, 1});  // h = x
  conv.att_src.value = Tensor({1, 1, 2}, std::vector<float>{1, 1});        // s_src = x0 + x1 = 1, 1, 2, 2
  conv.att_dst.value = Tensor({1, 1, 2}, std::vector<float>{-2, 0});       // s_dst = -2 x0 = -2, 0, -2, -4
  conv.bias.value = Tensor({2}, std::vector<float>{0.1f, -0.2f});
  Tape tape;
  const Tensor x = four_node_features();
  const Tensor& y = tape.value(conv.forward(tape, edgeattn::testing::four_node_graph(), tape.constant(x), 0));
  ASSERT_EQ(y.shape(), (Shape{4, 2}));
  // Row 0: e = lrelu(-2 + 1) twice -> alpha 1/2, 1/2 -> (0.5, 0.5)
  EXPECT_NEAR(y(0, 0), 0.5f + 0.1f, 1e-6f);
  EXPECT_NEAR(y(0, 1), 0.5f - 0.2f, 1e-6f);
  // Row 1: e = 0 + 1 = 1 (from 0), 0 + 2 = 2 (from 2) -> alpha = 1/(1+e), e/(1+e)
  const float a10 = 1.f / (1.f + std::exp(1.f)), a12 = 1.f - a10;
  EXPECT_NEAR(y(1, 0), a10 * 1 + a12 * 1 + 0.1f, 1e-6f);
  EXPECT_NEAR(y(1, 1), a12 * 1 - 0.2f, 1e-6f);
  // Row 2: no in-edges -> only the bias
  EXPECT_NEAR(y(2, 0), 0.1f, 1e-7f);
  EXPECT_NEAR(y(2, 1), -0.2f, 1e-7f);
  // Row 3: e = lrelu(-4 + 1) = -0.6 (from 1), lrelu(-4 + 2) = -0.4 (from 2 and 3)
  const float z = std::exp(-0.6f) + 2.f * std::exp(-0.4f);
  const float a31 = std::exp(-0.6f) / z, a32 = std::exp(-0.4f) / z, a33 = a32;
  EXPECT_NEAR(y(3, 0), a32 * 1 + a33 * 2 + 0.1f, 1e-6f);
  EXPECT_NEAR(y(3, 1), a31 * 1 + a32 * 1 - 0.2f, 1e-6f);
}

TEST(GATConv, MeanOverHeadsAveragesTheHeadsAndAttentionIsReturned) {
  const Graph g = prepare_graph(edgeattn::testing::four_node_graph(), true);
  GATConv concat({.in_channels = 2, .out_channels = 3, .heads = 2, .bias = false}, "c", 5);
  GATConv mean({.in_channels = 2, .out_channels = 3, .heads = 2, .concat = false, .bias = false}, "c", 5);
  Tape tape;
  const Var x = tape.constant(four_node_features());
  Tensor attention;
  const Tensor& yc = tape.value(concat.forward(tape, g, x, 0, &attention));
  const Tensor& ym = tape.value(mean.forward(tape, g, x, 0));
  ASSERT_EQ(yc.shape(), (Shape{4, 6}));
  ASSERT_EQ(ym.shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 3; ++c) EXPECT_NEAR(ym(i, c), 0.5f * (yc(i, c) + yc(i, 3 + c)), 1e-6f);
  ASSERT_EQ(attention.shape(), (Shape{g.num_edges(), 2}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      float s = 0.f;
      for (int64_t e = g.row_ptr()[static_cast<size_t>(i)]; e < g.row_ptr()[static_cast<size_t>(i) + 1]; ++e)
        s += attention(e, h);
      EXPECT_NEAR(s, 1.f, 1e-6f);  // every row has its self-loop
    }
}

TEST(GATConv, GradientsMatchFiniteDifferencesForEveryVariant) {
  const Graph g = edgeattn::testing::prepared_random_graph(9, 24, 3);
  const CsrMatrix xs = edgeattn::testing::sparse_features(9, 7, 0.3f, 4);
  // Seed chosen so that no edge score sits within eps of the LeakyReLU kink (seed 5 has one).
  Parameter xd{"x", random_tensor({9, 7}, 6), {}};
  struct Case {
    GATConvOptions options;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{.in_channels = 7, .out_channels = 3, .heads = 2}, "concat"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .concat = false}, "mean"},
      {{.in_channels = 7, .out_channels = 2, .heads = 3, .residual = true}, "residual"},
      {{.in_channels = 7, .out_channels = 2, .heads = 2, .concat = false, .residual = true}, "mean+residual"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .dropout = 0.3f}, "attention dropout"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .bias = false}, "no bias"},
  };
  for (const Case& c : cases) {
    GATConv conv(c.options, "conv", 11);
    for (auto* p : conv.parameters())  // a non-zero bias, so its gradient path is exercised too
      if (p->name == "conv.bias") p->value = random_tensor(p->value.shape(), 12, -0.2f, 0.2f);
    EXPECT_TRUE(check_gradients(conv.parameters(),
                                [&](Tape& t) { return weighted_sum(t, conv.forward(t, g, xs, 42), 13); }))
        << c.what << " (sparse input)";
    auto params = conv.parameters();
    params.push_back(&xd);
    EXPECT_TRUE(check_gradients(
        params, [&](Tape& t) { return weighted_sum(t, conv.forward(t, g, t.parameter(xd), 42), 14); }))
        << c.what << " (dense input)";
  }
}

// Runs `layer(tape, x)` and its backward (loss: a weighted sum of the output) from zeroed
// gradients: the output, then the gradients of x and of every parameter of `conv`.
template <class Layer>
std::pair<Tensor, std::vector<Tensor>> run_layer(GATConv& conv, Parameter& x, bool release, Layer&& layer) {
  x.zero_grad();
  for (auto* p : conv.parameters()) p->zero_grad();
  Tape tape;
  tape.release_in_backward = release;
  const Var y = layer(tape, tape.parameter(x));
  Tensor out = tape.value(y);
  tape.backward(weighted_sum(tape, y, 3));
  std::vector<Tensor> grads{x.grad};
  for (auto* p : conv.parameters()) grads.push_back(p->grad);
  return {std::move(out), std::move(grads)};
}

TEST(GATConv, AnInputWithPendingDropoutIsTheDroppedInput) {
  // NodeInput::with_dropout fuses the input dropout into both linear maps that read x (lin and
  // res): the result must be that of the dropped tensor fed to the layer, gradients included.
  const Graph g = edgeattn::testing::prepared_random_graph(300, 1500, 8);
  GATConv conv({.in_channels = 12, .out_channels = 4, .heads = 2, .residual = true}, "conv", 5);
  Parameter x{"x", random_tensor({300, 12}, 9), {}};
  auto run = [&](bool fused) {
    return run_layer(conv, x, false, [&](Tape& tape, Var xv) {
      const NodeInput in =
          fused ? NodeInput::with_dropout(xv, 0.6f, 77) : NodeInput(autograd::dropout(tape, xv, 0.6f, 77));
      return conv.forward(tape, g, in, 1);
    });
  };
  const auto [fused_out, fused_grads] = run(true);
  const auto [plain_out, plain_grads] = run(false);
  EXPECT_LT(max_abs_diff(fused_out, plain_out), 1e-5f);
  ASSERT_EQ(fused_grads.size(), plain_grads.size());
  for (size_t k = 0; k < fused_grads.size(); ++k)
    EXPECT_LT(max_abs_diff(fused_grads[k], plain_grads[k]), 1e-4f) << k;
  expect_throw_naming<InvalidArgument>([&] { (void)NodeInput::with_dropout(Var{}, 1.f, 0); },
                                       {"with_dropout", "p is 1"});
}

TEST(GATConv, AFollowingEluDropoutIsTheSameAsApplyingItAfterTheLayer) {
  // `then` fuses bias, ELU and dropout into the attention op (no residual) or applies them after
  // it (residual): either way the output is elu_dropout of the layer's, and the gradients agree.
  const Graph g = edgeattn::testing::prepared_random_graph(300, 1500, 8);
  for (const bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "residual" : "no residual");
    GATConv conv({.in_channels = 12, .out_channels = 4, .heads = 2, .dropout = 0.3f, .residual = residual},
                 "conv", 5);
    Parameter x{"x", random_tensor({300, 12}, 9), {}};
    const EluDropout then{1.f, 0.5f, 42};
    auto run = [&](bool fused) {
      return run_layer(conv, x, true, [&](Tape& tape, Var xv) {
        return fused
                   ? conv.forward(tape, g, xv, 1, nullptr, &then)
                   : autograd::elu_dropout(tape, conv.forward(tape, g, xv, 1), then.alpha, then.p, then.seed);
      });
    };
    const auto [fused_out, fused_grads] = run(true);
    const auto [plain_out, plain_grads] = run(false);
    EXPECT_EQ(max_abs_diff(fused_out, plain_out), 0.f);
    ASSERT_EQ(fused_grads.size(), plain_grads.size());
    for (size_t k = 0; k < fused_grads.size(); ++k)
      EXPECT_LT(max_abs_diff(fused_grads[k], plain_grads[k]), 1e-5f) << k;
  }
}

TEST(GATConv, SparseAndDenseInputGiveTheSameOutput) {
  const Graph g = edgeattn::testing::prepared_random_graph(30, 90, 6);
  const CsrMatrix xs = edgeattn::testing::sparse_features(30, 20, 0.1f, 7);
  GATConv conv({.in_channels = 20, .out_channels = 4, .heads = 2, .residual = true}, "conv", 3);
  Tape tape;
  const Tensor& a = tape.value(conv.forward(tape, g, xs, 1));
  const Tensor& b = tape.value(conv.forward(tape, g, tape.constant(xs.to_dense()), 1));
  EXPECT_LT(max_abs_diff(a, b), 1e-5f);
}

TEST(GATConv, RejectsAnUnpreparedGraphAndWrongInputs) {
  GATConv conv({.in_channels = 2, .out_channels = 2}, "conv1", 1);
  Tape tape;
  const Var x = tape.constant(four_node_features());
  expect_throw_naming<InvalidArgument>(
      [&] { (void)conv.forward(tape, edgeattn::testing::four_node_graph(), x, 0); },
      {"conv1", "add_self_loops", "prepare_graph"});
  const Graph g = prepare_graph(edgeattn::testing::four_node_graph(), true);
  expect_throw_naming<ShapeError>(
      [&] {
        (void)conv.forward(tape, g, tape.constant(Tensor({4, 3})), 0);
      },
      {"conv1", "[4, 3]", "[4, 2]"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)conv.forward(tape, g, tape.constant(Tensor({5, 2})), 0);
      },
      {"conv1", "[5, 2]"});
  expect_throw_naming<InvalidArgument>([] { GATConv bad({.in_channels = 2, .out_channels = 2, .heads = 0}); },
                                       {"heads=0"});
  expect_throw_naming<InvalidArgument>(
      [] { GATConv bad({.in_channels = 2, .out_channels = 2, .dropout = 1.f}); }, {"dropout", "[0, 1)"});
}

TEST(PrepareGraph, ReplacesExistingSelfLoopsWithExactlyOnePerNode) {
  // four_node_graph has self-loops on 0 and 3; node 2 is isolated.
  const Graph raw = edgeattn::testing::four_node_graph();
  const Graph g = prepare_graph(raw, true);
  EXPECT_TRUE(has_one_self_loop_per_node(g));
  EXPECT_FALSE(has_one_self_loop_per_node(raw));
  EXPECT_EQ(g.num_edges(), raw.num_edges() - 2 + 4);  // it had loops on 0 and 3
  EXPECT_EQ(std::vector<int32_t>(g.row(2).begin(), g.row(2).end()), (std::vector<int32_t>{2}));
  EXPECT_EQ(std::vector<int32_t>(g.row(3).begin(), g.row(3).end()), (std::vector<int32_t>{1, 2, 3}));
  const Graph same = prepare_graph(raw, false);
  EXPECT_EQ(same.num_edges(), raw.num_edges());
  // A bipartite graph (2 destinations, 3 sources) gets the loops of the shared nodes 0 and 1, as
  // PyG adds them for (x_src, x_dst) input.
  const Graph bipartite = prepare_graph(Graph::from_csr(2, 3, {0, 0, 0}, {}), true);
  EXPECT_EQ(bipartite.num_edges(), 2);
  EXPECT_EQ(bipartite.degree_stats().self_loops, 2);
}

TEST(Init, UniformIsACounterBasedFunctionOfSeedAndIndex) {
  const Tensor a = uniform({1000}, 0.5f, 9);
  const Tensor b = uniform({10, 100}, 0.5f, 9);
  EXPECT_EQ(std::vector<float>(a.span().begin(), a.span().end()),
            std::vector<float>(b.span().begin(), b.span().end()));
  double mean = 0.0;
  for (float v : a.span()) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LT(v, 0.5f);
    mean += v;
  }
  EXPECT_NEAR(mean / 1000.0, 0.0, 0.03);
  EXPECT_NE(derive_seed(1, "conv1.lin.weight"), derive_seed(1, "conv2.lin.weight"));
  EXPECT_NE(site_seed(5, 1), site_seed(5, 2));
  EXPECT_NE(site_seed(5, 1), site_seed(6, 1));
  expect_throw_naming<InvalidArgument>([] { (void)glorot({5}, 1); }, {"glorot", "rank"});
}

}  // namespace
}  // namespace edgeattn::nn
