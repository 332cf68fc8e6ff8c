// GATConv with edge features (edge_dim, PyG's lin_edge / att_edge): parameter names and shapes,
// the forward against the definition written out per edge in double (the [E, H*C] projection
// PyG forms, which the layer never stores), finite-difference gradients of every parameter and
// of the edge attributes (fused dense path, unfused residual and sparse paths, bipartite), and
// nn::prepare_graph carrying edge attributes with each fill_value. Also the op behind it,
// autograd::fold_head_scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
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

double leaky(double x, double slope) { return x > 0 ? x : slope * x; }

// out_i = sum_j softmax_j(leaky(a_dst.h_i + a_src.h_j + a_edge.(W_e x_e))) h_j, heads concatenated,
// plus bias: PyG's GATConv with edge_dim, in double, per edge.
std::vector<double> reference_gat(const GATConv& conv, const Graph& g, const Tensor& x, const Tensor& attr) {
  const auto& o = conv.options();
  const int64_t h = o.heads, c = o.out_channels, hc = h * c;
  const std::vector<double> hx = edgeattn::testing::affine(conv.lin, x);
  const float *a_dst = conv.att_dst.value.data(), *a_src = conv.att_src.value.data(),
              *a_edge = conv.att_edge.value.data();
  std::vector<double> out(static_cast<size_t>(g.num_dst() * hc), 0.0);
  edgeattn::testing::attend_per_edge(
      g, h, c,
      [&](int64_t i, int64_t j, int64_t e, int64_t k) {
        double z = 0;
        for (int64_t d = 0; d < c; ++d)
          z += double(a_dst[k * c + d]) * hx[size_t(i * hc + k * c + d)] +
               double(a_src[k * c + d]) * hx[size_t(j * hc + k * c + d)] +
               double(a_edge[k * c + d]) *
                   edgeattn::testing::edge_projection(conv.lin_edge->weight.value, attr, e, k * c + d);
        return leaky(z, o.negative_slope);
      },
      [&](int64_t j, int64_t, int64_t k, int64_t d) { return hx[size_t(j * hc + k * c + d)]; }, out);
  if (o.bias)
    for (int64_t i = 0; i < g.num_dst(); ++i)
      for (int64_t k = 0; k < hc; ++k) out[size_t(i * hc + k)] += conv.bias.value.data()[k];
  return out;
}

TEST(GATConvEdgeFeatures, ParametersFollowPyG) {
  GATConv conv({.in_channels = 5, .out_channels = 3, .heads = 2, .edge_dim = 4}, "conv", 1);
  const auto names = names_and_shapes(conv.parameters());
  EXPECT_EQ(names.at("conv.lin_edge.weight"), "[6, 4]");
  EXPECT_EQ(names.at("conv.att_edge"), "[1, 2, 3]");
  EXPECT_EQ(names.count("conv.lin_edge.bias"), 0u);  // PyG: Linear(edge_dim, H*C, bias=False)
  GATConv plain({.in_channels = 5, .out_channels = 3, .heads = 2}, "conv", 1);
  EXPECT_EQ(names_and_shapes(plain.parameters()).count("conv.att_edge"), 0u);
}

TEST(GATConvEdgeFeatures, ForwardEqualsThePerEdgeDefinition) {
  const Graph raw = edgeattn::testing::uniform_graph(12, 12, 40, 7);
  const Tensor attr = random_tensor({raw.num_edges(), 4}, 8);
  const PreparedGraph p = prepare_graph(raw, true, attr);
  const Tensor x = random_tensor({12, 5}, 9);
  GATConv conv({.in_channels = 5, .out_channels = 3, .heads = 2, .edge_dim = 4}, "conv", 2);
  conv.bias.value = random_tensor(conv.bias.value.shape(), 10, -0.3f, 0.3f);
  const std::vector<double> want = reference_gat(conv, p.graph, x, p.edge_attr);
  for (bool eval : {false, true}) {
    Tape tape;
    tape.training = !eval;
    const Tensor got = tape.value(
        conv.forward(tape, p.graph, tape.constant_ref(x), EdgeFeatures{tape.constant_ref(p.edge_attr)}, 3));
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
    for (int64_t k = 0; k < got.numel(); ++k) EXPECT_NEAR(got.data()[k], want[size_t(k)], 2e-5) << k;
  }
  // Without edge attributes the layer is plain GAT: the edge term changes the output.
  Tape tape;
  const Tensor plain = tape.value(conv.forward(tape, p.graph, tape.constant_ref(x), 3));
  float diff = 0.f;
  for (int64_t k = 0; k < plain.numel(); ++k)
    diff = std::max(diff, std::fabs(plain.data()[k] - float(want[size_t(k)])));
  EXPECT_GT(diff, 1e-3f);
}

TEST(GATConvEdgeFeatures, GradientsMatchFiniteDifferences) {
  const Graph raw = edgeattn::testing::uniform_graph(9, 9, 24, 3);
  // Seeds chosen so that no edge's LeakyReLU input sits within eps of the kink (attribute seeds
  // 4, 7 and 8 put one there for the sparse input, where the finite difference crosses it).
  const PreparedGraph p = prepare_graph(raw, true, random_tensor({raw.num_edges(), 3}, 5));
  const CsrMatrix xs = edgeattn::testing::sparse_features(9, 7, 0.3f, 4);
  Parameter xd{"x", random_tensor({9, 7}, 6), {}};
  Parameter attr{"edge_attr", Tensor(p.edge_attr), {}};
  for (const auto& [options, what] : std::vector<std::pair<GATConvOptions, std::string>>{
           {{.in_channels = 7, .out_channels = 3, .heads = 2, .edge_dim = 3}, "concat (one fused op)"},
           {{.in_channels = 7, .out_channels = 2, .heads = 3, .concat = false, .edge_dim = 3}, "mean"},
           {{.in_channels = 7, .out_channels = 2, .heads = 2, .edge_dim = 3, .residual = true}, "residual"},
           {{.in_channels = 7, .out_channels = 3, .heads = 2, .dropout = 0.3f, .edge_dim = 3}, "dropout"}}) {
    GATConv conv(options, "conv", 11);
    auto params = conv.parameters();
    params.push_back(&xd);
    params.push_back(&attr);  // a learned edge embedding gets its gradient too
    EXPECT_TRUE(check_gradients(
        params,
        [&](Tape& t) {
          return weighted_sum(
              t, conv.forward(t, p.graph, t.parameter(xd), EdgeFeatures{t.parameter(attr)}, 42), 13);
        }))
        << what << " (dense input)";
    EXPECT_TRUE(check_gradients(
        conv.parameters(),
        [&](Tape& t) {
          return weighted_sum(t, conv.forward(t, p.graph, xs, EdgeFeatures{t.constant_ref(p.edge_attr)}, 42),
                              14);
        }))
        << what << " (sparse input)";
  }
}

TEST(GATConvEdgeFeatures, BipartiteGradientsMatchFiniteDifferences) {
  const Graph raw = edgeattn::testing::uniform_graph(5, 8, 20, 21);  // 5 destinations, 8 sources
  const PreparedGraph p =
      prepare_graph(raw, true, random_tensor({raw.num_edges(), 2}, 22), FillValue::parse("add"));
  Parameter xs{"x_src", random_tensor({8, 4}, 23), {}}, xd{"x_dst", random_tensor({5, 3}, 24), {}};
  GATConv conv({.in_channels = 4, .in_channels_dst = 3, .out_channels = 2, .heads = 2, .edge_dim = 2}, "conv",
               5);
  auto params = conv.parameters();
  params.insert(params.end(), {&xs, &xd});
  EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
    return weighted_sum(t,
                        conv.forward(t, p.graph, t.parameter(xs), t.parameter(xd),
                                     EdgeFeatures{t.constant_ref(p.edge_attr)}, 1),
                        25);
  }));
}

TEST(GATConvEdgeFeatures, WrongEdgeAttributesAreRejected) {
  const Graph g = edgeattn::testing::prepared_random_graph(6, 12, 1);
  const Tensor x = random_tensor({6, 4}, 2);
  GATConv conv({.in_channels = 4, .out_channels = 2, .edge_dim = 3}, "conv", 1);
  Tape t;
  expect_throw_naming<ShapeError>(
      [&] {
        conv.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges(), 2}))}, 1);
      },
      {"edge_dim=3"});
  expect_throw_naming<ShapeError>(
      [&] {
        conv.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges() - 1, 3}))}, 1);
      },
      {"num_edges"});
  GATConv plain({.in_channels = 4, .out_channels = 2}, "plain", 1);
  expect_throw_naming<InvalidArgument>(
      [&] {
        plain.forward(t, g, t.constant_ref(x), EdgeFeatures{t.constant(Tensor({g.num_edges(), 3}))}, 1);
      },
      {"no edge_dim"});
  EXPECT_THROW(GATConv({.in_channels = 4, .out_channels = 2, .edge_dim = -1}), InvalidArgument);
}

// 0 <- 1 (attr 1, 2), 0 <- 2 (3, -4), 0 <- 0 (self-loop, 100, 100: replaced), 1 <- 0 (5, 6); node 2 has
// no in-edges.
struct SmallGraph {
  Graph graph;
  Tensor attr;
};

SmallGraph small_graph() {
  const std::vector<int64_t> src = {1, 2, 0, 0}, dst = {0, 0, 0, 1};
  SmallGraph s{build_graph(3, 3, src, dst, {.duplicates = Duplicates::keep}), Tensor({4, 2})};
  // attributes in the graph's CSR order
  const std::vector<std::vector<float>> by_input = {{1, 2}, {3, -4}, {100, 100}, {5, 6}};
  const auto csr = s.graph.csr_edge_of_input();
  for (size_t k = 0; k < by_input.size(); ++k)
    for (int64_t c = 0; c < 2; ++c) s.attr(csr[k], c) = by_input[k][size_t(c)];
  return s;
}

// The attributes of the prepared graph's edge (j -> i).
std::vector<float> attr_of(const PreparedGraph& p, int64_t i, int64_t j) {
  for (int64_t e = p.graph.row_ptr()[size_t(i)]; e < p.graph.row_ptr()[size_t(i) + 1]; ++e)
    if (p.graph.col_idx()[size_t(e)] == j) return {p.edge_attr(e, 0), p.edge_attr(e, 1)};
  return {};
}

TEST(PrepareGraphEdgeAttributes, SelfLoopsGetEachFillValueOfTheOtherInEdges) {
  const SmallGraph s = small_graph();
  const auto prepared = [&](const std::string& fill) {
    return prepare_graph(s.graph, true, s.attr, FillValue::parse(fill));
  };
  using V = std::vector<float>;
  const PreparedGraph mean = prepared("mean");
  EXPECT_EQ(mean.graph.num_edges(), 6);  // 3 given non-loops + 3 loops
  EXPECT_EQ(attr_of(mean, 0, 1), (V{1, 2}));
  EXPECT_EQ(attr_of(mean, 0, 2), (V{3, -4}));
  EXPECT_EQ(attr_of(mean, 1, 0), (V{5, 6}));
  EXPECT_EQ(attr_of(mean, 0, 0), (V{2, -1}));  // the given loop (100, 100) is not averaged in
  EXPECT_EQ(attr_of(mean, 1, 1), (V{5, 6}));
  EXPECT_EQ(attr_of(mean, 2, 2), (V{0, 0}));  // no in-edges: 0, as PyG's scatter
  EXPECT_EQ(attr_of(prepared("add"), 0, 0), (V{4, -2}));
  EXPECT_EQ(attr_of(prepared("max"), 0, 0), (V{3, 2}));
  EXPECT_EQ(attr_of(prepared("min"), 0, 0), (V{1, -4}));
  EXPECT_EQ(attr_of(prepared("mul"), 0, 0), (V{3, -8}));
  EXPECT_EQ(attr_of(prepared("mul"), 2, 2), (V{1, 1}));  // PyG's product starts from ones
  EXPECT_EQ(attr_of(prepared("max"), 2, 2), (V{0, 0}));
  EXPECT_EQ(attr_of(prepared("0.5"), 0, 0), (V{0.5f, 0.5f}));
  EXPECT_EQ(attr_of(prepared("0.5"), 2, 2), (V{0.5f, 0.5f}));
  EXPECT_EQ(attr_of(prepare_graph(s.graph, true, s.attr, {FillValue::Kind::constant, {7, 8}}), 1, 1),
            (V{7, 8}));
  // Without add_self_loops the graph and its attributes are kept as they are.
  const PreparedGraph kept = prepare_graph(s.graph, false, s.attr);
  EXPECT_EQ(kept.graph.num_edges(), 4);
  EXPECT_EQ(attr_of(kept, 0, 0), (V{100, 100}));
}

TEST(PrepareGraphEdgeAttributes, BadInputIsRejected) {
  const SmallGraph s = small_graph();
  expect_throw_naming<ShapeError>([&] { prepare_graph(s.graph, true, Tensor({3, 2})); }, {"num_edges=4"});
  expect_throw_naming<InvalidArgument>(
      [&] {
        prepare_graph(s.graph, true, s.attr, {FillValue::Kind::constant, {1, 2, 3}});
      },
      {"edge_dim=2"});
  expect_throw_naming<InvalidArgument>([] { FillValue::parse("median"); }, {"median"});
  expect_throw_naming<InvalidArgument>([] { FillValue::parse("1.5x"); }, {"1.5x"});
}

TEST(FoldHeadScores, EqualsHeadScoresOfTheProjectionAndHasFiniteDifferenceGradients) {
  const Tensor x = random_tensor({6, 4}, 1);
  Parameter w{"w", random_tensor({2 * 3, 4}, 2), {}}, a{"a", random_tensor({2, 3}, 3), {}};
  Tape t;
  const Var xs = t.constant_ref(x);
  const Tensor direct = t.value(autograd::head_scores(
      t, autograd::reshape(t, autograd::linear(t, xs, t.parameter(w)), {6, 2, 3}), t.parameter(a)));
  const Tensor folded =
      t.value(autograd::linear(t, xs, autograd::fold_head_scores(t, t.parameter(w), t.parameter(a))));
  ASSERT_EQ(folded.shape(), direct.shape());
  for (int64_t k = 0; k < direct.numel(); ++k) EXPECT_NEAR(folded.data()[k], direct.data()[k], 1e-5f);
  EXPECT_TRUE(check_gradients({&w, &a}, [&](Tape& tape) {
    return weighted_sum(tape, autograd::fold_head_scores(tape, tape.parameter(w), tape.parameter(a)), 4);
  }));
  expect_throw_naming<ShapeError>(
      [&] {
        autograd::fold_head_scores(t, t.constant(Tensor({5, 4})), t.parameter(a));
      },
      {"weight"});
}

}  // namespace
}  // namespace edgeattn::nn
