// Bipartite input (x_src, x_dst) for GATConv, GATv2Conv and TransformerConv: the same layer over
// the same node set equals the one-input forward; finite differences through both inputs and
// every parameter on a num_dst != num_src graph with different feature widths; PyG's parameter
// names; prepared bipartite graphs and the errors. GATConv's block forms: forward_block (a sampled
// block) and forward_expanded (a distributed part exchanging projected rows); a block's input as a
// row selection of a larger x, read in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/gatv2_conv.hpp"
#include "edgeattn/nn/transformer_conv.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/repeat_expansion.hpp"

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

// prepare_graph writes a bipartite graph's loops straight into the CSR; it must be the graph the
// general builder makes from the list (given non-loop edges in CSR order, then the loops), maps
// included, with given self-loops, duplicate edges, empty rows and either side larger.
TEST(BipartiteGraph, PreparingEqualsBuildingFromTheEdgeList) {
  for (const auto& [nd, ns] : {std::pair<int64_t, int64_t>{5, 8}, {8, 5}, {300, 1000}, {1, 2}, {3, 0}}) {
    SCOPED_TRACE(std::to_string(nd) + " x " + std::to_string(ns));
    std::vector<int32_t> src, dst;
    for (int64_t k = 0; ns > 0 && k < 6 * nd; ++k) {
      const auto i = static_cast<int32_t>(edge_uniform(3, k, 0, 0) * static_cast<float>(nd));
      // a third of the edges are self-loops where possible, and ~1 in 8 repeats the edge before
      const bool loop = k % 3 == 0 && i < ns;
      const auto j = loop ? i : static_cast<int32_t>(edge_uniform(3, k, 1, 0) * static_cast<float>(ns));
      src.push_back(j);
      dst.push_back(i);
      if (k % 8 == 0) src.push_back(j), dst.push_back(i);
    }
    const Graph given = build_graph(nd, ns, std::span<const int32_t>(src), std::span<const int32_t>(dst),
                                    {.self_loops = SelfLoops::keep, .duplicates = Duplicates::keep});
    std::vector<int32_t> list_src, list_dst;
    std::vector<float> list_attr;  // attribute of list entry: its CSR edge of `given`, or -1 (a loop)
    for (int64_t i = 0; i < nd; ++i)
      for (int64_t e = given.row_ptr()[size_t(i)]; e < given.row_ptr()[size_t(i) + 1]; ++e)
        if (given.col_idx()[size_t(e)] != i) {
          list_src.push_back(given.col_idx()[size_t(e)]);
          list_dst.push_back(static_cast<int32_t>(i));
          list_attr.push_back(static_cast<float>(e));
        }
    for (int64_t i = 0; i < std::min(nd, ns); ++i) {
      list_src.push_back(static_cast<int32_t>(i));
      list_dst.push_back(static_cast<int32_t>(i));
      list_attr.push_back(-1.f);
    }
    const Graph expected =
        build_graph(nd, ns, std::span<const int32_t>(list_src), std::span<const int32_t>(list_dst),
                    {.self_loops = SelfLoops::keep, .duplicates = Duplicates::keep});
    const Graph prepared = prepare_graph(given, true);
    ASSERT_EQ(prepared.num_dst(), nd);
    ASSERT_EQ(prepared.num_src(), ns);
    EXPECT_TRUE(std::ranges::equal(prepared.row_ptr(), expected.row_ptr()));
    EXPECT_TRUE(std::ranges::equal(prepared.col_idx(), expected.col_idx()));
    EXPECT_TRUE(std::ranges::equal(prepared.input_edge_of_csr(), expected.input_edge_of_csr()));
    EXPECT_TRUE(std::ranges::equal(prepared.csr_edge_of_input(), expected.csr_edge_of_input()));
    // Edge attributes follow their edges; each loop gets a constant fill.
    Tensor attr({given.num_edges(), 1});
    for (int64_t e = 0; e < given.num_edges(); ++e) attr.data()[e] = static_cast<float>(e);
    const PreparedGraph with_attr = prepare_graph(given, true, attr.view(), FillValue::constant(-1.f));
    ASSERT_EQ(with_attr.edge_attr.dim(0), expected.num_edges());
    for (int64_t e = 0; e < expected.num_edges(); ++e)
      ASSERT_EQ(with_attr.edge_attr.data()[e], list_attr[size_t(expected.input_edge_of_csr()[size_t(e)])])
          << "edge " << e;
    // InputOrder::drop: the same CSR and attributes, without the maps.
    const Graph lean = prepare_graph(given, true, InputOrder::drop);
    EXPECT_TRUE(std::ranges::equal(lean.row_ptr(), expected.row_ptr()));
    EXPECT_TRUE(std::ranges::equal(lean.col_idx(), expected.col_idx()));
    EXPECT_TRUE(lean.input_edge_of_csr().empty());
    EXPECT_TRUE(lean.csr_edge_of_input().empty());
    const PreparedGraph lean_attr =
        prepare_graph(given, true, attr.view(), FillValue::constant(-1.f), InputOrder::drop);
    EXPECT_TRUE(std::ranges::equal(lean_attr.graph.col_idx(), expected.col_idx()));
    EXPECT_TRUE(lean_attr.graph.input_edge_of_csr().empty());
    EXPECT_TRUE(lean_attr.edge_attr.span().size() == with_attr.edge_attr.span().size() &&
                std::ranges::equal(lean_attr.edge_attr.span(), with_attr.edge_attr.span()));
  }
}

// A square graph: InputOrder::drop gives keep's CSR and attributes without the maps, with and
// without added self-loops.
TEST(PreparedGraph, DroppingTheInputOrderKeepsTheGraph) {
  const Graph given = edgeattn::testing::uniform_graph(40, 40, 200, 5);
  Tensor attr({given.num_edges(), 2});
  for (int64_t k = 0; k < attr.numel(); ++k) attr.data()[k] = static_cast<float>(k);
  for (const bool loops : {true, false}) {
    SCOPED_TRACE(loops ? "add_self_loops" : "as is");
    const Graph kept = prepare_graph(given, loops);
    const Graph dropped = prepare_graph(given, loops, InputOrder::drop);
    EXPECT_TRUE(std::ranges::equal(dropped.row_ptr(), kept.row_ptr()));
    EXPECT_TRUE(std::ranges::equal(dropped.col_idx(), kept.col_idx()));
    EXPECT_TRUE(dropped.input_edge_of_csr().empty());
    EXPECT_TRUE(dropped.csr_edge_of_input().empty());
    const PreparedGraph a = prepare_graph(given, loops, attr.view());
    const PreparedGraph b = prepare_graph(given, loops, attr.view(), {}, InputOrder::drop);
    EXPECT_TRUE(std::ranges::equal(b.graph.col_idx(), a.graph.col_idx()));
    EXPECT_TRUE(b.graph.input_edge_of_csr().empty());
    EXPECT_TRUE(std::ranges::equal(b.edge_attr.span(), a.edge_attr.span()));
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

// forward_block on a sampled block (destinations = the first sources): the same values as the
// bipartite forward given x_src's first rows (bit for bit through the packed projection, with an
// input dropout keyed by element index), and the same gradients for the parameters and x_src.
// Without lin_dst and residual the destinations take the sources' projection; with a residual
// x_dst is formed; both are checked, training (dropout) and not, dense and sparse x. The block
// runs twice: keeping the projection, and with `recompute` (the fused gat_attention where x is
// dense and there is no residual), whose forward has the same bits.
void expect_block_equals_bipartite(const GATConvOptions& options, float input_dropout, bool training,
                                   bool sparse, const EluDropout* then = nullptr) {
  SCOPED_TRACE(::testing::Message() << "residual=" << options.residual << " dropout=" << input_dropout
                                    << " training=" << training << " sparse=" << sparse
                                    << " then=" << (then != nullptr));
  const Graph g = bipartite_graph(true);
  GATConv conv(options, "conv", 9);
  Tensor x = random_tensor({kSrc, kInSrc}, 10);
  if (sparse)
    for (int64_t i = 0; i < x.numel(); i += 3) x.data()[i] = 0.f;
  const CsrMatrix xs_sparse = CsrMatrix::from_dense(x.view());
  std::vector<Tensor> outputs, grads;
  for (int variant : {0, 1, 2}) {  // bipartite forward, block, block with recompute
    const bool block = variant > 0;
    Parameter xs{"x_src", x, {}};
    for (auto* p : conv.parameters()) p->grad.fill(0.f);
    Tape t;
    t.training = training;
    const NodeInput in =
        sparse ? NodeInput(xs_sparse) : NodeInput::with_dropout(t.parameter(xs), input_dropout, /*seed=*/21);
    Var y;
    if (block) {
      y = conv.forward_block(t, g, in, EdgeFeatures{}, 3, nullptr, then, /*recompute=*/variant == 2);
    } else {
      std::optional<CsrMatrix> storage;
      y = conv.forward(t, g, in, first_rows(t, in, kDst, storage), EdgeFeatures{}, 3);
      if (then) y = autograd::elu_dropout(t, y, then->alpha, then->p, then->seed);
    }
    outputs.push_back(t.value(y));
    t.backward(weighted_sum(t, y, 4));
    if (!sparse) grads.push_back(xs.grad);
    for (auto* p : conv.parameters()) grads.push_back(p->grad);
  }
  const size_t third = grads.size() / 3;
  for (size_t v = 1; v < 3; ++v) {
    SCOPED_TRACE(v == 1 ? "block" : "block, recompute");
    ASSERT_EQ(outputs[0].shape(), outputs[v].shape());
    for (int64_t i = 0; i < outputs[0].numel(); ++i)
      ASSERT_EQ(outputs[0].data()[i], outputs[v].data()[i]) << i;
    for (size_t k = 0; k < third; ++k)
      EXPECT_LT(max_abs_diff(grads[k], grads[v * third + k]), 1e-5f) << "gradient " << k;
  }
}

TEST(Bipartite, ABlockForwardEqualsTheForwardOfItsFirstSourceRows) {
  for (bool residual : {false, true})
    for (float p : {0.f, 0.3f})
      for (bool training : {false, true})
        expect_block_equals_bipartite(
            {.in_channels = kInSrc, .out_channels = 3, .heads = 2, .dropout = 0.2f, .residual = residual}, p,
            training, false);
  expect_block_equals_bipartite({.in_channels = kInSrc, .out_channels = 3, .heads = 2}, 0.f, true, true);
  // The ELU + dropout that follows a hidden layer, fused into the attention op (or applied after
  // the residual).
  const EluDropout then{1.f, 0.4f, 77};
  for (bool residual : {false, true})
    for (bool concat : {true, false})
      expect_block_equals_bipartite(
          {.in_channels = kInSrc, .out_channels = 3, .heads = 2, .concat = concat, .residual = residual},
          0.3f, true, false, &then);
}

// A block's input as rows of a larger constant x (NodeInput::selected_rows: a sampled batch's
// input nodes in the whole feature matrix, read in place by the projections) against the same
// block given the gathered rows: the same output bit for bit, and the same parameter gradients
// (bit for bit where the input dropout runs; the plain map's weight gradient sums in chunks of
// its own). GATConv without and with a residual (x_dst: the selection's first rows), with
// `recompute` (the fused op, which gathers them), and GATv2Conv and TransformerConv.
template <class F>
void expect_selection_equals_gathered(const char* what, F forward) {
  const Tensor table = random_tensor({20, kInSrc}, 30);
  const auto rows =
      std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{17, 3, 3, 12, 0, 19, 8, 5});
  const Tensor gathered = gather_rows(table.view(), *rows);
  for (bool training : {false, true}) {
    SCOPED_TRACE(::testing::Message() << what << " training=" << training);
    std::vector<Tensor> outputs;
    std::vector<std::vector<Tensor>> grads;
    for (bool selected : {false, true}) {
      Tape t;
      t.training = training;
      const NodeInput in = selected ? NodeInput::selected_rows(t.constant_ref(table), rows, 0.3f, 21)
                                    : NodeInput::with_dropout(t.constant(gathered), 0.3f, 21);
      EXPECT_EQ(in.rows(t), kSrc);
      EXPECT_EQ(in.cols(t), kInSrc);
      auto [y, params] = forward(t, in);
      outputs.push_back(t.value(y));
      for (auto* p : params) p->grad.fill(0.f);
      t.backward(weighted_sum(t, y, 4));
      grads.emplace_back();
      for (auto* p : params) grads.back().push_back(p->grad);
    }
    ASSERT_EQ(outputs[0].shape(), outputs[1].shape());
    for (int64_t i = 0; i < outputs[0].numel(); ++i)
      ASSERT_EQ(outputs[0].data()[i], outputs[1].data()[i]) << i;
    for (size_t k = 0; k < grads[0].size(); ++k) {
      if (training)
        for (int64_t i = 0; i < grads[0][k].numel(); ++i)
          ASSERT_EQ(grads[0][k].data()[i], grads[1][k].data()[i]) << "gradient " << k << " element " << i;
      else
        EXPECT_LT(max_abs_diff(grads[0][k], grads[1][k]), 1e-5f) << "gradient " << k;
    }
  }
}

TEST(Bipartite, ARowSelectionGivesTheBlockOfTheGatheredRows) {
  const Graph g = bipartite_graph(true);
  for (bool residual : {false, true})
    for (bool recompute : {false, true}) {
      GATConv conv(
          {.in_channels = kInSrc, .out_channels = 3, .heads = 2, .dropout = 0.2f, .residual = residual},
          "conv", 9);
      expect_selection_equals_gathered(
          residual ? (recompute ? "GATConv residual recompute" : "GATConv residual")
                   : (recompute ? "GATConv recompute" : "GATConv"),
          [&](Tape& t, const NodeInput& in) {
            return std::pair(conv.forward_block(t, g, in, EdgeFeatures{}, 3, nullptr, nullptr, recompute),
                             conv.parameters());
          });
    }
  const Graph loops = bipartite_graph(true), plain = bipartite_graph(false);
  GATv2Conv gatv2({.in_channels = kInSrc, .out_channels = 3, .heads = 2, .residual = true}, "conv", 9);
  expect_selection_equals_gathered("GATv2Conv", [&](Tape& t, const NodeInput& in) {
    return std::pair(gatv2.forward(t, loops, in, in.first_rows(t, kDst), 3), gatv2.parameters());
  });
  TransformerConv transformer({.in_channels = kInSrc, .out_channels = 3, .heads = 2, .beta = true}, "conv",
                              9);
  expect_selection_equals_gathered("TransformerConv", [&](Tape& t, const NodeInput& in) {
    return std::pair(transformer.forward(t, plain, in, in.first_rows(t, kDst), 3), transformer.parameters());
  });
}

TEST(Bipartite, ARowSelectionIsNamedInItsErrors) {
  Tape t;
  const Tensor table = random_tensor({20, kInSrc}, 30);
  expect_throw_naming<InvalidArgument>(
      [&] { (void)NodeInput::selected_rows(t.constant_ref(table), nullptr, 0.f, 0); },
      {"selected_rows", "null"});
  const NodeInput in = NodeInput::selected_rows(
      t.constant_ref(table), std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{4, 1, 7}), 0.f,
      0);
  expect_throw_naming<ShapeError>([&] { in.check(t, "layer", 3, kInSrc + 1); },
                                  {"layer", "row selection", "[3, 6]", "[3, 7]"});
  expect_throw_naming<ShapeError>([&] { (void)in.first_rows(t, 4); }, {"first_rows", "3 rows", "4"});
  const NodeInput gathered = in.materialized(t);
  EXPECT_FALSE(gathered.has_row_selection());
  EXPECT_EQ(t.value(gathered.dense())(1, 2), table(1, 2));
}

TEST(Bipartite, ABlockForwardHasTheGradientsOfFiniteDifferences) {
  const Graph g = bipartite_graph(true);
  GATConv conv({.in_channels = kInSrc, .out_channels = 3, .heads = 2, .concat = false}, "conv", 9);
  // x seed 12: no score within eps of the LeakyReLU kink (seed 10 has one, at x_src[2, 3]).
  Parameter xs{"x_src", random_tensor({kSrc, kInSrc}, 12), {}};
  auto params = conv.parameters();
  params.push_back(&xs);
  for (const bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recompute" : "keep the projection");
    EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
      const Var y = conv.forward_block(t, g, t.parameter(xs), EdgeFeatures{}, 3, nullptr, nullptr, recompute);
      EXPECT_EQ(t.value(y).dim(0), kDst);
      return weighted_sum(t, y, 4);
    }));
  }
}

// forward_expanded: a distributed part's layer that exchanges projected rows. Simulated in one
// process: the sources after the kDst own rows are copies of own rows 4, 0 and 2, so the layer over
// x_own with that expansion equals forward_block over x_src = [x_own; x_own[{4, 0, 2}]] (fused,
// recomputing), in value bit for bit and in the gradients (x_own's: x_src's rows summed into the
// rows they copy; support/repeat_expansion.hpp).
const autograd::SourceExpansion kRepeat = edgeattn::testing::repeat_expansion({4, 0, 2});

TEST(Bipartite, AnExpandedLayerEqualsTheBlockOverTheExpandedInput) {
  static_assert(kDst + 3 == kSrc);
  const Graph g = bipartite_graph(true);
  const EluDropout then{1.f, 0.4f, 77};
  for (bool concat : {true, false})
    for (bool hidden : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "concat=" << concat << " then=" << hidden);
      GATConv conv({.in_channels = kInSrc, .out_channels = 3, .heads = 2, .concat = concat, .dropout = 0.2f},
                   "conv", 9);
      std::vector<Tensor> outputs, grads[2];
      for (int expanded : {0, 1}) {
        Parameter own{"x_own", random_tensor({kDst, kInSrc}, 10), {}};
        for (auto* p : conv.parameters()) p->grad.fill(0.f);
        Tape t;
        const Var x = t.parameter(own);
        const Var y = expanded
                          ? conv.forward_expanded(t, g, x, kRepeat, EdgeFeatures{}, 3, nullptr,
                                                  hidden ? &then : nullptr)
                          : conv.forward_block(t, g, autograd::expand_sources(t, x, kRepeat), EdgeFeatures{},
                                               3, nullptr, hidden ? &then : nullptr, /*recompute=*/true);
        outputs.push_back(t.value(y));
        t.backward(weighted_sum(t, y, 4));
        grads[expanded].push_back(own.grad);
        for (auto* p : conv.parameters()) grads[expanded].push_back(p->grad);
      }
      EXPECT_EQ(max_abs_diff(outputs[0], outputs[1]), 0.f);
      for (size_t k = 0; k < grads[0].size(); ++k)
        EXPECT_LT(max_abs_diff(grads[0][k], grads[1][k]), 1e-5f) << "gradient " << k;
    }
}

TEST(Bipartite, AnExpandedLayerHasTheGradientsOfFiniteDifferences) {
  const Graph g = bipartite_graph(true);
  GATConv conv({.in_channels = kInSrc, .out_channels = 3, .heads = 2}, "conv", 9);
  Parameter own{"x_own", random_tensor({kDst, kInSrc}, 12), {}};
  auto params = conv.parameters();
  params.push_back(&own);
  EXPECT_TRUE(check_gradients(params, [&](Tape& t) {
    return weighted_sum(t, conv.forward_expanded(t, g, t.parameter(own), kRepeat, EdgeFeatures{}, 3), 4);
  }));
}

TEST(Bipartite, AnExpandedLayerNeedsDenseInputAndNoResidual) {
  const Graph g = bipartite_graph(true);
  Tape t;
  const Var x = t.constant(random_tensor({kDst, kInSrc}, 1));
  GATConv residual({.in_channels = kInSrc, .out_channels = 3, .heads = 2, .residual = true}, "conv");
  EXPECT_FALSE(residual.can_expand_projection());
  expect_throw_naming<InvalidArgument>(
      [&] { residual.forward_expanded(t, g, x, kRepeat, EdgeFeatures{}, 0); }, {"conv.lin", "residual"});
  GATConv conv({.in_channels = kInSrc, .out_channels = 3, .heads = 2}, "conv");
  EXPECT_TRUE(conv.can_expand_projection());
  const CsrMatrix sparse = CsrMatrix::from_dense(random_tensor({kDst, kInSrc}, 1).view());
  expect_throw_naming<InvalidArgument>(
      [&] { conv.forward_expanded(t, g, sparse, kRepeat, EdgeFeatures{}, 0); }, {"conv.lin", "sparse"});
  // x_own must be the destinations' rows, not all sources'.
  expect_throw_naming<ShapeError>(
      [&] {
        conv.forward_expanded(t, g, t.constant(random_tensor({kSrc, kInSrc}, 1)), kRepeat, EdgeFeatures{}, 0);
      },
      {"x_own", "[8, 6]", "[5, 6]"});
  expect_throw_naming<InvalidArgument>(
      [&] { conv.forward_expanded(t, g, x, {.expand = kRepeat.expand, .reduce = {}}, EdgeFeatures{}, 0); },
      {"reduce"});
}

TEST(Bipartite, ABlockWithMoreDestinationsThanSourcesIsRefused) {
  GATConv conv({.in_channels = kInSrc, .out_channels = 3, .heads = 2}, "conv");
  Tape tape;
  const Graph g = prepare_graph(edgeattn::testing::uniform_graph(kSrc, kDst, 18, 2), true);  // 8 x 5
  const Var xs = tape.constant(Tensor({kDst, kInSrc}));
  expect_throw_naming<InvalidArgument>([&] { conv.forward_block(tape, g, xs, EdgeFeatures{}, 0); },
                                       {"conv.lin", "8 destinations for 5 sources"});
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
