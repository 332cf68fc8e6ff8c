// TransformerConv with edge features (edge_dim, PyG's lin_edge): parameters, the forward against
// the definition written out per edge in double (the [E, H*C] projection added to keys and values,
// which the layer never stores), finite-difference gradients of every parameter and of the edge
// attributes (concat, mean, beta, dropout, bipartite), and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/transformer_conv.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::names_and_shapes;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

// PyG's TransformerConv with edge_dim (concat, root_weight, no beta), in double, per edge:
// e = lin_edge(attr); alpha = softmax_j(q_i . (k_j + e_ij) / sqrt(C)); out_i = sum alpha (v_j + e_ij) + skip.
std::vector<double> reference_transformer(TransformerConv& conv, const Graph& g, const Tensor& x,
                                          const Tensor& attr) {
  using edgeattn::testing::affine;
  const auto& o = conv.options();
  const int64_t h = o.heads, c = o.out_channels, hc = h * c;
  const std::vector<double> q = affine(conv.lin_query, x), k = affine(conv.lin_key, x),
                            v = affine(conv.lin_value, x);
  const Tensor& we = conv.lin_edge->weight.value;
  std::vector<double> out = affine(conv.lin_skip, x);
  edgeattn::testing::attend_per_edge(
      g, h, c,
      [&](int64_t i, int64_t j, int64_t e, int64_t hh) {
        double s = 0;
        for (int64_t d = 0; d < c; ++d)
          s += q[size_t(i * hc + hh * c + d)] *
               (k[size_t(j * hc + hh * c + d)] + edgeattn::testing::edge_projection(we, attr, e, hh * c + d));
        return s / std::sqrt(double(c));
      },
      [&](int64_t j, int64_t e, int64_t hh, int64_t d) {
        return v[size_t(j * hc + hh * c + d)] + edgeattn::testing::edge_projection(we, attr, e, hh * c + d);
      },
      out);
  return out;
}

TEST(TransformerConvEdgeFeatures, ParametersFollowPyG) {
  TransformerConv conv({.in_channels = 5, .out_channels = 3, .heads = 2, .edge_dim = 4}, "conv", 1);
  const auto names = names_and_shapes(conv.parameters());
  EXPECT_EQ(names.at("conv.lin_edge.weight"), "[6, 4]");
  EXPECT_EQ(names.count("conv.lin_edge.bias"), 0u);  // PyG: Linear(edge_dim, H*C, bias=False)
}

TEST(TransformerConvEdgeFeatures, ForwardEqualsThePerEdgeDefinition) {
  const Graph g = edgeattn::testing::uniform_graph(12, 12, 40, 7);
  const Tensor attr = random_tensor({g.num_edges(), 4}, 8);
  const Tensor x = random_tensor({12, 5}, 9);
  TransformerConv conv({.in_channels = 5, .out_channels = 3, .heads = 2, .edge_dim = 4}, "conv", 2);
  const std::vector<double> want = reference_transformer(conv, g, x, attr);
  Tape tape;
  tape.training = false;
  const Tensor got =
      tape.value(conv.forward(tape, g, tape.constant_ref(x), EdgeFeatures{tape.constant_ref(attr)}, 3));
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t k = 0; k < got.numel(); ++k) EXPECT_NEAR(got.data()[k], want[size_t(k)], 2e-5) << k;
}

TEST(TransformerConvEdgeFeatures, GradientsMatchFiniteDifferences) {
  const Graph g = edgeattn::testing::uniform_graph(9, 9, 24, 3);
  Parameter xd{"x", random_tensor({9, 7}, 6), {}};
  Parameter attr{"edge_attr", random_tensor({g.num_edges(), 3}, 5), {}};
  for (const auto& [options, what] : std::vector<std::pair<TransformerConvOptions, std::string>>{
           {{.in_channels = 7, .out_channels = 3, .heads = 2, .edge_dim = 3}, "concat"},
           {{.in_channels = 7, .out_channels = 2, .heads = 3, .concat = false, .edge_dim = 3}, "mean"},
           {{.in_channels = 7, .out_channels = 2, .heads = 2, .beta = true, .edge_dim = 3}, "beta"},
           {{.in_channels = 7, .out_channels = 3, .heads = 2, .dropout = 0.3f, .edge_dim = 3}, "dropout"}}) {
    TransformerConv conv(options, "conv", 11);
    auto params = conv.parameters();
    params.push_back(&xd);
    params.push_back(&attr);
    EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
      return weighted_sum(t, conv.forward(t, g, t.parameter(xd), EdgeFeatures{t.parameter(attr)}, 42), 13);
    })) << what;
  }
}

TEST(TransformerConvEdgeFeatures, BipartiteGradientsMatchFiniteDifferences) {
  const Graph g = edgeattn::testing::uniform_graph(5, 8, 20, 21);  // 5 destinations, 8 sources
  Parameter xs{"x_src", random_tensor({8, 4}, 23), {}}, xd{"x_dst", random_tensor({5, 3}, 24), {}};
  Parameter attr{"edge_attr", random_tensor({g.num_edges(), 2}, 22), {}};
  TransformerConv conv({.in_channels = 4, .in_channels_dst = 3, .out_channels = 2, .heads = 2, .edge_dim = 2},
                       "conv", 5);
  auto params = conv.parameters();
  params.insert(params.end(), {&xs, &xd, &attr});
  EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
    return weighted_sum(
        t, conv.forward(t, g, t.parameter(xs), t.parameter(xd), EdgeFeatures{t.parameter(attr)}, 1), 25);
  }));
}

TEST(TransformerConvEdgeFeatures, WrongEdgeAttributesAreRejected) {
  const Graph g = edgeattn::testing::uniform_graph(6, 6, 12, 1);
  const Tensor x = random_tensor({6, 4}, 2);
  TransformerConv conv({.in_channels = 4, .out_channels = 2, .edge_dim = 3}, "conv", 1);
  Tape t;
  expect_throw_naming<ShapeError>(
      [&] {
        conv.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges(), 2}))}, 1);
      },
      {"TransformerConv conv.lin_key.weight", "edge_dim=3"});
  TransformerConv plain({.in_channels = 4, .out_channels = 2}, "plain", 1);
  expect_throw_naming<InvalidArgument>(
      [&] {
        plain.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges(), 3}))}, 1);
      },
      {"no edge_dim", "TransformerConvOptions::edge_dim"});
  EXPECT_THROW(TransformerConv({.in_channels = 4, .out_channels = 2, .edge_dim = -1}), InvalidArgument);
}

}  // namespace
}  // namespace edgeattn::nn
