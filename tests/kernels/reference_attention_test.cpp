// Tests of the reference (serial) attention path, through the public API with
// config.path = AttentionPath::reference. This path is the oracle the fast paths are compared
// against, so its own checks are independent of any other implementation:
//   1. hand-computed values on the 4-node graph (exp() arithmetic written out per row);
//   2. every score checked against its documented formula, evaluated naively in this file;
//   3. finite-difference gradients for every score x normalisation x bias x head combine x dropout;
//   4. edge cases: huge logits, empty graph, invalid heads and dropout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::four_node_graph;
using testing::random_tensor;

AttentionConfig reference_config(Score score, Normalization norm = Normalization::softmax) {
  AttentionConfig c;
  c.score = score;
  c.normalization = norm;
  c.path = AttentionPath::reference;
  c.return_attention = true;
  return c;
}

Tensor make(Shape shape, std::vector<float> values) { return Tensor(shape, values); }

/// Expects `actual` (any shape) to equal `expected` element-wise in row-major order.
void expect_values(const Tensor& actual, const std::vector<double>& expected, double tol = 1e-5) {
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size())) << "shape " << actual.shape().str();
  for (size_t n = 0; n < expected.size(); ++n) {
    if (std::isinf(expected[n]))
      EXPECT_EQ(actual.data()[n], static_cast<float>(expected[n])) << "element " << n;
    else
      EXPECT_NEAR(actual.data()[n], expected[n], tol) << "element " << n;
  }
}

bool all_finite(const Tensor& t) {
  for (int64_t n = 0; n < t.numel(); ++n)
    if (!std::isfinite(t.data()[n])) return false;
  return true;
}

// ------------------------------------------------------------------------------------------------
// 1. Hand-computed values on the 4-node graph:
//    row 0 <- {0, 1}, row 1 <- {0, 2}, row 2 <- {} (isolated), row 3 <- {1, 2, 3}
// One head, Dk = Dv = 2, scale 1 so the scores are small integers.
// ------------------------------------------------------------------------------------------------

const double kInf = std::numeric_limits<double>::infinity();

struct FourNode {
  Graph graph = four_node_graph();
  Tensor q = make({4, 1, 2}, {1, 0, /**/ 0, 1, /**/ 1, 1, /**/ 1, -1});
  Tensor k = make({4, 1, 2}, {1, 0, /**/ 0, 1, /**/ 2, 0, /**/ 1, 1});
  Tensor v = make({4, 1, 2}, {1, 0, /**/ 0, 1, /**/ 2, 2, /**/ -1, 3});
};

TEST(ReferenceAttention, DotProductSoftmaxMatchesHandComputedValues) {
  FourNode f;
  AttentionConfig config = reference_config(Score::dot_product);
  config.scale = 1.f;
  const AttentionResult r = attention_forward(f.graph, {.query = f.q, .key = f.k, .value = f.v}, config);
  EXPECT_EQ(r.path, AttentionPath::reference);

  // Row 0: s = <q0,k0> = 1, <q0,k1> = 0.
  const double z0 = std::exp(1.0) + std::exp(0.0);
  const double a00 = std::exp(1.0) / z0, a01 = std::exp(0.0) / z0;
  // Row 1: s = <q1,k0> = 0, <q1,k2> = 0: uniform.
  const double a10 = 0.5, a12 = 0.5;
  // Row 3: s = <q3,k1> = -1, <q3,k2> = 2, <q3,k3> = 0.
  const double z3 = std::exp(-1.0) + std::exp(2.0) + std::exp(0.0);
  const double a31 = std::exp(-1.0) / z3, a32 = std::exp(2.0) / z3, a33 = std::exp(0.0) / z3;

  expect_values(r.out, {a00 * 1 + a01 * 0, a00 * 0 + a01 * 1,                // row 0: a00 v0 + a01 v1
                        a10 * 1 + a12 * 2, a10 * 0 + a12 * 2,                // row 1: a10 v0 + a12 v2
                        0, 0,                                                // row 2: isolated
                        a31 * 0 + a32 * 2 - a33, a31 + a32 * 2 + a33 * 3});  // row 3
  expect_values(r.row_stats, {std::log(z0), std::log(2.0), -kInf, std::log(z3)});
  // CSR order: (0<-0), (0<-1), (1<-0), (1<-2), (3<-1), (3<-2), (3<-3).
  expect_values(r.attention, {a00, a01, a10, a12, a31, a32, a33});
}

TEST(ReferenceAttention, TwoHeadsAreComputedIndependentlyAndCombineByConcatOrMean) {
  // Head 0 is the single-head example; head 1 negates q (negating every score) and swaps the two
  // value components.
  FourNode f;
  Tensor q({4, 2, 2}), k({4, 2, 2}), v({4, 2, 2});
  for (int n = 0; n < 4; ++n)
    for (int c = 0; c < 2; ++c) {
      q(n, 0, c) = f.q(n, 0, c), q(n, 1, c) = -f.q(n, 0, c);
      k(n, 0, c) = k(n, 1, c) = f.k(n, 0, c);
      v(n, 0, c) = f.v(n, 0, c), v(n, 1, c) = f.v(n, 0, 1 - c);
    }
  AttentionConfig config = reference_config(Score::dot_product);
  config.scale = 1.f;
  const AttentionInputs in{.query = q, .key = k, .value = v};
  const AttentionResult concat = attention_forward(f.graph, in, config);

  // Head 0, as in the single-head test: out[row][dim].
  const double z0 = std::exp(1.0) + 1, z3 = std::exp(-1.0) + std::exp(2.0) + 1;
  const double head0[4][2] = {
      {std::exp(1.0) / z0, 1 / z0},
      {1.5, 1},
      {0, 0},
      {(2 * std::exp(2.0) - 1) / z3, (std::exp(-1.0) + 2 * std::exp(2.0) + 3) / z3},
  };
  // Head 1: scores row 0 {-1, 0}, row 1 {0, 0}, row 3 {1, -2, 0}; swapped values
  // v0' = [0, 1], v1' = [1, 0], v2' = [2, 2], v3' = [3, -1].
  const double y0 = std::exp(-1.0) + 1, y3 = std::exp(1.0) + std::exp(-2.0) + 1;
  const double head1[4][2] = {
      {1 / y0, std::exp(-1.0) / y0},  // (e^-1 v0' + v1') / y0
      {1, 1.5},                       // (v0' + v2') / 2
      {0, 0},
      {(std::exp(1.0) + 2 * std::exp(-2.0) + 3) / y3, (2 * std::exp(-2.0) - 1) / y3},
  };
  std::vector<double> interleaved, mean;  // [4, 2 heads, 2] and [4, 2]
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 2; ++c) interleaved.push_back(head0[i][c]);
    for (int c = 0; c < 2; ++c) interleaved.push_back(head1[i][c]);
    for (int c = 0; c < 2; ++c) mean.push_back(0.5 * (head0[i][c] + head1[i][c]));
  }
  expect_values(concat.out, interleaved);
  EXPECT_EQ(concat.out.shape(), Shape({4, 2, 2}));
  expect_values(concat.row_stats, {std::log(z0), std::log(y0), std::log(2.0), std::log(2.0), -kInf, -kInf,
                                   std::log(z3), std::log(y3)});

  config.combine = HeadCombine::mean;
  const AttentionResult averaged = attention_forward(f.graph, in, config);
  EXPECT_EQ(averaged.out.shape(), Shape({4, 2}));
  expect_values(averaged.out, mean);
}

TEST(ReferenceAttention, AdditiveSoftmaxMatchesHandComputedValues) {
  FourNode f;
  const Tensor sd = make({4, 1}, {0.5f, -1.f, 0.f, 1.f});
  const Tensor ss = make({4, 1}, {1.f, -2.f, 0.5f, 0.f});
  AttentionConfig config = reference_config(Score::additive);
  config.negative_slope = 0.2f;
  const AttentionResult r =
      attention_forward(f.graph, {.value = f.v, .score_dst = sd, .score_src = ss}, config);

  // s = leaky(sd_i + ss_j), slope 0.2.
  // Row 0: leaky(0.5 + 1) = 1.5, leaky(0.5 - 2) = -0.3.
  const double z0 = std::exp(1.5) + std::exp(-0.3);
  // Row 1: leaky(-1 + 1) = 0, leaky(-1 + 0.5) = -0.1.
  const double z1 = std::exp(0.0) + std::exp(-0.1);
  // Row 3: leaky(1 - 2) = -0.2, leaky(1 + 0.5) = 1.5, leaky(1 + 0) = 1.
  const double z3 = std::exp(-0.2) + std::exp(1.5) + std::exp(1.0);

  expect_values(r.out, {std::exp(1.5) / z0, std::exp(-0.3) / z0,                 // e^1.5 v0 + e^-0.3 v1
                        (1 + 2 * std::exp(-0.1)) / z1, 2 * std::exp(-0.1) / z1,  // v0 + e^-0.1 v2
                        0, 0,                                                    // isolated
                        (2 * std::exp(1.5) - std::exp(1.0)) / z3,                // e^-0.2 v1 + e^1.5 v2
                        (std::exp(-0.2) + 2 * std::exp(1.5) + 3 * std::exp(1.0)) / z3});  //   + e^1 v3
  expect_values(r.row_stats, {std::log(z0), std::log(z1), -kInf, std::log(z3)});
  expect_values(r.attention, {std::exp(1.5) / z0, std::exp(-0.3) / z0, 1 / z1, std::exp(-0.1) / z1,
                              std::exp(-0.2) / z3, std::exp(1.5) / z3, std::exp(1.0) / z3});
}

TEST(ReferenceAttention, ReluNormalisationKeepsPositiveScoresUnnormalised) {
  FourNode f;
  AttentionConfig config = reference_config(Score::dot_product, Normalization::relu);
  config.scale = 1.f;
  const AttentionResult r = attention_forward(f.graph, {.query = f.q, .key = f.k, .value = f.v}, config);
  // Scores as in the softmax example: row 0 {1, 0}, row 1 {0, 0}, row 3 {-1, 2, 0}; alpha = max(s, 0).
  expect_values(r.attention, {1, 0, 0, 0, 0, 2, 0});
  expect_values(r.out, {1, 0,    // 1 * v0
                        0, 0,    // all weights zero
                        0, 0,    // isolated
                        4, 4});  // 2 * v2
  EXPECT_EQ(r.row_stats.data(), nullptr) << "relu has no row log-sum-exp";
}

TEST(ReferenceAttention, IsolatedRowGivesZerosAndMinusInfinityLse) {
  const Graph g = four_node_graph();
  const Tensor q = random_tensor({4, 2, 3}, 1), k = random_tensor({4, 2, 3}, 2),
               v = random_tensor({4, 2, 5}, 3);
  for (Normalization norm : {Normalization::softmax, Normalization::relu}) {
    SCOPED_TRACE(to_string(norm));
    const AttentionResult r =
        attention_forward(g, {.query = q, .key = k, .value = v}, reference_config(Score::dot_product, norm));
    for (int h = 0; h < 2; ++h) {
      for (int d = 0; d < 5; ++d) EXPECT_EQ(r.out(2, h, d), 0.f);
      if (norm == Normalization::softmax) {
        EXPECT_EQ(r.row_stats(2, h), -std::numeric_limits<float>::infinity());
      }
    }
  }
}

TEST(ReferenceAttention, DefaultScaleIsInverseSqrtOfHeadDim) {
  const Graph g = four_node_graph();
  const Tensor q = random_tensor({4, 1, 4}, 4), k = random_tensor({4, 1, 4}, 5),
               v = random_tensor({4, 1, 2}, 6);
  AttentionConfig config = reference_config(Score::dot_product);
  const AttentionResult by_default = attention_forward(g, {.query = q, .key = k, .value = v}, config);
  config.scale = 0.5f;  // 1 / sqrt(4)
  const AttentionResult explicit_scale = attention_forward(g, {.query = q, .key = k, .value = v}, config);
  EXPECT_EQ(max_abs_diff(by_default.out, explicit_scale.out), 0.f);
}

// ------------------------------------------------------------------------------------------------
// 2. Operands for any score, and the scores evaluated naively from the public formulas
// (attention.hpp), without the projections the dispatch applies.
// ------------------------------------------------------------------------------------------------

struct Operands {
  Tensor query, key, value, score_dst, score_src, weight, key_weight, att, edge_bias, score_edge, edge_attr,
      edge_proj;

  AttentionInputs inputs() const {
    return {.query = query,
            .key = key,
            .value = value,
            .score_dst = score_dst,
            .score_src = score_src,
            .weight = weight,
            .key_weight = key_weight,
            .att = att,
            .edge_bias = edge_bias,
            .score_edge = score_edge,
            .edge_attr = edge_attr,
            .edge_proj = edge_proj};
  }
};

/// Random operands for `score` on `g` with H heads, Dk = dk, Dv = dv, perceptron hidden size c.
/// `bias`: an edge bias, and for the additive score also its per-edge term score_edge; for gatv2
/// and perceptron edge attributes with their projection.
Operands random_operands(const Graph& g, Score score, bool bias, uint64_t seed, int64_t heads = 2,
                         int64_t dk = 3, int64_t dv = 2, int64_t c = 4) {
  const int64_t nd = g.num_dst(), ns = g.num_src();
  Operands o;
  o.value = random_tensor({ns, heads, dv}, seed + 1);
  if (score == Score::additive) {
    o.score_dst = random_tensor({nd, heads}, seed + 2);
    o.score_src = random_tensor({ns, heads}, seed + 3);
  } else {
    o.query = random_tensor({nd, heads, dk}, seed + 4);
    o.key = random_tensor({ns, heads, dk}, seed + 5);
  }
  if (score == Score::gatv2) o.att = random_tensor({heads, dk}, seed + 6);
  if (score == Score::bilinear) o.weight = random_tensor({heads, dk, dk}, seed + 7);
  if (score == Score::perceptron) {
    o.weight = random_tensor({heads, c, dk}, seed + 7);
    o.key_weight = random_tensor({heads, c, dk}, seed + 8);
    o.att = random_tensor({heads, c}, seed + 9);
  }
  if (bias) o.edge_bias = random_tensor({g.num_edges(), heads}, seed + 10);
  if (bias && score == Score::additive) o.score_edge = random_tensor({g.num_edges(), heads}, seed + 11);
  if (bias &&
      (score == Score::gatv2 || score == Score::perceptron || (score == Score::dot_product && dk == dv))) {
    o.edge_attr = random_tensor({g.num_edges(), 2}, seed + 12);
    o.edge_proj = random_tensor({heads, score == Score::perceptron ? c : dk, 2}, seed + 13, -0.5f, 0.5f);
  }
  return o;
}

double leaky(double x, double slope) { return x > 0 ? x : slope * x; }

struct NaiveScores {
  std::vector<double> score;         // [E, H], bias included
  std::vector<double> leaky_inputs;  // every value fed to a LeakyReLU (additive, gatv2)
};

/// The score of every edge and head straight from the formulas in attention.hpp.
NaiveScores naive_scores(const Graph& g, const Operands& o, const AttentionConfig& config) {
  const int64_t H = o.value.dim(1);
  const int64_t dk = o.query.data() ? o.query.dim(2) : 0;
  const double scale = config.scale > 0 ? config.scale : 1.0 / std::sqrt(double(dk));
  const double slope = config.negative_slope;
  NaiveScores r;
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t e = g.row_ptr()[size_t(i)]; e < g.row_ptr()[size_t(i) + 1]; ++e) {
      const int64_t j = g.col_idx()[size_t(e)];
      for (int64_t h = 0; h < H; ++h) {
        double s = 0;
        switch (config.score) {
          case Score::dot_product:  // scale <q_i, k_j [+ W_e x_e]>
            for (int64_t a = 0; a < dk; ++a) {
              double k = o.key(j, h, a);
              if (o.edge_attr.data())
                for (int64_t f = 0; f < o.edge_attr.dim(1); ++f)
                  k += double(o.edge_proj(h, a, f)) * o.edge_attr(e, f);
              s += scale * o.query(i, h, a) * k;
            }
            break;
          case Score::additive: {  // leaky(sd_i + ss_j + se_e)
            double z = double(o.score_dst(i, h)) + o.score_src(j, h);
            if (o.score_edge.data()) z += o.score_edge(e, h);
            r.leaky_inputs.push_back(z);
            s = leaky(z, slope);
            break;
          }
          case Score::gatv2:  // a . leaky(q_i + k_j [+ W_e x_e])
            for (int64_t a = 0; a < dk; ++a) {
              double z = double(o.query(i, h, a)) + o.key(j, h, a);
              if (o.edge_attr.data())
                for (int64_t f = 0; f < o.edge_attr.dim(1); ++f)
                  z += double(o.edge_proj(h, a, f)) * o.edge_attr(e, f);
              r.leaky_inputs.push_back(z);
              s += o.att(h, a) * leaky(z, slope);
            }
            break;
          case Score::bilinear:  // scale q_i W k_j^T
            for (int64_t a = 0; a < dk; ++a)
              for (int64_t b = 0; b < dk; ++b)
                s += scale * o.query(i, h, a) * o.weight(h, a, b) * o.key(j, h, b);
            break;
          case Score::perceptron:  // v . tanh(W q_i + U k_j [+ W_e x_e])
            for (int64_t c = 0; c < o.att.dim(1); ++c) {
              double pre = 0;
              for (int64_t a = 0; a < dk; ++a)
                pre += double(o.weight(h, c, a)) * o.query(i, h, a) +
                       double(o.key_weight(h, c, a)) * o.key(j, h, a);
              if (o.edge_attr.data())
                for (int64_t f = 0; f < o.edge_attr.dim(1); ++f)
                  pre += double(o.edge_proj(h, c, f)) * o.edge_attr(e, f);
              s += o.att(h, c) * std::tanh(pre);
            }
            break;
        }
        if (o.edge_bias.data()) s += o.edge_bias(e, h);
        r.score.push_back(s);
      }
    }
  return r;
}

constexpr Score kAllScores[] = {Score::dot_product, Score::additive, Score::gatv2, Score::bilinear,
                                Score::perceptron};

TEST(ReferenceAttention, EveryScoreMatchesItsDocumentedFormula) {
  const Graph g = testing::power_law_graph(9, 24, 11);
  for (Score score : kAllScores)
    for (Normalization norm : {Normalization::softmax, Normalization::relu}) {
      SCOPED_TRACE(std::string(to_string(score)) + " " + to_string(norm));
      const Operands o = random_operands(g, score, /*bias=*/true, 100);
      const AttentionConfig config = reference_config(score, norm);
      const AttentionResult r = attention_forward(g, o.inputs(), config);
      const std::vector<double> s = naive_scores(g, o, config).score;
      const int64_t H = o.value.dim(1), dv = o.value.dim(2);
      for (int64_t i = 0; i < g.num_dst(); ++i) {
        const int64_t begin = g.row_ptr()[size_t(i)], end = g.row_ptr()[size_t(i) + 1];
        for (int64_t h = 0; h < H; ++h) {
          std::vector<double> alpha;
          double sum = 0;
          for (int64_t e = begin; e < end; ++e) {
            alpha.push_back(norm == Normalization::softmax ? std::exp(s[size_t(e * H + h)])
                                                           : std::max(s[size_t(e * H + h)], 0.0));
            sum += alpha.back();
          }
          if (norm == Normalization::softmax)
            for (double& a : alpha) a /= sum;
          for (int64_t d = 0; d < dv; ++d) {
            double expected = 0;
            for (int64_t e = begin; e < end; ++e)
              expected += alpha[size_t(e - begin)] * o.value(g.col_idx()[size_t(e)], h, d);
            EXPECT_NEAR(r.out(i, h, d), expected, 1e-5) << "row " << i << " head " << h << " dim " << d;
          }
          for (int64_t e = begin; e < end; ++e)
            EXPECT_NEAR(r.attention(e, h), alpha[size_t(e - begin)], 1e-6) << "edge " << e << " head " << h;
        }
      }
    }
}

TEST(ReferenceAttention, DropoutZeroesMaskedWeightsAndRescalesSurvivors) {
  const Graph g = testing::power_law_graph(12, 40, 3);
  const Operands o = random_operands(g, Score::dot_product, /*bias=*/false, 200);
  AttentionConfig config = reference_config(Score::dot_product);
  config.dropout = 0.4f;
  config.seed = 1234;
  const AttentionResult r = attention_forward(g, o.inputs(), config);
  const int64_t H = 2, dv = 2;
  int64_t dropped = 0;
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < dv; ++d) {
        double expected = 0;  // sum over kept edges of alpha / (1 - p) * v_j, alpha before dropout
        for (int64_t e = g.row_ptr()[size_t(i)]; e < g.row_ptr()[size_t(i) + 1]; ++e) {
          const int32_t j = g.col_idx()[size_t(e)];
          if (dropout_keep(config.seed, i, j, static_cast<int32_t>(h), config.dropout))
            expected += r.attention(e, h) / (1.0 - 0.4) * o.value(j, h, d);
          else if (d == 0)
            ++dropped;
        }
        EXPECT_NEAR(r.out(i, h, d), expected, 1e-5) << "row " << i << " head " << h;
      }
  EXPECT_GT(dropped, 0) << "the test graph should drop some edges at p = 0.4";
}

// ------------------------------------------------------------------------------------------------
// 3. Finite-difference gradient checks: loss = sum(out * R) for a fixed random R, central
//    differences on every element of every operand the score uses.
// ------------------------------------------------------------------------------------------------

struct OperandField {
  const char* name;
  Tensor Operands::*input;
  Tensor AttentionGrads::*grad;
};

constexpr OperandField kOperandFields[] = {
    {"query", &Operands::query, &AttentionGrads::query},
    {"key", &Operands::key, &AttentionGrads::key},
    {"value", &Operands::value, &AttentionGrads::value},
    {"score_dst", &Operands::score_dst, &AttentionGrads::score_dst},
    {"score_src", &Operands::score_src, &AttentionGrads::score_src},
    {"weight", &Operands::weight, &AttentionGrads::weight},
    {"key_weight", &Operands::key_weight, &AttentionGrads::key_weight},
    {"att", &Operands::att, &AttentionGrads::att},
    {"edge_bias", &Operands::edge_bias, &AttentionGrads::edge_bias},
    {"score_edge", &Operands::score_edge, &AttentionGrads::score_edge},
    {"edge_attr", &Operands::edge_attr, &AttentionGrads::edge_attr},
    {"edge_proj", &Operands::edge_proj, &AttentionGrads::edge_proj},
};

/// The values at which the loss has kinks: LeakyReLU inputs, and the scores under relu.
/// A finite difference is valid only when no perturbation moves one of them across 0.
std::vector<bool> kink_sides(const Graph& g, const Operands& o, const AttentionConfig& config) {
  NaiveScores s = naive_scores(g, o, config);
  std::vector<bool> sides;
  for (double z : s.leaky_inputs) sides.push_back(z > 0);
  if (config.normalization == Normalization::relu)
    for (double z : s.score) sides.push_back(z > 0);
  return sides;
}

/// Compares attention_backward with central differences of loss = sum(out * R) for every operand
/// element. Elements whose perturbation crosses a kink are skipped (at most a quarter per operand;
/// an `att` element moves every score of its head, so it is the likeliest to cross).
void expect_gradients_match_finite_differences(const Graph& g, Operands o, const AttentionConfig& config,
                                               uint64_t seed) {
  const AttentionResult fwd = attention_forward(g, o.inputs(), config);
  const Tensor R = random_tensor(fwd.out.shape(), seed);
  const AttentionGrads grads = attention_backward(g, o.inputs(), config, fwd, R);
  auto loss = [&] {
    const Tensor out = attention_forward(g, o.inputs(), config).out;
    double sum = 0;
    for (int64_t n = 0; n < out.numel(); ++n) sum += double(out.data()[n]) * R.data()[n];
    return sum;
  };
  const std::vector<bool> base_sides = kink_sides(g, o, config);
  const float step = 5e-3f;

  for (const OperandField& field : kOperandFields) {
    Tensor& x = o.*field.input;
    if (x.data() == nullptr) continue;  // not used by this score
    SCOPED_TRACE(field.name);
    const Tensor& grad = grads.*field.grad;
    ASSERT_EQ(grad.shape(), x.shape()) << "gradient of " << field.name;
    int64_t skipped = 0;
    for (int64_t n = 0; n < x.numel(); ++n) {
      const float original = x.data()[n];
      const float plus = original + step, minus = original - step;
      x.data()[n] = plus;
      const double loss_plus = loss();
      const bool crosses_plus = kink_sides(g, o, config) != base_sides;
      x.data()[n] = minus;
      const double loss_minus = loss();
      const bool crosses_minus = kink_sides(g, o, config) != base_sides;
      x.data()[n] = original;
      if (crosses_plus || crosses_minus) {
        ++skipped;
        continue;
      }
      const double numeric = (loss_plus - loss_minus) / (double(plus) - double(minus));
      const double analytic = grad.data()[n];
      EXPECT_NEAR(analytic, numeric, 5e-3 * std::max(std::abs(numeric), std::abs(analytic)) + 2e-4)
          << field.name << " element " << n;
    }
    EXPECT_LE(skipped * 4, x.numel()) << field.name << ": too many elements near a kink to check";
  }
}

struct GradientCase {
  Score score;
  Normalization norm;
  bool bias;
  HeadCombine combine;
  bool dropout;
};

class ReferenceAttentionGradient : public ::testing::TestWithParam<GradientCase> {};

TEST_P(ReferenceAttentionGradient, MatchesFiniteDifferences) {
  const GradientCase& p = GetParam();
  // 8 nodes, about 20 edges, self-loops on every third node and an isolated row.
  const Graph g = testing::power_law_graph(8, 20, 5);
  ASSERT_GE(g.degree_stats().isolated_rows, 1);
  ASSERT_GE(g.degree_stats().self_loops, 1);
  AttentionConfig config = reference_config(p.score, p.norm);
  config.combine = p.combine;
  if (p.dropout) {
    config.dropout = 0.3f;
    config.seed = 99;
  }
  expect_gradients_match_finite_differences(g, random_operands(g, p.score, p.bias, 300), config, 400);
}

std::vector<GradientCase> all_gradient_cases() {
  std::vector<GradientCase> cases;
  for (Score score : kAllScores)
    for (Normalization norm : {Normalization::softmax, Normalization::relu})
      for (bool bias : {false, true})
        for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean})
          for (bool dropout : {false, true}) cases.push_back({score, norm, bias, combine, dropout});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllScoresAndOptions, ReferenceAttentionGradient,
                         ::testing::ValuesIn(all_gradient_cases()),
                         [](const ::testing::TestParamInfo<GradientCase>& info) {
                           const GradientCase& p = info.param;
                           return std::string(to_string(p.score)) + "_" + to_string(p.norm) +
                                  (p.bias ? "_bias" : "") +
                                  (p.combine == HeadCombine::mean ? "_mean" : "_concat") +
                                  (p.dropout ? "_dropout" : "");
                         });

TEST(ReferenceAttention, GradientsMatchFiniteDifferencesOnABipartiteGraph) {
  const Graph g = testing::uniform_graph(5, 7, 16, 21);  // 5 destinations attend to 7 sources
  for (Score score : kAllScores) {
    SCOPED_TRACE(to_string(score));
    expect_gradients_match_finite_differences(g, random_operands(g, score, /*bias=*/true, 500),
                                              reference_config(score), 600);
  }
}

// TransformerConv's edge features: the dot score with projected edge attributes added to keys and
// values (Dv = Dk), every normalisation and head combination, with dropout.
TEST(ReferenceAttention, DotScoreWithEdgeAttributesGradientsMatchFiniteDifferences) {
  const Graph g = testing::power_law_graph(8, 20, 5);
  for (Normalization norm : {Normalization::softmax, Normalization::relu})
    for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
      SCOPED_TRACE(std::string(to_string(norm)) + (combine == HeadCombine::mean ? " mean" : " concat"));
      AttentionConfig config = reference_config(Score::dot_product, norm);
      config.combine = combine;
      config.dropout = 0.3f;
      config.seed = 17;
      const Operands o =
          random_operands(g, Score::dot_product, /*bias=*/true, 700, /*heads=*/2, /*dk=*/3, /*dv=*/3);
      ASSERT_FALSE(o.edge_attr.absent());
      expect_gradients_match_finite_differences(g, o, config, 800);
    }
}

// The value term by hand: one edge into node 0 with weight 1, so out_0 = v_1 + W_e x_e.
TEST(ReferenceAttention, DotScoreEdgeAttributesAddToTheValue) {
  const Graph g = build_graph(2, 2, std::vector<int64_t>{1}, std::vector<int64_t>{0});
  const Tensor q({2, 1, 2}, std::vector<float>{1, 0, 0, 0}), k({2, 1, 2}, std::vector<float>{0, 0, 0, 0});
  const Tensor v({2, 1, 2}, std::vector<float>{0, 0, 1, 2});
  const Tensor ea({1, 1}, std::vector<float>{3}), we({1, 2, 1}, std::vector<float>{0.5f, -1});
  const AttentionResult r =
      attention_forward(g, {.query = q, .key = k, .value = v, .edge_attr = ea, .edge_proj = we},
                        reference_config(Score::dot_product));
  expect_values(r.out, {2.5f, -1, 0, 0});  // v_1 + (1.5, -3); row 1 has no edges
}

// ------------------------------------------------------------------------------------------------
// 4. Edge cases.
// ------------------------------------------------------------------------------------------------

TEST(ReferenceAttention, HugeLogitsGiveFiniteOutputsAndOneHotWeights) {
  // The 4-node example with q scaled by +-1e4: scores are +-1e4 and +-2e4.
  for (float sign : {1.f, -1.f}) {
    SCOPED_TRACE(sign);
    FourNode f;
    for (int64_t n = 0; n < f.q.numel(); ++n) f.q.data()[n] *= sign * 1e4f;
    AttentionConfig config = reference_config(Score::dot_product);
    config.scale = 1.f;
    const AttentionInputs in{.query = f.q, .key = f.k, .value = f.v};
    const AttentionResult r = attention_forward(f.graph, in, config);
    ASSERT_TRUE(all_finite(r.out));
    ASSERT_TRUE(all_finite(r.attention));
    // Row scores times sign: row 0 {1e4, 0}, row 1 {0, 0}, row 3 {-1e4, 2e4, 0}.
    if (sign > 0) {
      expect_values(r.attention, {1, 0, 0.5, 0.5, 0, 1, 0});
      expect_values(r.out, {1, 0, 1.5, 1, 0, 0, 2, 2});
      EXPECT_FLOAT_EQ(r.row_stats(3, 0), 2e4f);
    } else {
      expect_values(r.attention, {0, 1, 0.5, 0.5, 1, 0, 0});
      expect_values(r.out, {0, 1, 1.5, 1, 0, 0, 0, 1});
      EXPECT_FLOAT_EQ(r.row_stats(3, 0), 1e4f);
    }
    const AttentionGrads grads = attention_backward(f.graph, in, config, r, random_tensor(r.out.shape(), 7));
    EXPECT_TRUE(all_finite(grads.query));
    EXPECT_TRUE(all_finite(grads.key));
    EXPECT_TRUE(all_finite(grads.value));

    config.normalization = Normalization::relu;
    const AttentionResult relu = attention_forward(f.graph, in, config);
    EXPECT_TRUE(all_finite(relu.out));
  }
}

TEST(ReferenceAttention, EmptyGraphGivesEmptyOutputs) {
  const Graph g;  // 0 nodes, 0 edges
  const Tensor q({0, 2, 3}), k({0, 2, 3}), v({0, 2, 4});
  const AttentionInputs in{.query = q, .key = k, .value = v};
  const AttentionConfig config = reference_config(Score::dot_product);
  const AttentionResult r = attention_forward(g, in, config);
  EXPECT_EQ(r.out.shape(), Shape({0, 2, 4}));
  EXPECT_EQ(r.attention.shape(), Shape({0, 2}));
  const AttentionGrads grads = attention_backward(g, in, config, r, r.out);
  EXPECT_EQ(grads.query.shape(), Shape({0, 2, 3}));
  EXPECT_EQ(grads.value.shape(), Shape({0, 2, 4}));
}

TEST(ReferenceAttention, ZeroHeadsIsRejectedWithAClearMessage) {
  const Graph g = four_node_graph();
  const Tensor q({4, 0, 2}), k({4, 0, 2}), v({4, 0, 2});
  try {
    attention_forward(g, {.query = q, .key = k, .value = v}, reference_config(Score::dot_product));
    FAIL() << "zero heads should be rejected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("heads"), std::string::npos) << e.what();
  }
}

TEST(ReferenceAttention, DropoutOfOneOrNegativeIsRejected) {
  FourNode f;
  for (float p : {1.f, 1.5f, -0.1f}) {
    SCOPED_TRACE(p);
    AttentionConfig config = reference_config(Score::dot_product);
    config.dropout = p;
    try {
      attention_forward(f.graph, {.query = f.q, .key = f.k, .value = f.v}, config);
      FAIL() << "dropout " << p << " should be rejected";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("dropout"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace edgeattn
