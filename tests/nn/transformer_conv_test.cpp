// TransformerConv: PyG's parameter names and shapes, a hand-computed forward on the 4-node graph
// (root weight and beta gating), and gradient checks (concat/mean, beta, root_weight, dropout;
// dense and sparse input).
#include "edgeattn/nn/transformer_conv.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "nn_test_util.hpp"
#include "support/gradcheck.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using edgeattn::testing::check_gradients;
using edgeattn::testing::names_and_shapes;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;
using Names = std::map<std::string, std::string>;

TEST(TransformerConv, ParameterNamesAndShapesFollowPyG) {
  // torch_geometric.nn.TransformerConv(5, 3, heads=2, beta=True)
  TransformerConv a({.in_channels = 5, .out_channels = 3, .heads = 2, .beta = true}, "conv1", 1);
  EXPECT_EQ(names_and_shapes(a.parameters()), (Names{{"conv1.lin_key.weight", "[6, 5]"},
                                                     {"conv1.lin_key.bias", "[6]"},
                                                     {"conv1.lin_query.weight", "[6, 5]"},
                                                     {"conv1.lin_query.bias", "[6]"},
                                                     {"conv1.lin_value.weight", "[6, 5]"},
                                                     {"conv1.lin_value.bias", "[6]"},
                                                     {"conv1.lin_skip.weight", "[6, 5]"},
                                                     {"conv1.lin_skip.bias", "[6]"},
                                                     {"conv1.lin_beta.weight", "[1, 18]"}}));
  // concat=False, beta=True, bias=False: lin_skip [3, 5] without bias, lin_beta [1, 9]
  TransformerConv b(
      {.in_channels = 5, .out_channels = 3, .heads = 2, .concat = false, .beta = true, .bias = false});
  const Names nb = names_and_shapes(b.parameters());
  EXPECT_EQ(nb.at("lin_skip.weight"), "[3, 5]");
  EXPECT_EQ(nb.count("lin_skip.bias"), 0u);
  EXPECT_EQ(nb.at("lin_beta.weight"), "[1, 9]");
  // root_weight=False: beta is off (PyG: beta and root_weight); lin_skip still exists
  TransformerConv c({.in_channels = 5, .out_channels = 3, .beta = true, .root_weight = false});
  EXPECT_EQ(names_and_shapes(c.parameters()).count("lin_beta.weight"), 0u);
  EXPECT_EQ(names_and_shapes(c.parameters()).at("lin_skip.weight"), "[3, 5]");
}

// Sets a Linear to weight w (row-major [out, in]) and bias b (or none).
void set(Linear& lin, std::vector<float> w, std::vector<float> b = {}) {
  lin.weight.value = Tensor(lin.weight.value.shape(), w);
  if (lin.has_bias())
    lin.bias.value = b.empty() ? Tensor(lin.bias.value.shape()) : Tensor(lin.bias.value.shape(), b);
}

TEST(TransformerConv, OneHeadForwardMatchesHandComputation) {
  // q = x, k = x, v = x + 1 (value bias 1), skip = 2x, C = 2: alpha_ij = softmax_j(x_i . x_j / sqrt 2)
  // Graph rows: 0 <- {0, 1}, 1 <- {0, 2}, 2 <- {}, 3 <- {1, 2, 3}; x: (1, 0), (0, 1), (1, 1), (2, 0)
  const std::vector<std::vector<float>> x = {{1, 0}, {0, 1}, {1, 1}, {2, 0}};
  const std::vector<std::vector<int>> rows = {{0, 1}, {0, 2}, {}, {1, 2, 3}};
  const Tensor xt({4, 2}, std::vector<float>{1, 0, 0, 1, 1, 1, 2, 0});
  auto attention = [&](int i) {
    std::vector<float> out(2, 0.f);
    float z = 0.f;
    for (int j : rows[static_cast<size_t>(i)]) {
      const float w = std::exp((x[i][0] * x[j][0] + x[i][1] * x[j][1]) / std::sqrt(2.f));
      z += w;
      for (int c = 0; c < 2; ++c) out[static_cast<size_t>(c)] += w * (x[j][c] + 1.f);
    }
    for (float& v : out) v = z > 0 ? v / z : 0.f;
    return out;
  };
  for (bool beta : {false, true}) {
    TransformerConv conv({.in_channels = 2, .out_channels = 2, .beta = beta});
    set(conv.lin_query, {1, 0, 0, 1});
    set(conv.lin_key, {1, 0, 0, 1});
    set(conv.lin_value, {1, 0, 0, 1}, {1, 1});
    set(conv.lin_skip, {2, 0, 0, 2});
    const std::vector<float> wb = {0.5f, -1.f, 0.25f, 0.f, 1.f, 2.f};  // lin_beta over [out, x_r, out - x_r]
    if (beta) set(*conv.lin_beta, wb);
    Tape tape;
    const Tensor& y =
        tape.value(conv.forward(tape, edgeattn::testing::four_node_graph(), tape.constant(xt), 0));
    for (int i = 0; i < 4; ++i) {
      const auto out = attention(i);
      const std::vector<float> xr = {2 * x[i][0], 2 * x[i][1]};
      float b = 0.f;
      if (beta) {
        float s = 0.f;
        for (int c = 0; c < 2; ++c) s += wb[c] * out[c] + wb[2 + c] * xr[c] + wb[4 + c] * (out[c] - xr[c]);
        b = 1.f / (1.f + std::exp(-s));
      }
      for (int c = 0; c < 2; ++c) {
        const float expected = beta ? b * xr[c] + (1 - b) * out[c] : out[c] + xr[c];
        EXPECT_NEAR(y(i, c), expected, 1e-5f) << "beta " << beta << " row " << i << " col " << c;
      }
    }
  }
}

TEST(TransformerConv, GradientsMatchFiniteDifferencesForEveryVariant) {
  const Graph g = edgeattn::testing::prepared_random_graph(9, 24, 3);
  const CsrMatrix xs = edgeattn::testing::sparse_features(9, 7, 0.3f, 4);
  Parameter xd{"x", random_tensor({9, 7}, 6), {}};
  const std::vector<std::pair<TransformerConvOptions, const char*>> cases = {
      {{.in_channels = 7, .out_channels = 3, .heads = 2}, "concat + root weight"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .concat = false}, "mean"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .beta = true}, "beta"},
      {{.in_channels = 7, .out_channels = 2, .heads = 3, .concat = false, .beta = true}, "mean + beta"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .root_weight = false}, "no root weight"},
      {{.in_channels = 7, .out_channels = 3, .heads = 2, .dropout = 0.3f, .bias = false}, "dropout, no bias"},
  };
  for (const auto& [options, what] : cases) {
    TransformerConv conv(options, "conv", 11);
    auto used = conv.parameters();
    if (!options.root_weight)  // lin_skip exists (as in PyG) but takes no part
      std::erase_if(used, [](Parameter* p) { return p->name.rfind("conv.lin_skip", 0) == 0; });
    EXPECT_TRUE(
        check_gradients(used, [&](Tape& t) { return weighted_sum(t, conv.forward(t, g, xs, 42), 13); }))
        << what << " (sparse input)";
    used.push_back(&xd);
    EXPECT_TRUE(check_gradients(
        used, [&](Tape& t) { return weighted_sum(t, conv.forward(t, g, t.parameter(xd), 42), 14); }))
        << what << " (dense input)";
  }
}

}  // namespace
}  // namespace edgeattn::nn
