// GraphTransformerBlock: parameter names and shapes, post-norm output statistics, equivalence of
// the attention to dense softmax attention on the complete graph, and gradient checks of every
// parameter (post-norm and pre-norm, GELU and ReLU, with dropout).
#include "edgeattn/nn/graph_transformer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using autograd::Var;
using edgeattn::testing::check_gradients;
using edgeattn::testing::names_and_shapes;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;
using Names = std::map<std::string, std::string>;

TEST(GraphTransformerBlock, ParameterNamesAndShapes) {
  GraphTransformerBlock block({.channels = 8, .heads = 2, .ffn_hidden = 12}, "blocks.0", 1);
  EXPECT_EQ(names_and_shapes(block.parameters()), (Names{{"blocks.0.lin_query.weight", "[8, 8]"},
                                                         {"blocks.0.lin_query.bias", "[8]"},
                                                         {"blocks.0.lin_key.weight", "[8, 8]"},
                                                         {"blocks.0.lin_key.bias", "[8]"},
                                                         {"blocks.0.lin_value.weight", "[8, 8]"},
                                                         {"blocks.0.lin_value.bias", "[8]"},
                                                         {"blocks.0.attn_out.weight", "[8, 8]"},
                                                         {"blocks.0.attn_out.bias", "[8]"},
                                                         {"blocks.0.norm1.weight", "[8]"},
                                                         {"blocks.0.norm1.bias", "[8]"},
                                                         {"blocks.0.ffn.lin1.weight", "[12, 8]"},
                                                         {"blocks.0.ffn.lin1.bias", "[12]"},
                                                         {"blocks.0.ffn.lin2.weight", "[8, 12]"},
                                                         {"blocks.0.ffn.lin2.bias", "[8]"},
                                                         {"blocks.0.norm2.weight", "[8]"},
                                                         {"blocks.0.norm2.bias", "[8]"}}));
  GraphTransformerBlock wide({.channels = 6, .heads = 3});
  EXPECT_EQ(names_and_shapes(wide.parameters()).at("ffn.lin1.weight"), "[12, 6]");  // default 2 * channels
  edgeattn::testing::expect_throw_naming<InvalidArgument>(
      [] { GraphTransformerBlock bad({.channels = 8, .heads = 3}); }, {"channels=8", "heads=3", "divisible"});
}

TEST(GraphTransformerBlock, PostNormOutputRowsAreNormalised) {
  const Graph g = edgeattn::testing::prepared_random_graph(12, 30, 2);
  GraphTransformerBlock block({.channels = 8, .heads = 2, .dropout = 0.f}, "", 3);
  Tape tape;
  const Tensor& y = tape.value(block.forward(tape, g, tape.constant(random_tensor({12, 8}, 4)), 0));
  for (int64_t i = 0; i < 12; ++i) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < 8; ++c) mean += y(i, c) / 8.0;
    for (int64_t c = 0; c < 8; ++c) var += (y(i, c) - mean) * (y(i, c) - mean) / 8.0;
    EXPECT_NEAR(mean, 0.0, 1e-5);  // norm2 with weight 1, bias 0
    EXPECT_NEAR(var, 1.0, 1e-3);
  }
}

TEST(GraphTransformerBlock, AttentionOnTheCompleteGraphIsDenseSoftmaxAttention) {
  // Pre-norm with the FFN's output zeroed: y = x + attn_out(MHA(LayerNorm(x))), compared with a
  // dense softmax-attention reference written out below.
  const int64_t n = 5, d = 4, heads = 2, c = 2;
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) src.push_back(j), dst.push_back(i);
  const Graph complete = build_graph(n, n, src, dst);
  GraphTransformerBlock block({.channels = d, .heads = heads, .dropout = 0.f, .pre_norm = true}, "", 5);
  block.ffn_lin2.weight.value.fill(0.f);  // FFN contributes only its output bias
  block.ffn_lin2.bias.value.fill(0.f);
  const Tensor x = random_tensor({n, d}, 6);
  Tape tape;
  const Tensor& y = tape.value(block.forward(tape, complete, tape.constant(x), 0));
  // Dense reference: z = LayerNorm(x) (weight 1, bias 0), softmax attention per head, attn_out, residual.
  Tensor z({n, d});
  for (int64_t i = 0; i < n; ++i) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < d; ++k) m += x(i, k) / double(d);
    for (int64_t k = 0; k < d; ++k) v += (x(i, k) - m) * (x(i, k) - m) / double(d);
    for (int64_t k = 0; k < d; ++k) z(i, k) = static_cast<float>((x(i, k) - m) / std::sqrt(v + 1e-5));
  }
  auto lin = [&](const Linear& l, const Tensor& in) {
    Tensor out({n, d});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < d; ++o) {
        float s = l.bias.value(o);
        for (int64_t k = 0; k < d; ++k) s += l.weight.value(o, k) * in(i, k);
        out(i, o) = s;
      }
    return out;
  };
  const Tensor q = lin(block.lin_query, z), k = lin(block.lin_key, z), v = lin(block.lin_value, z);
  Tensor att({n, d});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> w(static_cast<size_t>(n));
      double zsum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t t = 0; t < c; ++t) s += q(i, h * c + t) * k(j, h * c + t);
        w[static_cast<size_t>(j)] = std::exp(s / std::sqrt(double(c)));
        zsum += w[static_cast<size_t>(j)];
      }
      for (int64_t t = 0; t < c; ++t) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += w[static_cast<size_t>(j)] / zsum * v(j, h * c + t);
        att(i, h * c + t) = static_cast<float>(acc);
      }
    }
  const Tensor projected = lin(block.attn_out, att);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < d; ++o) EXPECT_NEAR(y(i, o), x(i, o) + projected(i, o), 1e-5f) << i << "," << o;
}

TEST(GraphTransformerBlock, GradientsMatchFiniteDifferences) {
  const Graph g = edgeattn::testing::prepared_random_graph(8, 20, 3);
  Parameter x{"x", random_tensor({8, 6}, 4), {}};
  for (bool pre_norm : {false, true})
    for (FfnActivation act : {FfnActivation::gelu, FfnActivation::relu}) {
      GraphTransformerBlock block({.channels = 6,
                                   .heads = 2,
                                   .ffn_hidden = 5,
                                   .dropout = 0.2f,
                                   .attention_dropout = 0.2f,
                                   .activation = act,
                                   .pre_norm = pre_norm},
                                  "b", 7);
      for (auto* p : block.parameters())  // non-trivial norm parameters
        if (p->name.find("norm") != std::string::npos)
          p->value = random_tensor(p->value.shape(), 8, 0.5f, 1.5f);
      if (act == FfnActivation::relu) {
        // Keep every ReLU input at least ~0.4 away from the kink, on both sides, so finite
        // differences never cross it: small lin1 weights and biases of +-0.5.
        for (float& w : block.ffn_lin1.weight.value.span()) w *= 0.05f;
        for (int64_t i = 0; i < 5; ++i) block.ffn_lin1.bias.value(i) = i % 2 ? 0.5f : -0.5f;
      }
      auto params = block.parameters();
      params.push_back(&x);
      EXPECT_TRUE(check_gradients(
          params, [&](Tape& t) { return weighted_sum(t, block.forward(t, g, t.parameter(x), 9), 10); }))
          << "pre_norm " << pre_norm << " relu " << (act == FfnActivation::relu);
    }
}

}  // namespace
}  // namespace edgeattn::nn
