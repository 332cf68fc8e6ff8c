// A 2-layer GAT built from the ops, checked end to end: sparse input dropout -> sparse linear ->
// head scores -> additive graph attention -> elu -> dropout -> linear -> graph attention -> mean
// heads -> cross-entropy. Gradient check of every parameter on a small random graph, and
// bit-identical loss and gradients for 1, 2 and 4 threads on a larger one.
#include <gtest/gtest.h>

#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::expect_throw_naming;

using edgeattn::testing::random_tensor;

struct GatParams {
  Parameter w1, att_src1, att_dst1, b1, w2, att_src2, att_dst2, b2;
  std::vector<Parameter*> all() { return {&w1, &att_src1, &att_dst1, &b1, &w2, &att_src2, &att_dst2, &b2}; }
};

GatParams make_params(int64_t in, int64_t heads, int64_t hidden, int64_t out_heads, int64_t classes) {
  return {{"conv1.lin.weight", random_tensor({heads * hidden, in}, 1), {}},
          {"conv1.att_src", random_tensor({heads, hidden}, 2), {}},
          {"conv1.att_dst", random_tensor({heads, hidden}, 3), {}},
          {"conv1.bias", random_tensor({heads * hidden}, 4, -0.1f, 0.1f), {}},
          {"conv2.lin.weight", random_tensor({out_heads * classes, heads * hidden}, 5), {}},
          {"conv2.att_src", random_tensor({out_heads, classes}, 6), {}},
          {"conv2.att_dst", random_tensor({out_heads, classes}, 7), {}},
          {"conv2.bias", random_tensor({classes}, 8, -0.1f, 0.1f), {}}};
}

// One GAT layer (PyG GATConv without its own bias): [N, in] -> [N, heads, out].
Var gat_layer(Tape& t, const Graph& g, Var h, Parameter& att_src, Parameter& att_dst, int64_t heads,
              int64_t out, float drop, uint64_t seed) {
  const Var h3 = reshape(t, h, {g.num_src(), heads, out});
  return graph_attention(t, g,
                         {.value = h3,
                          .score_dst = head_scores(t, h3, t.parameter(att_dst)),
                          .score_src = head_scores(t, h3, t.parameter(att_src))},
                         {.score = Score::additive, .negative_slope = 0.2f, .dropout = drop, .seed = seed});
}

Var gat_loss(Tape& t, const Graph& g, const CsrMatrix& x, GatParams& p, int64_t heads, int64_t hidden,
             int64_t out_heads, int64_t classes, std::span<const int32_t> labels,
             std::span<const int64_t> ids, float drop, uint64_t seed) {
  const int64_t n = g.num_dst();
  Var h = linear(t, dropout(t, x, drop, seed + 1), t.parameter(p.w1));
  h = gat_layer(t, g, h, p.att_src1, p.att_dst1, heads, hidden, drop, seed + 2);
  h = elu(t, add_bias(t, reshape(t, h, {n, heads * hidden}), t.parameter(p.b1)));
  h = linear(t, dropout(t, h, drop, seed + 3), t.parameter(p.w2));
  h = gat_layer(t, g, h, p.att_src2, p.att_dst2, out_heads, classes, drop, seed + 4);
  const Var logits = add_bias(t, mean_heads(t, h), t.parameter(p.b2));
  return cross_entropy(t, logits, labels, ids);
}

// labels[i] = (i * stride) % classes.
std::vector<int32_t> cyclic_labels(int64_t n, int64_t classes, int64_t stride) {
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * stride) % classes);
  return labels;
}

// The node ids 0, k, 2k, ... below n.
std::vector<int64_t> every_kth(int64_t n, int64_t k) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; i += k) ids.push_back(i);
  return ids;
}

// The loss, then every parameter's gradient, in one vector (for bit-for-bit comparisons).
std::vector<float> loss_and_gradients(float loss, GatParams& p) {
  std::vector<float> all = {loss};
  for (Parameter* q : p.all()) all.insert(all.end(), q->grad.span().begin(), q->grad.span().end());
  return all;
}

CsrMatrix sparse_features(int64_t n, int64_t f, float density, uint64_t seed) {
  const Tensor u = random_tensor({n, f}, seed, 0.f, 1.f);
  Tensor x({n, f});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < f; ++j)
      if (u(i, j) < density) x(i, j) = 1.f;
  return CsrMatrix::from_dense(x);
}

Graph with_self_loops(int64_t n, int64_t edges, uint64_t seed) {
  const Graph g = edgeattn::testing::uniform_graph(n, n, edges, seed);
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = g.row_ptr()[static_cast<size_t>(i)]; e < g.row_ptr()[static_cast<size_t>(i) + 1]; ++e) {
      src.push_back(g.col_idx()[static_cast<size_t>(e)]);
      dst.push_back(i);
    }
  return build_graph(n, n, src, dst, {.self_loops = SelfLoops::add});
}

TEST(GatComposite, GradientsOfEveryParameterMatchFiniteDifferences) {
  const int64_t n = 12, in = 10, heads = 2, hidden = 3, out_heads = 2, classes = 3;
  const Graph g = with_self_loops(n, 30, 5);
  const CsrMatrix x = sparse_features(n, in, 0.3f, 6);
  std::vector<int32_t> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>(i % classes);
  const std::vector<int64_t> train = {0, 1, 2, 4, 7, 9};
  GatParams p = make_params(in, heads, hidden, out_heads, classes);
  for (float drop : {0.f, 0.3f}) {
    EXPECT_TRUE(edgeattn::testing::check_gradients(p.all(),
                                                   [&](Tape& t) {
                                                     return gat_loss(t, g, x, p, heads, hidden, out_heads,
                                                                     classes, labels, train, drop, 77);
                                                   }))
        << "dropout " << drop;
  }
}

TEST(GatComposite, LossAndGradientsAreBitIdenticalForAnyThreadCount) {
  const int64_t n = 1500, in = 300, heads = 8, hidden = 8, out_heads = 1, classes = 7;
  const Graph g = with_self_loops(n, 6000, 9);
  const CsrMatrix x = sparse_features(n, in, 0.02f, 10);
  const std::vector<int32_t> labels = cyclic_labels(n, classes, 7);
  const std::vector<int64_t> train = every_kth(n, 5);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    GatParams p = make_params(in, heads, hidden, out_heads, classes);
    Tape t;
    const Var loss = gat_loss(t, g, x, p, heads, hidden, out_heads, classes, labels, train, 0.6f, 3);
    t.backward(loss);
    runs.push_back(loss_and_gradients(t.value(loss).data()[0], p));
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

// Tape::release_in_backward frees values and gradients as the backward passes them; the
// parameter gradients must not change by a bit, and what was released must say so.
TEST(GatComposite, ReleasingInBackwardGivesTheSameGradients) {
  const int64_t n = 300, in = 40, heads = 4, hidden = 8, out_heads = 1, classes = 5;
  const Graph g = with_self_loops(n, 1500, 21);
  const CsrMatrix x = sparse_features(n, in, 0.1f, 22);
  const std::vector<int32_t> labels = cyclic_labels(n, classes, 3);
  const std::vector<int64_t> train = every_kth(n, 3);
  std::vector<std::vector<float>> runs;
  for (const bool release : {false, true}) {
    GatParams p = make_params(in, heads, hidden, out_heads, classes);
    Tape t;
    t.release_in_backward = release;
    const Var loss = gat_loss(t, g, x, p, heads, hidden, out_heads, classes, labels, train, 0.5f, 4);
    const float loss_value = t.value(loss).data()[0];  // before backward releases it
    t.backward(loss);
    runs.push_back(loss_and_gradients(loss_value, p));
    if (release) {
      expect_throw_naming<InvalidArgument>([&] { (void)t.value(loss); }, {"released", "read it before"});
      expect_throw_naming<InvalidArgument>([&] { (void)t.grad(loss); }, {"released"});
      expect_throw_naming<InvalidArgument>([&] { t.backward(loss); }, {"released", "clear()"});
      // Parameters are not the tape's to free.
      EXPECT_EQ(t.value(t.parameter(p.w1)).data(), p.w1.value.data());
      t.clear();  // and after clear() the tape records and differentiates again
      const Var again = gat_loss(t, g, x, p, heads, hidden, out_heads, classes, labels, train, 0.5f, 4);
      EXPECT_EQ(t.value(again).data()[0], runs[0][0]);
      t.backward(again);
    }
  }
  EXPECT_EQ(runs[0], runs[1]);
}

}  // namespace
}  // namespace edgeattn::autograd
