// Tests of the dense (blocked BLAS GEMM) attention path against the serial reference, calling the
// backends directly: dense_forward(pattern) vs reference_forward(materialize(pattern)), and the
// same for backward. Every structured pattern and explicit graphs are covered, with softmax and
// relu, with and without dropout and edge bias, one and three heads, Dk != Dv, odd sizes (so the
// vector loops have remainders) and more rows than one row block holds. Outputs are pre-filled
// with NaN so that a value the kernel forgets to write fails the comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/graph/pattern.hpp"
#include "kernels/attention_backend.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::kernels {
namespace {

using edgeattn::testing::power_law_graph;
using edgeattn::testing::random_tensor;
using edgeattn::testing::uniform_graph;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Config {
  int64_t heads = 1;
  int64_t dk = 8;
  int64_t dv = 5;
  Normalization norm = Normalization::softmax;
  float dropout = 0.f;
  bool bias = false;
  float scale = 0.9f;
  uint64_t seed = 7;

  std::string str() const {
    return edgeattn::detail::message("heads=", heads, " dk=", dk, " dv=", dv,
                                     norm == Normalization::softmax ? " softmax" : " relu",
                                     " dropout=", dropout, bias ? " bias" : " no-bias");
  }
};

/// Random operands for a pattern; `args` points into them.
struct Problem {
  Problem(const Pattern& pattern, const Config& c) : config(c) {
    const int64_t nd = num_dst(pattern), ns = num_src(pattern), e = num_edges(pattern);
    q = random_tensor({nd, c.heads, c.dk}, c.seed + 1);
    k = random_tensor({ns, c.heads, c.dk}, c.seed + 2);
    v = random_tensor({ns, c.heads, c.dv}, c.seed + 3);
    dout = random_tensor({nd, c.heads, c.dv}, c.seed + 4);
    if (c.bias) bias = random_tensor({e, c.heads}, c.seed + 5);
    args.heads = c.heads;
    args.dv = c.dv;
    args.score.kind = EdgeScore::dot;
    args.score.scale = c.scale;
    args.score.dk = c.dk;
    args.score.q = q.data();
    args.score.k = k.data();
    args.v = v.data();
    args.bias = c.bias ? bias.data() : nullptr;
    args.norm = c.norm;
    args.dropout = c.dropout;
    args.seed = c.seed * 1000 + 3;
  }
  Config config;
  Tensor q, k, v, dout, bias;
  KernelArgs args;
};

/// Everything forward and backward produce.
struct Outputs {
  Tensor out, lse, alpha, dq, dk, dv, dbias;
};

enum class Path { dense, reference };

Outputs run(const Pattern& pattern, const Problem& pb, Path path) {
  const Config& c = pb.config;
  const int64_t nd = num_dst(pattern), ns = num_src(pattern), e = num_edges(pattern);
  const bool softmax = c.norm == Normalization::softmax;
  Outputs r;
  r.out = Tensor({nd, c.heads, c.dv}, kNaN);
  if (softmax) r.lse = Tensor({nd, c.heads}, kNaN);
  r.alpha = Tensor({e, c.heads}, kNaN);
  const ForwardBuffers fwd{r.out.data(), softmax ? r.lse.data() : nullptr, r.alpha.data()};
  r.dq = Tensor({nd, c.heads, c.dk});
  r.dk = Tensor({ns, c.heads, c.dk});
  r.dv = Tensor({ns, c.heads, c.dv});
  r.dbias = Tensor({e, c.heads});
  const BackwardInputs in{pb.dout.data(), softmax ? r.lse.data() : nullptr};
  const BackwardBuffers grads{
      .dq = r.dq.data(), .dk = r.dk.data(), .dv = r.dv.data(), .dbias = r.dbias.data()};
  if (path == Path::dense) {
    dense_forward(pattern, pb.args, fwd);
    dense_backward(pattern, pb.args, in, grads);
  } else {
    const Graph g = materialize(pattern);
    reference_forward(g, pb.args, fwd);
    reference_backward(g, pb.args, in, grads);
  }
  return r;
}

/// |actual - expected| <= rtol · max(1, max|expected|) everywhere; infinities must match exactly.
void expect_close(const char* name, const Tensor& actual, const Tensor& expected, double rtol = 1e-4) {
  ASSERT_EQ(actual.shape(), expected.shape()) << name;
  double scale = 1.0;
  for (int64_t n = 0; n < expected.numel(); ++n)
    if (std::isfinite(expected.data()[n])) scale = std::max(scale, std::abs(double(expected.data()[n])));
  const double tol = rtol * scale;
  int64_t bad = 0;
  for (int64_t n = 0; n < expected.numel(); ++n) {
    const float a = actual.data()[n], e = expected.data()[n];
    const bool ok = std::isinf(e) ? a == e : std::abs(double(a) - double(e)) <= tol;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << name << "[" << n << "] is " << a << ", expected " << e << " (tolerance " << tol << ")";
  }
  EXPECT_EQ(bad, 0) << name << ": " << bad << " of " << expected.numel() << " elements differ";
}

void expect_dense_matches_reference(const Pattern& pattern, const Config& c) {
  SCOPED_TRACE(describe(pattern) + " " + c.str());
  const Problem pb(pattern, c);
  const Outputs dense = run(pattern, pb, Path::dense);
  const Outputs ref = run(pattern, pb, Path::reference);
  expect_close("out", dense.out, ref.out);
  if (c.norm == Normalization::softmax) expect_close("lse", dense.lse, ref.lse);
  expect_close("alpha", dense.alpha, ref.alpha);
  expect_close("dq", dense.dq, ref.dq);
  expect_close("dk", dense.dk, ref.dk);
  expect_close("dv", dense.dv, ref.dv);
  expect_close("dbias", dense.dbias, ref.dbias);
}

/// Softmax and relu, each with four (heads, dropout, bias) combinations.
void expect_dense_matches_reference_in_all_modes(const Pattern& pattern) {
  struct Mode {
    int64_t heads;
    float dropout;
    bool bias;
  };
  const Mode modes[] = {{1, 0.f, false}, {3, 0.f, true}, {3, 0.3f, false}, {1, 0.3f, true}};
  for (Normalization norm : {Normalization::softmax, Normalization::relu})
    for (const Mode& m : modes) {
      Config c;
      c.heads = m.heads;
      c.norm = norm;
      c.dropout = m.dropout;
      c.bias = m.bias;
      expect_dense_matches_reference(pattern, c);
    }
}

// ------------------------------------------------------------------------------------------------
// Dense == reference, pattern by pattern. 300 rows span three row blocks of at most 128 rows and
// 300 sources span two backward source blocks of 256.
// ------------------------------------------------------------------------------------------------

TEST(DenseAttention, CompletePatternMatchesReference) {
  expect_dense_matches_reference_in_all_modes(CompletePattern(300, 300));
}

TEST(DenseAttention, BipartiteCompletePatternMatchesReference) {
  expect_dense_matches_reference_in_all_modes(CompletePattern(70, 531));
}

TEST(DenseAttention, CausalPatternMatchesReference) {
  expect_dense_matches_reference_in_all_modes(CausalPattern(300));
}

TEST(DenseAttention, CausalPatternWithMoreSourcesThanRowsMatchesReference) {
  expect_dense_matches_reference_in_all_modes(CausalPattern(150, 413));
}

TEST(DenseAttention, CausalPatternWithFewerSourcesLeavesLeadingRowsEmpty) {
  // Rows 0..109 see no source: zero output, lse = -inf.
  expect_dense_matches_reference_in_all_modes(CausalPattern(300, 190));
}

TEST(DenseAttention, SlidingWindowMatchesReference) {
  expect_dense_matches_reference_in_all_modes(WindowPattern::sliding(300, 21));
}

TEST(DenseAttention, CausalSlidingWindowMatchesReference) {
  expect_dense_matches_reference_in_all_modes(WindowPattern::sliding(300, 33, /*causal=*/true));
}

TEST(DenseAttention, AsymmetricWindowMatchesReference) {
  expect_dense_matches_reference_in_all_modes(WindowPattern(300, 3, 40));
}

TEST(DenseAttention, DilatedWindowMatchesReference) {
  expect_dense_matches_reference_in_all_modes(WindowPattern::sliding(300, 9, false, /*dilation=*/4));
}

TEST(DenseAttention, PaddedBatchWithAnEmptySequenceMatchesReference) {
  // Sequence 2 has valid length 0: its 64 rows attend to nothing.
  expect_dense_matches_reference_in_all_modes(BlockDiagonalPattern::padded_batch(64, {64, 30, 0, 1, 50}));
}

TEST(DenseAttention, UnevenBlockDiagonalMatchesReference) {
  expect_dense_matches_reference_in_all_modes(
      BlockDiagonalPattern({0, 5, 5, 140, 141, 300}, {5, 0, 100, 1, 159}));
}

TEST(DenseAttention, WindowWithGlobalTokensMatchesReference) {
  expect_dense_matches_reference_in_all_modes(WindowGlobalPattern(300, 6, {0, 151, 299, 40}));
}

TEST(DenseAttention, RandomBipartiteGraphMatchesReference) {
  expect_dense_matches_reference_in_all_modes(uniform_graph(200, 277, 9000, 11));
}

TEST(DenseAttention, PowerLawGraphWithIsolatedRowsMatchesReference) {
  expect_dense_matches_reference_in_all_modes(power_law_graph(300, 4000, 5));
}

TEST(DenseAttention, GraphWithRepeatedEdgesCountsEachEdge) {
  // CsrCheck::sort keeps duplicates: each copy is its own softmax entry with its own bias.
  const Graph g = Graph::from_csr(4, 5, {0, 4, 4, 6, 9}, {3, 1, 3, 3, 0, 0, 4, 2, 4}, CsrCheck::sort);
  expect_dense_matches_reference_in_all_modes(g);
}

TEST(DenseAttention, SingleRowAndSingleSourceMatchReference) {
  expect_dense_matches_reference_in_all_modes(CompletePattern(1, 1));
  expect_dense_matches_reference_in_all_modes(CompletePattern(1, 17));
  expect_dense_matches_reference_in_all_modes(CompletePattern(17, 1));
}

TEST(DenseAttention, EqualKeyAndValueWidthsAndWideHeadsMatchReference) {
  Config c;
  c.heads = 2;
  c.dk = 64;
  c.dv = 64;
  c.scale = 0.125f;
  c.bias = true;
  expect_dense_matches_reference(CausalPattern(200), c);
  c.norm = Normalization::relu;
  expect_dense_matches_reference(CausalPattern(200), c);
}

TEST(DenseAttention, LargeScoresStayFiniteAndMatchReference) {
  // Scores up to ~ 8 · 40 = 320: exp() would overflow without the max shift.
  Config c;
  c.scale = 40.f;
  c.heads = 2;
  expect_dense_matches_reference(WindowPattern::sliding(200, 30), c);
  const Problem pb(CompletePattern(50, 60), c);
  const Outputs r = run(CompletePattern(50, 60), pb, Path::dense);
  for (const Tensor* t : {&r.out, &r.lse, &r.alpha, &r.dq, &r.dk, &r.dv})
    for (float x : t->span()) ASSERT_TRUE(std::isfinite(x));
}

TEST(DenseAttention, ManySourcesShrinkTheRowBlockAndStillMatchReference) {
  // With 70000 sources the 8 MiB score budget holds fewer than 40 rows, so the rows are split by
  // the budget rather than by the 128-row cap.
  Config c;
  c.dk = 4;
  c.dv = 3;
  c.bias = true;
  c.dropout = 0.2f;
  expect_dense_matches_reference(CompletePattern(40, 70000), c);
}

TEST(DenseAttention, EmptyPatternsWriteNothingAndDoNotFail) {
  const Config c;
  for (const Pattern& p : {Pattern(CompletePattern(0, 5)), Pattern(CompletePattern(6, 0))}) {
    const Problem pb(p, c);
    const Outputs r = run(p, pb, Path::dense);
    for (float x : r.out.span()) EXPECT_EQ(x, 0.f);
    for (float x : r.lse.span()) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
  }
}

// ------------------------------------------------------------------------------------------------
// Determinism, optional buffers, errors
// ------------------------------------------------------------------------------------------------

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

TEST(DenseAttention, OneAndTwoThreadsGiveBitIdenticalResults) {
  Config c;
  c.heads = 3;
  c.bias = true;
  c.dropout = 0.25f;
  for (const Pattern& p :
       {Pattern(CompletePattern(300, 600)), Pattern(WindowGlobalPattern(300, 6, {0, 150}))}) {
    SCOPED_TRACE(describe(p));
    const Problem pb(p, c);
    Outputs one, two;
    {
      ThreadLimit limit(1);
      one = run(p, pb, Path::dense);
    }
    {
      ThreadLimit limit(2);
      two = run(p, pb, Path::dense);
    }
    EXPECT_TRUE(bit_identical(one.out, two.out));
    EXPECT_TRUE(bit_identical(one.lse, two.lse));
    EXPECT_TRUE(bit_identical(one.alpha, two.alpha));
    EXPECT_TRUE(bit_identical(one.dq, two.dq));
    EXPECT_TRUE(bit_identical(one.dk, two.dk));
    EXPECT_TRUE(bit_identical(one.dv, two.dv));
    EXPECT_TRUE(bit_identical(one.dbias, two.dbias));
  }
}

TEST(DenseAttention, NullGradientBuffersAreSkippedAndTheOthersUnchanged) {
  for (Normalization norm : {Normalization::softmax, Normalization::relu}) {
    Config c;
    c.heads = 2;
    c.norm = norm;
    c.bias = true;
    c.dropout = 0.1f;
    const Pattern p = CausalPattern(200, 300);
    const Problem pb(p, c);
    const Outputs all = run(p, pb, Path::dense);
    const BackwardInputs in{pb.dout.data(), norm == Normalization::softmax ? all.lse.data() : nullptr};
    Tensor dq(all.dq.shape()), dk(all.dk.shape()), dv(all.dv.shape()), dbias(all.dbias.shape());
    dense_backward(p, pb.args, in, {.dq = dq.data()});
    dense_backward(p, pb.args, in, {.dk = dk.data()});
    dense_backward(p, pb.args, in, {.dv = dv.data()});
    dense_backward(p, pb.args, in, {.dbias = dbias.data()});
    dense_backward(p, pb.args, in, {});
    EXPECT_TRUE(bit_identical(dq, all.dq));
    EXPECT_TRUE(bit_identical(dk, all.dk));
    EXPECT_TRUE(bit_identical(dv, all.dv));
    EXPECT_TRUE(bit_identical(dbias, all.dbias));
  }
}

TEST(DenseAttention, ForwardWithoutAttentionWeightsGivesTheSameOutput) {
  const Config c;
  const Pattern p = WindowPattern::sliding(150, 12);
  const Problem pb(p, c);
  const Outputs all = run(p, pb, Path::dense);
  Tensor out(all.out.shape(), kNaN), lse(all.lse.shape(), kNaN);
  dense_forward(p, pb.args, {out.data(), lse.data(), nullptr});
  EXPECT_TRUE(bit_identical(out, all.out));
  EXPECT_TRUE(bit_identical(lse, all.lse));
}

TEST(DenseAttention, DropoutChangesTheOutputAndFollowsTheSharedMask) {
  // Guards against a dropout that is silently ignored on both sides of the comparison.
  Config c;
  const Pattern p = CompletePattern(40, 40);
  const Outputs plain = run(p, Problem(p, c), Path::dense);
  c.dropout = 0.5f;
  const Outputs dropped = run(p, Problem(p, c), Path::dense);
  EXPECT_GT(max_abs_diff(plain.out, dropped.out), 1e-3f);
  EXPECT_TRUE(bit_identical(plain.alpha, dropped.alpha));  // alpha is taken before dropout
}

TEST(DenseAttention, NonDotScoresAreRejected) {
  const Config c;
  const Pattern p = CompletePattern(4, 4);
  Problem pb(p, c);
  pb.args.score.kind = EdgeScore::additive;
  Tensor out({4, 1, c.dv}), lse({4, 1});
  EXPECT_THROW(dense_forward(p, pb.args, {out.data(), lse.data(), nullptr}), InvalidArgument);
  EXPECT_THROW(dense_backward(p, pb.args, {pb.dout.data(), lse.data()}, {}), InvalidArgument);
}

TEST(DenseAttention, SoftmaxBackwardWithoutLseIsRejected) {
  const Config c;
  const Pattern p = CompletePattern(4, 4);
  const Problem pb(p, c);
  Tensor dq({4, 1, c.dk});
  EXPECT_THROW(dense_backward(p, pb.args, {pb.dout.data(), nullptr}, {.dq = dq.data()}), InvalidArgument);
}

}  // namespace
}  // namespace edgeattn::kernels
