// Bipartite input (x_src, x_dst) for GATConv, GATv2Conv and TransformerConv: the same layer over
// the same node set equals the one-input forward; finite differences through both inputs and
// every parameter on a num_dst != num_src graph with different feature widths; PyG's parameter
// names; prepared bipartite graphs and the errors.
#include <gtest/gtest.h>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/gatv2_conv.hpp"
#include "edgeattn/nn/transformer_conv.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using autograd::Var;
using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

constexpr int64_t kSrc = 8, kDst = 5, kInSrc = 6, kInDst = 4;

// 5 destinations, 8 sources; prepared: loops i -> i for i < 5 added, given ones replaced.
Graph bipartite_graph(bool self_loops) {
  return prepare_graph(edgeattn::testing::uniform_graph(kDst, kSrc, 18, 2), self_loops);
}

TEST(BipartiteGraph, PreparingAddsTheLoopsOfTheSharedNodes) {
  const Graph g = bipartite_graph(true);
  EXPECT_EQ(g.num_dst(), kDst);
  EXPECT_EQ(g.num_src(), kSrc);
  EXPECT_EQ(g.degree_stats().self_loops, kDst);
  for (int64_t i = 0; i < kDst; ++i) {
    const auto row = g.row(i);
    EXPECT_EQ(std::count(row.begin(), row.end(), static_cast<int32_t>(i)), 1) << "row " << i;
  }
}

template <class Conv, class Options>
void expect_bipartite_equals_square(const Options& options, const char* what) {
  const Graph g = edgeattn::testing::prepared_random_graph(9, 24, 3);
  Conv conv(options, "conv", 5);
  const Tensor x = random_tensor({9, 6}, 7);
  Tape a, b;
  a.training = b.training = false;
  const Var xa = a.constant(x), xb = b.constant(x);
  const Var one = conv.forward(a, g, xa, 0);
  const Var two = conv.forward(b, g, xb, xb, 0);
  EXPECT_LT(max_abs_diff(a.value(one), b.value(two)), 1e-6f) << what;
}

TEST(Bipartite, TheSameNodesOnBothSidesGiveTheOneInputForward) {
  expect_bipartite_equals_square<GATConv>(GATConvOptions{.in_channels = 6, .out_channels = 3, .heads = 2},
                                          "GATConv");
  expect_bipartite_equals_square<GATv2Conv>(GATv2ConvOptions{.in_channels = 6, .out_channels = 3, .heads = 2},
                                            "GATv2Conv");
  expect_bipartite_equals_square<TransformerConv>(
      TransformerConvOptions{.in_channels = 6, .out_channels = 3, .heads = 2}, "TransformerConv");
}

template <class Conv, class Options>
void expect_bipartite_gradients(const Options& options, bool self_loops, const char* what) {
  const Graph g = bipartite_graph(self_loops);
  Conv conv(options, "conv", 9);
  Parameter xs{"x_src", random_tensor({kSrc, kInSrc}, 10), {}},
      xd{"x_dst", random_tensor({kDst, kInDst}, 11), {}};
  auto params = conv.parameters();
  params.push_back(&xs);
  params.push_back(&xd);
  EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
    const Var y = conv.forward(t, g, t.parameter(xs), t.parameter(xd), 3);
    EXPECT_EQ(t.value(y).dim(0), kDst);
    return weighted_sum(t, y, 4);
  })) << what;
}

TEST(Bipartite, GradientsMatchFiniteDifferencesWithDifferentFeatureWidths) {
  expect_bipartite_gradients<GATConv>(
      GATConvOptions{
          .in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2, .residual = true},
      true, "GATConv");
  expect_bipartite_gradients<GATv2Conv>(
      GATv2ConvOptions{
          .in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2, .concat = false},
      true, "GATv2Conv");
  expect_bipartite_gradients<TransformerConv>(
      TransformerConvOptions{
          .in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2, .beta = true},
      false, "TransformerConv");
}

TEST(Bipartite, ParameterNamesFollowPyG) {
  GATConv gat({.in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2}, "conv");
  const auto names = edgeattn::testing::names_and_shapes(gat.parameters());
  EXPECT_EQ(names.at("conv.lin_src.weight"), "[6, 6]");
  EXPECT_EQ(names.at("conv.lin_dst.weight"), "[6, 4]");
  EXPECT_FALSE(names.contains("conv.lin.weight"));
  GATv2Conv v2({.in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2}, "conv");
  EXPECT_EQ(edgeattn::testing::names_and_shapes(v2.parameters()).at("conv.lin_r.weight"), "[6, 4]");
  TransformerConv tc({.in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2},
                     "conv");
  EXPECT_EQ(edgeattn::testing::names_and_shapes(tc.parameters()).at("conv.lin_query.weight"), "[6, 4]");
}

TEST(Bipartite, WrongInputsAndGraphsAreNamed) {
  GATConv conv({.in_channels = kInSrc, .in_channels_dst = kInDst, .out_channels = 3, .heads = 2}, "conv");
  Tape tape;
  const Var xs = tape.constant(Tensor({kSrc, kInSrc})), xd = tape.constant(Tensor({kDst, kInDst}));
  expect_throw_naming<InvalidArgument>([&] { conv.forward(tape, bipartite_graph(false), xs, xd, 0); },
                                       {"add_self_loops", "self-loops for 5 nodes"});
  expect_throw_naming<ShapeError>([&] { conv.forward(tape, bipartite_graph(true), xd, xs, 0); }, {"x_src"});
  expect_throw_naming<InvalidArgument>([&] { conv.forward(tape, bipartite_graph(true), xs, 0); },
                                       {"bipartite input", "x_src, x_dst"});
  GATConv square({.in_channels = kInSrc, .out_channels = 3, .heads = 2}, "sq");
  expect_throw_naming<ShapeError>([&] { square.forward(tape, bipartite_graph(true), xs, 0); },
                                  {"num_dst=5, num_src=8", "(x_src, x_dst)"});
}

}  // namespace
}  // namespace edgeattn::nn
