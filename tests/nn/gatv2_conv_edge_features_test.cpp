// GATv2Conv with edge features (edge_dim, PyG's lin_edge): parameter names and shapes, the forward
// against the definition written out per edge in double (the [E, H*C] projection PyG forms and
// the layer never stores), finite-difference gradients of every parameter and of the edge
// attributes (square with shared and separate weights, mean heads, residual, dropout, bipartite),
// and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/gatv2_conv.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
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

double leaky(double x, double slope) { return x > 0 ? x : slope * x; }

// out_i = sum_j softmax_j(att . leaky(x_r[i] + x_l[j] + W_e e_ij)) x_l[j], heads concatenated,
// plus bias: PyG's GATv2Conv with edge_dim, in double, per edge.
std::vector<double> reference_gatv2(GATv2Conv& conv, const Graph& g, const Tensor& x, const Tensor& attr) {
  const auto& o = conv.options();
  const int64_t h = o.heads, c = o.out_channels, hc = h * c;
  const std::vector<double> xl = edgeattn::testing::affine(conv.lin_l, x),
                            xr = edgeattn::testing::affine(conv.lin_r(), x);
  std::vector<double> out(static_cast<size_t>(g.num_dst() * hc), 0.0);
  edgeattn::testing::attend_per_edge(
      g, h, c,
      [&](int64_t i, int64_t j, int64_t e, int64_t k) {
        double s = 0;
        for (int64_t d = 0; d < c; ++d) {
          const double z =
              xr[size_t(i * hc + k * c + d)] + xl[size_t(j * hc + k * c + d)] +
              edgeattn::testing::edge_projection(conv.lin_edge->weight.value, attr, e, k * c + d);
          s += double(conv.att.value.data()[k * c + d]) * leaky(z, o.negative_slope);
        }
        return s;
      },
      [&](int64_t j, int64_t, int64_t k, int64_t d) { return xl[size_t(j * hc + k * c + d)]; }, out);
  if (o.bias)
    for (int64_t i = 0; i < g.num_dst(); ++i)
      for (int64_t k = 0; k < hc; ++k) out[size_t(i * hc + k)] += conv.bias.value.data()[k];
  return out;
}

TEST(GATv2ConvEdgeFeatures, ParametersFollowPyG) {
  GATv2Conv conv({.in_channels = 5, .out_channels = 3, .heads = 2, .edge_dim = 4}, "conv", 1);
  const auto names = names_and_shapes(conv.parameters());
  EXPECT_EQ(names.at("conv.lin_edge.weight"), "[6, 4]");
  EXPECT_EQ(names.count("conv.lin_edge.bias"), 0u);  // PyG: Linear(edge_dim, H*C, bias=False)
  GATv2Conv plain({.in_channels = 5, .out_channels = 3, .heads = 2}, "conv", 1);
  EXPECT_EQ(names_and_shapes(plain.parameters()).count("conv.lin_edge.weight"), 0u);
}

TEST(GATv2ConvEdgeFeatures, ForwardEqualsThePerEdgeDefinition) {
  const Graph raw = edgeattn::testing::uniform_graph(12, 12, 40, 7);
  const PreparedGraph p = prepare_graph(raw, true, random_tensor({raw.num_edges(), 4}, 8));
  const Tensor x = random_tensor({12, 5}, 9);
  for (bool share : {false, true}) {
    GATv2Conv conv({.in_channels = 5, .out_channels = 3, .heads = 2, .edge_dim = 4, .share_weights = share},
                   "conv", 2);
    conv.bias.value = random_tensor(conv.bias.value.shape(), 10, -0.3f, 0.3f);
    const std::vector<double> want = reference_gatv2(conv, p.graph, x, p.edge_attr);
    Tape tape;
    tape.training = false;
    const Tensor got = tape.value(
        conv.forward(tape, p.graph, tape.constant_ref(x), EdgeFeatures{tape.constant_ref(p.edge_attr)}, 3));
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
    for (int64_t k = 0; k < got.numel(); ++k) EXPECT_NEAR(got.data()[k], want[size_t(k)], 2e-5) << k;
    // Without edge attributes the output differs: the edge term is really there.
    Tape plain;
    const Tensor without = plain.value(conv.forward(plain, p.graph, plain.constant_ref(x), 3));
    float diff = 0.f;
    for (int64_t k = 0; k < without.numel(); ++k)
      diff = std::max(diff, std::fabs(without.data()[k] - float(want[size_t(k)])));
    EXPECT_GT(diff, 1e-3f);
  }
}

TEST(GATv2ConvEdgeFeatures, GradientsMatchFiniteDifferences) {
  const Graph raw = edgeattn::testing::uniform_graph(9, 9, 24, 3);
  const PreparedGraph p = prepare_graph(raw, true, random_tensor({raw.num_edges(), 3}, 5));
  Parameter xd{"x", random_tensor({9, 7}, 6), {}};
  Parameter attr{"edge_attr", Tensor(p.edge_attr), {}};
  // negative_slope 1 takes the LeakyReLU's kinks (one per feature of every edge) out of the
  // finite differences; the kernel's own gradient tests cover the slope.
  for (const auto& [options, what] : std::vector<std::pair<GATv2ConvOptions, std::string>>{
           {{.in_channels = 7, .out_channels = 3, .heads = 2, .negative_slope = 1.f, .edge_dim = 3},
            "concat"},
           {{.in_channels = 7,
           .out_channels = 2,
           .heads = 3,
           .concat = false,
           .negative_slope = 1.f,
           .edge_dim = 3,
           .share_weights = true},
            "mean, shared weights"},
           {{.in_channels = 7,
           .out_channels = 2,
           .heads = 2,
           .negative_slope = 1.f,
           .edge_dim = 3,
           .residual = true},
            "residual"},
           {{.in_channels = 7,
           .out_channels = 3,
           .heads = 2,
           .negative_slope = 1.f,
           .dropout = 0.3f,
           .edge_dim = 3},
            "dropout"}}) {
    GATv2Conv conv(options, "conv", 11);
    auto params = conv.parameters();
    params.push_back(&xd);
    params.push_back(&attr);  // a learned edge embedding gets its gradient too
    EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
      return weighted_sum(t, conv.forward(t, p.graph, t.parameter(xd), EdgeFeatures{t.parameter(attr)}, 42),
                          13);
    })) << what;
  }
}

TEST(GATv2ConvEdgeFeatures, BipartiteGradientsMatchFiniteDifferences) {
  const Graph raw = edgeattn::testing::uniform_graph(5, 8, 20, 21);  // 5 destinations, 8 sources
  const PreparedGraph p =
      prepare_graph(raw, true, random_tensor({raw.num_edges(), 2}, 22), FillValue::parse("max"));
  Parameter xs{"x_src", random_tensor({8, 4}, 23), {}}, xd{"x_dst", random_tensor({5, 3}, 24), {}};
  GATv2Conv conv({.in_channels = 4,
                  .in_channels_dst = 3,
                  .out_channels = 2,
                  .heads = 2,
                  .negative_slope = 1.f,
                  .edge_dim = 2},
                 "conv", 5);
  auto params = conv.parameters();
  params.insert(params.end(), {&xs, &xd});
  EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
    return weighted_sum(t,
                        conv.forward(t, p.graph, t.parameter(xs), t.parameter(xd),
                                     EdgeFeatures{t.constant_ref(p.edge_attr)}, 1),
                        25);
  }));
}

TEST(GATv2ConvEdgeFeatures, WrongEdgeAttributesAreRejected) {
  const Graph g = edgeattn::testing::prepared_random_graph(6, 12, 1);
  const Tensor x = random_tensor({6, 4}, 2);
  GATv2Conv conv({.in_channels = 4, .out_channels = 2, .edge_dim = 3}, "conv", 1);
  Tape t;
  expect_throw_naming<ShapeError>(
      [&] {
        conv.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges(), 2}))}, 1);
      },
      {"GATv2Conv conv.lin_l.weight", "edge_dim=3"});
  expect_throw_naming<ShapeError>(
      [&] {
        conv.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges() - 1, 3}))}, 1);
      },
      {"num_edges"});
  GATv2Conv plain({.in_channels = 4, .out_channels = 2}, "plain", 1);
  expect_throw_naming<InvalidArgument>(
      [&] {
        plain.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges(), 3}))}, 1);
      },
      {"no edge_dim", "GATv2ConvOptions::edge_dim"});
  EXPECT_THROW(GATv2Conv({.in_channels = 4, .out_channels = 2, .edge_dim = -1}), InvalidArgument);
}

}  // namespace
}  // namespace edgeattn::nn
