// The CUDA path (AttentionPath::cuda) against the serial reference: every public score (bilinear
// and perceptron through their CPU projections), softmax and relu, concat and mean heads, attention
// dropout, an edge bias and GAT's per-edge term, GAT's node terms from the value (att_dst/att_src),
// head lengths that take each tile width (4 to 32 lanes, 1 to 8 registers a lane), on power-law
// graphs with isolated rows and self-loops and on a bipartite block. Plus run-to-run identical
// results, and the errors: edge attributes (not on this path) and no GPU or no CUDA build.
//
// Tolerance: the GPU sums in float in another order than the reference (which sums in double and
// rounds once), over at most a few hundred edges a row; each value must lie within
// 2e-4 * (1 + |reference|) of the reference's. The GPU tests skip where no GPU is present (CI).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "edgeattn/kernels/cuda.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::random_tensor;

constexpr float kTolerance = 2e-4f;

#define SKIP_WITHOUT_GPU()                                                               \
  do {                                                                                   \
    if (!cuda_device()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason(); \
  } while (0)

struct Operands {
  Tensor query, key, value, score_dst, score_src, weight, key_weight, att, att_dst, att_src, edge_bias,
      score_edge, grad_out;
  AttentionInputs inputs() const {
    AttentionInputs in{.value = value, .edge_bias = edge_bias, .score_edge = score_edge};
    if (!query.absent()) in.query = query, in.key = key;
    if (!score_dst.absent()) in.score_dst = score_dst, in.score_src = score_src;
    if (!weight.absent()) in.weight = weight;
    if (!key_weight.absent()) in.key_weight = key_weight;
    if (!att.absent()) in.att = att;
    if (!att_dst.absent()) in.att_dst = att_dst, in.att_src = att_src;
    return in;
  }
};

// `from_value`: the additive score's node terms from the value (att_dst/att_src).
Operands make_operands(const Graph& g, const AttentionConfig& c, int64_t heads, int64_t dk, int64_t dv,
                       bool bias, bool from_value, uint64_t seed) {
  const int64_t nd = g.num_dst(), ns = g.num_src(), e = g.num_edges(), hidden = 6;
  Operands o;
  o.value = random_tensor({ns, heads, dv}, seed + 1);
  if (c.score == Score::additive) {
    if (from_value) {
      o.att_dst = random_tensor({heads, dv}, seed + 2);
      o.att_src = random_tensor({heads, dv}, seed + 3);
    } else {
      o.score_dst = random_tensor({nd, heads}, seed + 2, -2.f, 2.f);
      o.score_src = random_tensor({ns, heads}, seed + 3, -2.f, 2.f);
    }
    if (bias) o.score_edge = random_tensor({e, heads}, seed + 9, -0.5f, 0.5f);
  } else {
    o.query = random_tensor({nd, heads, dk}, seed + 4, -1.5f, 1.5f);
    o.key = random_tensor({ns, heads, dk}, seed + 5, -1.5f, 1.5f);
  }
  if (c.score == Score::bilinear) o.weight = random_tensor({heads, dk, dk}, seed + 6, -0.5f, 0.5f);
  if (c.score == Score::gatv2) o.att = random_tensor({heads, dk}, seed + 7);
  if (c.score == Score::perceptron) {
    o.weight = random_tensor({heads, hidden, dk}, seed + 6, -0.5f, 0.5f);
    o.key_weight = random_tensor({heads, hidden, dk}, seed + 8, -0.5f, 0.5f);
    o.att = random_tensor({heads, hidden}, seed + 7);
  }
  if (bias) o.edge_bias = random_tensor({e, heads}, seed + 10, -0.5f, 0.5f);
  o.grad_out = c.combine == HeadCombine::concat ? random_tensor({nd, heads, dv}, seed + 11)
                                                : random_tensor({nd, dv}, seed + 11);
  return o;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.absent(), want.absent()) << what;
  if (want.absent()) return;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int reported = 0;
  for (int64_t n = 0; n < want.numel(); ++n) {
    const float g = got.data()[n], w = want.data()[n];
    const bool ok = (std::isinf(w) && g == w) || std::fabs(g - w) <= kTolerance * (1.f + std::fabs(w));
    if (!ok && reported++ < 5) ADD_FAILURE() << what << "[" << n << "]: cuda " << g << ", reference " << w;
  }
}

void expect_identical(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t n = 0; n < a.numel(); ++n)
    ASSERT_EQ(a.data()[n], b.data()[n]) << what << "[" << n << "] differs between two runs";
}

// Forward and backward on the cuda path and the reference; every output and gradient compared.
void compare_with_reference(const Graph& g, AttentionConfig c, int64_t heads, int64_t dk, int64_t dv,
                            bool bias, bool from_value, uint64_t seed) {
  const Operands o = make_operands(g, c, heads, dk, dv, bias, from_value, seed);
  c.return_attention = true;
  AttentionConfig ref = c;
  ref.path = AttentionPath::reference;
  c.path = AttentionPath::cuda;
  const AttentionResult want = attention_forward(g, o.inputs(), ref);
  const AttentionResult got = attention_forward(g, o.inputs(), c);
  EXPECT_EQ(got.path, AttentionPath::cuda);
  expect_close(got.out, want.out, "out");
  expect_close(got.row_stats, want.row_stats, "row log-sum-exp");
  expect_close(got.attention, want.attention, "attention weights");
  const AttentionGrads gw = attention_backward(g, o.inputs(), ref, want, o.grad_out);
  const AttentionGrads gg = attention_backward(g, o.inputs(), c, got, o.grad_out);
  expect_close(gg.query, gw.query, "d query");
  expect_close(gg.key, gw.key, "d key");
  expect_close(gg.value, gw.value, "d value");
  expect_close(gg.score_dst, gw.score_dst, "d score_dst");
  expect_close(gg.score_src, gw.score_src, "d score_src");
  expect_close(gg.weight, gw.weight, "d weight");
  expect_close(gg.key_weight, gw.key_weight, "d key_weight");
  expect_close(gg.att, gw.att, "d att");
  expect_close(gg.edge_bias, gw.edge_bias, "d edge_bias");
  expect_close(gg.score_edge, gw.score_edge, "d score_edge");
  expect_close(gg.att_dst, gw.att_dst, "d att_dst");
  expect_close(gg.att_src, gw.att_src, "d att_src");
}

// (score, normalisation, combine, dropout, bias)
using Case = std::tuple<Score, Normalization, HeadCombine, float, bool>;

class CudaAgainstReference : public ::testing::TestWithParam<Case> {};

TEST_P(CudaAgainstReference, PowerLawGraph) {
  SKIP_WITHOUT_GPU();
  const auto [score, norm, combine, dropout, bias] = GetParam();
  const Graph g = testing::power_law_graph(300, 3000, 5);
  AttentionConfig c{
      .score = score, .normalization = norm, .combine = combine, .dropout = dropout, .seed = 17};
  compare_with_reference(g, c, /*heads=*/3, /*dk=*/5, /*dv=*/7, bias, /*from_value=*/false, 100);
}

TEST_P(CudaAgainstReference, BipartiteBlockWithEightHeadsOfEight) {
  SKIP_WITHOUT_GPU();
  const auto [score, norm, combine, dropout, bias] = GetParam();
  const Graph g = testing::uniform_graph(150, 400, 2500, 9);
  AttentionConfig c{.score = score, .normalization = norm, .combine = combine, .dropout = dropout, .seed = 3};
  compare_with_reference(g, c, 8, 8, 8, bias, false, 200);
}

INSTANTIATE_TEST_SUITE_P(Scores, CudaAgainstReference,
                         ::testing::Combine(::testing::Values(Score::dot_product, Score::additive,
                                                              Score::gatv2, Score::bilinear,
                                                              Score::perceptron),
                                            ::testing::Values(Normalization::softmax, Normalization::relu),
                                            ::testing::Values(HeadCombine::concat, HeadCombine::mean),
                                            ::testing::Values(0.f, 0.3f), ::testing::Bool()));

// Head lengths for every tile width and register count: 3 (4 lanes), 8, 13 (16), 32, 50 (2 a
// lane), 100 (4), 256 (8); key and value lengths differ.
TEST(CudaAttention, EveryHeadLength) {
  SKIP_WITHOUT_GPU();
  const Graph g = testing::power_law_graph(120, 900, 11);
  for (auto [dk, dv] : std::vector<std::pair<int64_t, int64_t>>{
           {3, 2}, {8, 8}, {13, 9}, {32, 30}, {50, 64}, {100, 77}, {256, 200}}) {
    SCOPED_TRACE("dk " + std::to_string(dk) + ", dv " + std::to_string(dv));
    for (Score s : {Score::dot_product, Score::gatv2}) {
      AttentionConfig c{.score = s, .dropout = 0.2f, .seed = 5};
      compare_with_reference(g, c, 2, dk, dv, true, false, 300);
    }
  }
}

TEST(CudaAttention, GatNodeTermsFromTheValue) {
  SKIP_WITHOUT_GPU();
  for (bool bipartite : {false, true}) {
    SCOPED_TRACE(bipartite ? "block" : "square");
    const Graph g =
        bipartite ? testing::uniform_graph(200, 700, 3000, 4) : testing::power_law_graph(400, 4000, 6);
    for (float dropout : {0.f, 0.4f}) {
      AttentionConfig c{.score = Score::additive, .dropout = dropout, .seed = 8};
      compare_with_reference(g, c, 8, 8, 8, /*bias=*/false, /*from_value=*/true, 400);
      compare_with_reference(g, c, 1, 7, 7, /*bias=*/true, /*from_value=*/true, 500);
    }
  }
}

TEST(CudaAttention, StructuredPatternsRunAsTheirGraphs) {
  SKIP_WITHOUT_GPU();
  // A complete graph given as edges would be routed to the structured kernels on the CPU paths;
  // the cuda path runs it as given, and agrees with the reference.
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j <= i; ++j) src.push_back(j), dst.push_back(i);
  const Graph causal = build_graph(40, 40, src, dst);
  compare_with_reference(causal, {.score = Score::dot_product}, 2, 16, 16, false, false, 600);
}

// A hub destination (3000 in-edges), a hub source (3000 out-edges) and rows around the kernels'
// segment lengths: long rows and columns are split over several tiles and merged.
Graph hub_graph() {
  std::vector<int64_t> src, dst;
  const int64_t n = 3000;
  for (int64_t j = 0; j < n; ++j) src.push_back(j), dst.push_back(5);  // destination 5: every source
  for (int64_t i = 0; i < n; ++i)
    if (i != 5) src.push_back(7), dst.push_back(i);  // source 7: every destination
  for (int64_t len : {31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1025})
    for (int64_t j = 0; j < len; ++j) src.push_back((j * 37 + len) % n), dst.push_back(100 + len);
  const Graph extra = testing::uniform_graph(n, n, 6000, 21);
  for (int64_t i = 0; i < n; ++i)
    for (int32_t j : extra.row(i)) src.push_back(j), dst.push_back(i);
  return build_graph(n, n, src, dst);
}

TEST(CudaAttention, HubRowsAndHubSources) {
  SKIP_WITHOUT_GPU();
  const Graph g = hub_graph();
  for (HeadCombine combine : {HeadCombine::concat, HeadCombine::mean}) {
    SCOPED_TRACE(combine == HeadCombine::concat ? "concat" : "mean");
    compare_with_reference(g, {.score = Score::additive, .combine = combine, .dropout = 0.1f, .seed = 2}, 8,
                           8, 8, true, true, 1300);
    compare_with_reference(g, {.score = Score::dot_product, .combine = combine}, 2, 40, 24, true, false,
                           1400);
    compare_with_reference(g,
                           {.score = Score::gatv2, .normalization = Normalization::relu, .combine = combine},
                           3, 6, 6, false, false, 1500);
  }
}

TEST(CudaAttention, RunsAreIdentical) {
  SKIP_WITHOUT_GPU();
  const Graph g = hub_graph();
  AttentionConfig c{.score = Score::additive, .dropout = 0.2f, .seed = 1, .path = AttentionPath::cuda};
  const Operands o = make_operands(g, c, 8, 8, 8, true, true, 700);
  const AttentionResult a = attention_forward(g, o.inputs(), c), b = attention_forward(g, o.inputs(), c);
  expect_identical(a.out, b.out, "out");
  const AttentionGrads ga = attention_backward(g, o.inputs(), c, a, o.grad_out);
  const AttentionGrads gb = attention_backward(g, o.inputs(), c, b, o.grad_out);
  expect_identical(ga.value, gb.value, "d value");
  expect_identical(ga.att_src, gb.att_src, "d att_src");
  expect_identical(ga.score_edge, gb.score_edge, "d score_edge");
}

TEST(CudaAttention, EmptyGraphAndEmptyRows) {
  SKIP_WITHOUT_GPU();
  const Graph none = build_graph(5, 6, std::vector<int64_t>{}, std::vector<int64_t>{});
  compare_with_reference(none, {.score = Score::dot_product}, 2, 4, 4, false, false, 800);
  compare_with_reference(testing::four_node_graph(), {.score = Score::additive}, 1, 1, 3, true, false, 900);
}

TEST(CudaAttention, EdgeAttributesAreRefusedByName) {
  const Graph g = testing::four_node_graph();
  AttentionConfig c{.score = Score::gatv2, .path = AttentionPath::cuda};
  Operands o = make_operands(g, c, 1, 4, 4, false, false, 1000);
  const Tensor ea = random_tensor({g.num_edges(), 3}, 1), we = random_tensor({1, 4, 3}, 2);
  AttentionInputs in = o.inputs();
  in.edge_attr = ea;
  in.edge_proj = we;
  if (cuda_built()) {
    try {
      attention_forward(g, in, c);
      FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("edge attributes"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("path=sparse"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_THROW(attention_forward(g, in, c), DeviceError);
  }
}

// Runs everywhere: without a GPU (CI), the path says why instead of running elsewhere.
TEST(CudaAttention, WithoutAGpuThePathRaisesDeviceError) {
  if (cuda_device()) GTEST_SKIP() << "a CUDA device is present: " << cuda_device()->name;
  const Graph g = testing::four_node_graph();
  AttentionConfig c{.score = Score::dot_product, .path = AttentionPath::cuda};
  const Operands o = make_operands(g, c, 1, 4, 4, false, false, 1100);
  try {
    attention_forward(g, o.inputs(), c);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("path=cuda"), std::string::npos) << what;
    EXPECT_NE(what.find(cuda_built() ? "no CUDA device" : "built without CUDA"), std::string::npos) << what;
  }
  EXPECT_EQ(cuda_unavailable_reason().empty(), false);
  EXPECT_STREQ(to_string(AttentionPath::cuda), "cuda");
}

TEST(CudaAttention, AutomaticNeverPicksCuda) {
  const Graph g = testing::four_node_graph();
  const Operands o = make_operands(g, {.score = Score::dot_product}, 1, 4, 4, false, false, 1200);
  EXPECT_NE(attention_forward(g, o.inputs(), {.score = Score::dot_product}).path, AttentionPath::cuda);
}

}  // namespace
}  // namespace edgeattn
