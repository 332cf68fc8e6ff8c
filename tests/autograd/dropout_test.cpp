// Dropout on dense Vars and sparse matrices: identity in eval mode and at p = 0, the kept
// fraction and scaling, masks that are pure functions of (seed, element) and independent of the
// thread count, the gradient, and invalid p; the fused dropout_linear on dense and sparse inputs
// against the unfused pair, and over a row selection of a constant x against its gathered copy;
// the dropped-input products with a recorded mask (detail::KeepBits) against the drawn one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops/dropped_projection.hpp"
#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/parallel.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

std::vector<float> values(const Tensor& t) { return {t.span().begin(), t.span().end()}; }

TEST(Dropout, IsTheIdentityInEvalModeAndAtZeroRate) {
  const Tensor x = random_tensor({50, 20}, 1);
  Tape eval;
  eval.training = false;
  EXPECT_EQ(values(eval.value(dropout(eval, eval.constant(x), 0.6f, 7))), values(x));
  Tape train;
  EXPECT_EQ(values(train.value(dropout(train, train.constant(x), 0.f, 7))), values(x));
  const CsrMatrix s = CsrMatrix::from_dense(x);
  EXPECT_EQ(dropout(eval, s, 0.6f, 7), s);
}

TEST(Dropout, KeepsAboutOneMinusPAndScalesSurvivors) {
  const Tensor x({200, 100}, 1.f);
  Tape tape;
  const Tensor& y = tape.value(dropout(tape, tape.constant(x), 0.6f, 42));
  int64_t kept = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float v = y.data()[i];
    ASSERT_TRUE(v == 0.f || std::fabs(v - 2.5f) < 1e-6f) << v;
    if (v != 0.f) {
      ++kept;
      EXPECT_TRUE(dropout_keeps_element(42, i, 0.6f));
    } else {
      EXPECT_FALSE(dropout_keeps_element(42, i, 0.6f));
    }
  }
  // 20000 Bernoulli(0.4) draws: mean 8000, sd ~69
  EXPECT_NEAR(static_cast<double>(kept), 8000.0, 350.0);
}

TEST(Dropout, MaskDependsOnTheSeedButNotOnTheThreadCount) {
  const Tensor x = random_tensor({300, 257}, 2);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    Tape tape;
    runs.push_back(values(tape.value(dropout(tape, tape.constant(x), 0.5f, 9))));
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  Tape tape;
  EXPECT_NE(values(tape.value(dropout(tape, tape.constant(x), 0.5f, 10))), runs[0]);
}

// Two consecutive elements share a hash: every element still gets its own draw, for any shape
// and thread count. (Spans starting inside a hash's pair, as the fused epilogue's rows of odd
// width do, are covered by GraphAttentionEpilogue.EqualsAddBiasThenEluDropout.)
TEST(Dropout, EveryElementGetsItsOwnDrawWhereverASpanStarts) {
  for (const Shape& shape : {Shape{1, 1}, Shape{3, 5}, Shape{4099, 37}}) {
    const Tensor ones(shape, 1.f);
    for (int threads : {1, 2, 3}) {
      ThreadLimit limit(threads);
      Tape tape;
      const Tensor& y = tape.value(dropout(tape, tape.constant(ones), 0.3f, 77));
      const Tensor& z = tape.value(elu_dropout(tape, tape.constant(ones), 1.f, 0.3f, 77));
      int64_t kept = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const bool keep = dropout_keeps_element(77, i, 0.3f);
        kept += keep;
        ASSERT_EQ(y.data()[i] != 0.f, keep)
            << "element " << i << " of " << y.numel() << ", " << threads << " threads";
        ASSERT_EQ(z.data()[i], y.data()[i]) << "element " << i;
      }
      if (y.numel() > 100000) {  // 151663 Bernoulli(0.7) draws: sd ~178
        EXPECT_NEAR(static_cast<double>(kept), 0.7 * static_cast<double>(y.numel()), 900.0);
      }
    }
  }
}

// The two 16-bit halves of one hash, and neighbouring hashes, decide independently: over 2^20
// elements at p = 0.5 each pair of neighbours (within a hash, across two) is kept together a
// quarter of the time, and so are elements 2^16 apart.
TEST(Dropout, NeighbouringDecisionsAreIndependent) {
  constexpr int64_t n = int64_t{1} << 20;
  std::vector<uint8_t> keep(static_cast<size_t>(n));
  detail::dense_keep_decisions(2024, 0.5f, 0, n, keep.data());
  for (const int64_t lag : {int64_t{1}, int64_t{2}, int64_t{1} << 16}) {
    for (const int64_t parity : {int64_t{0}, int64_t{1}}) {  // lag 1: within a hash, then across
      int64_t both = 0, pairs = 0;
      for (int64_t i = parity; i + lag < n; i += 2) {
        both += keep[static_cast<size_t>(i)] & keep[static_cast<size_t>(i + lag)];
        ++pairs;
      }
      // Bernoulli(1/4) over ~2^19 pairs: sd ~0.0006
      EXPECT_NEAR(static_cast<double>(both) / static_cast<double>(pairs), 0.25, 0.004)
          << "lag " << lag << ", parity " << parity;
    }
  }
}

// The counter is kept per segment of 2^32 hashes (2^33 elements), each under a key of its own: a
// block of draws that crosses a segment's end draws each element as dropout_keeps_element does.
TEST(Dropout, DrawsAcrossACounterSegmentEndAreEachElementsOwn) {
  const int64_t end = int64_t{1} << 33;  // the first segment's last element is end - 1
  for (const int64_t begin : {end - 7, end - 600, end - 1024}) {
    const int64_t n = 1100;
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    detail::dense_keep_decisions(11, 0.4f, begin, n, keep.data());
    int64_t kept = 0;
    for (int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(keep[static_cast<size_t>(k)] != 0, dropout_keeps_element(11, begin + k, 0.4f))
          << "element " << begin + k;
      kept += keep[static_cast<size_t>(k)];
    }
    EXPECT_NEAR(static_cast<double>(kept), 0.6 * n, 80.0);  // sd ~16
  }
}

TEST(Dropout, GradientMatchesFiniteDifferencesForAFixedSeed) {
  Parameter x{"x", random_tensor({6, 7}, 3), {}};
  EXPECT_TRUE(check_gradients(
      {&x}, [&](Tape& t) { return weighted_sum(t, dropout(t, t.parameter(x), 0.4f, 5), 4); }));
}

TEST(Dropout, SparseKeepsThePatternAndKeysTheMaskByRowAndColumn) {
  Tensor dense = random_tensor({60, 40}, 4, 0.5f, 1.5f);
  for (int64_t i = 0; i < 60; ++i)
    for (int64_t j = 0; j < 40; ++j)
      if ((i + j) % 3) dense(i, j) = 0.f;
  const CsrMatrix x = CsrMatrix::from_dense(dense);
  Tape tape;
  const CsrMatrix y = dropout(tape, x, 0.5f, 11);
  ASSERT_EQ(y.rows(), x.rows());
  EXPECT_TRUE(std::equal(y.indptr().begin(), y.indptr().end(), x.indptr().begin()));
  EXPECT_TRUE(std::equal(y.indices().begin(), y.indices().end(), x.indices().begin()));
  int64_t zeros = 0;
  for (int64_t k = 0; k < y.nnz(); ++k) {
    const float v = y.values()[static_cast<size_t>(k)], orig = x.values()[static_cast<size_t>(k)];
    ASSERT_TRUE(v == 0.f || std::fabs(v - 2.f * orig) < 1e-6f);
    zeros += v == 0.f;
  }
  EXPECT_GT(zeros, y.nnz() / 4);
  EXPECT_LT(zeros, 3 * y.nnz() / 4);
  // Entries keep their decision when other entries are added: the mask is keyed by (row,
  // column), not by the position in the value array.
  Tensor denser = dense;
  for (int64_t i = 0; i < 60; ++i)
    if (dense(i, (i * 7) % 40) == 0.f) denser(i, (i * 7) % 40) = 3.f;
  const Tensor y_denser = dropout(tape, CsrMatrix::from_dense(denser), 0.5f, 11).to_dense();
  const Tensor yd = y.to_dense();
  for (int64_t i = 0; i < 60; ++i)
    for (int64_t j = 0; j < 40; ++j)
      if (dense(i, j) != 0.f) {
        EXPECT_EQ(y_denser(i, j), yd(i, j)) << i << "," << j;
      }
}

TEST(Dropout, RejectsARateOutsideZeroToOne) {
  Tape tape;
  const Var x = tape.constant(Tensor({2}));
  expect_throw_naming<InvalidArgument>([&] { (void)dropout(tape, x, 1.f, 0); },
                                       {"dropout", "p is 1", "[0, 1)"});
  expect_throw_naming<InvalidArgument>([&] { (void)dropout(tape, CsrMatrix(), -0.1f, 0); },
                                       {"dropout (sparse x)", "-0.1"});
}

// ---- dropout_linear: linear(dropout(x)) without the dropped copy -------------------------------

// The value and the gradients of x, weight and bias of weighted_sum(f(x, weight, bias)).
struct OpRun {
  Tensor y, dx, dw, db;
};

template <class F>
OpRun run_op(const Tensor& x, const Tensor& w, const Tensor& b, F f, bool release = false) {
  Parameter px{"x", x, {}}, pw{"w", w, {}}, pb{"b", b, {}};
  for (Parameter* p : {&px, &pw, &pb}) p->zero_grad();
  Tape tape;
  tape.release_in_backward = release;
  const Var y = f(tape, tape.parameter(px), tape.parameter(pw), tape.parameter(pb));
  OpRun r;
  r.y = tape.value(y);
  tape.backward(weighted_sum(tape, y, 77));
  r.dx = px.grad;
  r.dw = pw.grad;
  r.db = pb.grad;
  return r;
}

Var unfused_dropout_linear(Tape& t, Var x, Var w, Var b) { return linear(t, dropout(t, x, 0.6f, 31), w, b); }
Var fused_dropout_linear(Tape& t, Var x, Var w, Var b) { return dropout_linear(t, x, 0.6f, 31, w, b); }

TEST(DropoutLinear, EqualsLinearOfDropoutUpToRounding) {
  // 9000 rows: several row blocks of the forward and two fixed partials of the weight gradient.
  // 6 and 32 outputs (the latter whole microkernel panels in the forward).
  for (int64_t out : {6, 32}) {
    SCOPED_TRACE(out);
    const Tensor x = random_tensor({9000, 13}, 1), w = random_tensor({out, 13}, 2),
                 b = random_tensor({out}, 3);
    const OpRun fused = run_op(x, w, b, fused_dropout_linear);
    const OpRun unfused = run_op(x, w, b, unfused_dropout_linear);
    EXPECT_LE(max_abs_diff(fused.y, unfused.y), 1e-5f);
    EXPECT_LE(max_abs_diff(fused.dx, unfused.dx), 1e-5f);
    EXPECT_LE(max_abs_diff(fused.dw, unfused.dw), 2e-3f);  // a sum over 9000 rows
    EXPECT_LE(max_abs_diff(fused.db, unfused.db), 1e-3f);
    // The mask is dropout's: a dropped element has no gradient.
    int64_t zeros = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool kept = dropout_keeps_element(31, i, 0.6f);
      zeros += !kept;
      if (!kept) {
        ASSERT_EQ(fused.dx.data()[i], 0.f) << i;
      }
    }
    EXPECT_GT(zeros, x.numel() / 2);
  }
}

TEST(DropoutLinear, IsBitIdenticalOnOneAndTwoThreads) {
  for (int64_t out : {5, 32}) {
    SCOPED_TRACE(out);
    const Tensor x = random_tensor({20000, 9}, 4), w = random_tensor({out, 9}, 5),
                 b = random_tensor({out}, 6);
    std::vector<OpRun> runs;
    for (int threads : {1, 2}) {
      ThreadLimit limit(threads);
      runs.push_back(run_op(x, w, b, fused_dropout_linear, /*release=*/threads == 2));
    }
    EXPECT_EQ(values(runs[0].y), values(runs[1].y));
    EXPECT_EQ(values(runs[0].dx), values(runs[1].dx));
    EXPECT_EQ(values(runs[0].dw), values(runs[1].dw));
    EXPECT_EQ(values(runs[0].db), values(runs[1].db));
  }
}

TEST(DropoutLinear, GradientMatchesFiniteDifferences) {
  Parameter x{"x", random_tensor({150, 7}, 7), {}}, w{"w", random_tensor({4, 7}, 8), {}},
      b{"b", random_tensor({4}, 9), {}};
  EXPECT_TRUE(check_gradients({&x, &w, &b}, [&](Tape& t) {
    return weighted_sum(t, dropout_linear(t, t.parameter(x), 0.3f, 12, t.parameter(w), t.parameter(b)), 4);
  }));
  EXPECT_TRUE(check_gradients({&x, &w}, [&](Tape& t) {  // no bias
    return weighted_sum(t, dropout_linear(t, t.parameter(x), 0.5f, 13, t.parameter(w)), 5);
  }));
  Parameter w32{"w32", random_tensor({32, 7}, 14), {}};  // whole microkernel panels (forward)
  EXPECT_TRUE(check_gradients({&x, &w32}, [&](Tape& t) {
    return weighted_sum(t, dropout_linear(t, t.parameter(x), 0.3f, 15, t.parameter(w32)), 6);
  }));
}

TEST(DropoutLinear, IsTheLinearMapInEvalModeAndAtZeroRate) {
  const Tensor x = random_tensor({40, 6}, 10), w = random_tensor({3, 6}, 11);
  Tape eval;
  eval.training = false;
  const Tensor expected = eval.value(linear(eval, eval.constant(x), eval.constant(w)));
  EXPECT_EQ(values(eval.value(dropout_linear(eval, eval.constant(x), 0.6f, 1, eval.constant(w)))),
            values(expected));
  Tape train;
  EXPECT_EQ(values(train.value(dropout_linear(train, train.constant(x), 0.f, 1, train.constant(w)))),
            values(expected));
}

TEST(DropoutLinear, RejectsBadRatesAndShapes) {
  Tape tape;
  const Var x = tape.constant(Tensor({4, 3})), w = tape.constant(Tensor({2, 3}));
  expect_throw_naming<InvalidArgument>([&] { (void)dropout_linear(tape, x, 1.f, 0, w); },
                                       {"dropout_linear", "p is 1"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)dropout_linear(tape, x, 0.5f, 0, tape.constant(Tensor({2, 4})));
      },
      {"dropout_linear", "weight"});
  expect_throw_naming<ShapeError>(
      [&] { (void)dropout_linear(tape, x, 0.5f, 0, w, tape.constant(Tensor({3}))); },
      {"dropout_linear", "bias"});
  expect_throw_naming<ShapeError>(
      [&] { (void)dropout_linear(tape, tape.constant(Tensor({12})), 0.5f, 0, w); }, {"dropout_linear", "x"});
}

// ---- the dropped-input products with a recorded mask ---------------------------------------------

// The three products of a dropped input (dropped_projection.hpp), drawing the mask or reading it.
struct Products {
  Tensor y, dw, dx;
};
Products products(const detail::DroppedInput& d, const Tensor& w, const Tensor& g) {
  Products r{Tensor({d.count(), w.dim(0)}), Tensor({w.dim(0), d.x.dim(1)}), Tensor()};
  detail::dropped_project(d, w, r.y);
  const detail::TransposeProduct dw{g.data(), w.dim(0), r.dw.data()};
  detail::dropped_transpose_products(d, {&dw, 1});
  if (d.rows.empty()) {
    r.dx = Tensor(d.x.shape());
    detail::dropped_input_grad(d, g.data(), w, r.dx);
  }
  return r;
}

TEST(DroppedInput, ARecordedMaskIsTheDrawnOneAndItsProductsAreBitForBitTheSame) {
  // Rows of under one word, whole words, and whole words plus a part; enough rows for several row
  // blocks and weight partials.
  for (int64_t in : {13, 64, 70}) {
    SCOPED_TRACE(in);
    const Tensor x = random_tensor({5000, in}, 21);
    const Tensor w = random_tensor({24, in}, 22), g = random_tensor({5000, 24}, 23);
    const Products drawn = products({x, 0.4f, 5}, w, g);
    detail::KeepBits keep;
    const Products recorded = products({x, 0.4f, 5, {}, &keep}, w, g);  // recorded, then read
    ASSERT_TRUE(keep.filled);
    EXPECT_EQ(values(recorded.y), values(drawn.y));
    EXPECT_EQ(values(recorded.dw), values(drawn.dw));
    EXPECT_EQ(values(recorded.dx), values(drawn.dx));
    // The bits are the mask's decisions at x's flat positions, each row from a word of its own.
    ASSERT_EQ(keep.rows, 5000);
    ASSERT_EQ(keep.words_per_row, (in + 31) / 32);
    for (int64_t r = 0; r < 5000; ++r)
      for (int64_t c = 0; c < in; ++c) {
        const uint32_t word = keep.words[static_cast<size_t>(r * keep.words_per_row + c / 32)];
        ASSERT_EQ(((word >> (c % 32)) & 1u) != 0u, dropout_keeps_element(5, r * in + c, 0.4f))
            << r << ", " << c;
      }
    // A filled mask is read, not drawn again: flipping a decision changes the products.
    keep.words[0] ^= 1u;
    const Products flipped = products({x, 0.4f, 5, {}, &keep}, w, g);
    EXPECT_NE(values(flipped.y), values(drawn.y));
    EXPECT_NE(values(flipped.dw), values(drawn.dw));
    EXPECT_NE(values(flipped.dx), values(drawn.dx));
  }
}

TEST(DroppedInput, ARowSelectionIsDrawnEachTimeAndNotRecorded) {
  // A selection's rows (repeated, out of order) are short gathered copies: the mask is drawn in
  // each product and the KeepBits stays empty; the products are the gathered copy's.
  const Tensor x = random_tensor({5000, 70}, 21);
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < 9000; ++i) rows.push_back((i * 7919) % 5000);
  Tensor gathered({9000, 70});
  for (int64_t i = 0; i < 9000; ++i)
    std::copy_n(x.data() + rows[static_cast<size_t>(i)] * 70, 70, gathered.data() + i * 70);
  const Tensor w = random_tensor({24, 70}, 22), g = random_tensor({9000, 24}, 23);
  detail::KeepBits keep;
  const Products selected = products({x, 0.4f, 5, rows, &keep}, w, g);
  EXPECT_FALSE(keep.filled);
  EXPECT_TRUE(keep.words.empty());
  const Products copy = products({gathered, 0.4f, 5}, w, g);
  EXPECT_EQ(values(selected.y), values(copy.y));
  EXPECT_EQ(values(selected.dw), values(copy.dw));
}

TEST(DroppedInput, AMaskRecordedForAnotherInputIsRefused) {
  const Tensor x = random_tensor({100, 40}, 24), w = random_tensor({8, 40}, 25);
  detail::KeepBits keep;
  Tensor y({100, 8});
  detail::dropped_project({x, 0.5f, 1, {}, &keep}, w, y);
  const Tensor wider = random_tensor({100, 70}, 26), w70 = random_tensor({8, 70}, 27);
  expect_throw_naming<InvalidArgument>(
      [&] {
        detail::dropped_project({wider, 0.5f, 1, {}, &keep}, w70, y);
      },
      {"recorded mask", "100 rows of 2 words", "100 rows of 3", "70 elements"});
  const Tensor fewer = random_tensor({60, 40}, 28);
  Tensor y60({60, 8});
  expect_throw_naming<InvalidArgument>(
      [&] {
        detail::dropped_project({fewer, 0.5f, 1, {}, &keep}, w, y60);
      },
      {"recorded mask", "100 rows", "expected 60 rows"});
}

// ---- dropout_linear on a sparse x: the products over the kept entries ---------------------------

// A sparse [rows, cols] matrix with about a quarter of its entries set.
CsrMatrix sparse_input(int64_t rows, int64_t cols, uint64_t seed) {
  Tensor dense = random_tensor({rows, cols}, seed);
  const Tensor u = random_tensor({rows, cols}, seed + 1, 0.f, 1.f);
  for (int64_t i = 0; i < dense.numel(); ++i)
    if (u.data()[i] > 0.25f) dense.data()[i] = 0.f;
  return CsrMatrix::from_dense(dense);
}

// The value and the weight and bias gradients of weighted_sum(f(tape, w, b)).
template <class F>
OpRun run_sparse_op(const Tensor& w, const Tensor& b, F f, bool training = true) {
  Parameter pw{"w", w, {}}, pb{"b", b, {}};
  pw.zero_grad();
  pb.zero_grad();
  Tape tape;
  tape.training = training;
  const Var y = f(tape, tape.parameter(pw), tape.parameter(pb));
  OpRun r;
  r.y = tape.value(y);
  tape.backward(weighted_sum(tape, y, 78));
  r.dw = pw.grad;
  r.db = pb.grad;
  return r;
}

TEST(SparseDropoutLinear, EqualsLinearOfTheDroppedMatrixBitForBit) {
  // 64 outputs (the SpMM's 64-column register tiles) and 5 (its scalar tail); 3000 rows of 300
  // columns at a quarter full: rows and columns long enough for several of the kernels' chunks.
  for (int64_t out : {5, 64}) {
    SCOPED_TRACE(out);
    const CsrMatrix x = sparse_input(3000, 300, 21);
    const Tensor w = random_tensor({out, 300}, 22), b = random_tensor({out}, 23);
    for (const float p : {0.3f, 0.6f}) {
      const OpRun fused =
          run_sparse_op(w, b, [&](Tape& t, Var wv, Var bv) { return dropout_linear(t, x, p, 33, wv, bv); });
      const OpRun unfused = run_sparse_op(
          w, b, [&](Tape& t, Var wv, Var bv) { return linear(t, dropout(t, x, p, 33), wv, bv); });
      EXPECT_EQ(values(fused.y), values(unfused.y)) << p;
      EXPECT_EQ(values(fused.dw), values(unfused.dw)) << p;
      EXPECT_EQ(values(fused.db), values(unfused.db)) << p;
    }
  }
}

TEST(SparseDropoutLinear, IsBitIdenticalOnOneAndTwoThreads) {
  const CsrMatrix x = sparse_input(5000, 120, 24);
  const Tensor w = random_tensor({16, 120}, 25), b = random_tensor({16}, 26);
  std::vector<OpRun> runs;
  for (int threads : {1, 2}) {
    ThreadLimit limit(threads);
    runs.push_back(
        run_sparse_op(w, b, [&](Tape& t, Var wv, Var bv) { return dropout_linear(t, x, 0.6f, 3, wv, bv); }));
  }
  EXPECT_EQ(values(runs[0].y), values(runs[1].y));
  EXPECT_EQ(values(runs[0].dw), values(runs[1].dw));
  EXPECT_EQ(values(runs[0].db), values(runs[1].db));
}

TEST(SparseDropoutLinear, GradientMatchesFiniteDifferences) {
  const CsrMatrix x = sparse_input(120, 9, 27);
  Parameter w{"w", random_tensor({4, 9}, 28), {}}, b{"b", random_tensor({4}, 29), {}};
  EXPECT_TRUE(check_gradients({&w, &b}, [&](Tape& t) {
    return weighted_sum(t, dropout_linear(t, x, 0.4f, 14, t.parameter(w), t.parameter(b)), 4);
  }));
  EXPECT_TRUE(check_gradients({&w}, [&](Tape& t) {  // no bias
    return weighted_sum(t, dropout_linear(t, x, 0.5f, 15, t.parameter(w)), 5);
  }));
}

TEST(SparseDropoutLinear, IsTheLinearMapInEvalModeAndAtZeroRate) {
  const CsrMatrix x = sparse_input(40, 6, 30);
  const Tensor w = random_tensor({3, 6}, 31), b = random_tensor({3}, 32);
  const auto plain = [&](Tape& t, Var wv, Var bv) { return linear(t, x, wv, bv); };
  for (const bool training : {false, true}) {
    const float p = training ? 0.f : 0.6f;
    const OpRun got = run_sparse_op(
        w, b, [&](Tape& t, Var wv, Var bv) { return dropout_linear(t, x, p, 1, wv, bv); }, training);
    const OpRun want = run_sparse_op(w, b, plain, training);
    EXPECT_EQ(values(got.y), values(want.y)) << training;
    EXPECT_EQ(values(got.dw), values(want.dw)) << training;
  }
}

TEST(SparseDropoutLinear, RejectsBadRatesAndShapes) {
  Tape tape;
  const CsrMatrix x = sparse_input(4, 3, 33);
  const Var w = tape.constant(Tensor({2, 3}));
  expect_throw_naming<InvalidArgument>([&] { (void)dropout_linear(tape, x, 1.f, 0, w); },
                                       {"dropout_linear (sparse x)", "p is 1"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)dropout_linear(tape, x, 0.5f, 0, tape.constant(Tensor({2, 4})));
      },
      {"dropout_linear (sparse x)", "weight", "[2, 4]"});
  expect_throw_naming<ShapeError>(
      [&] { (void)dropout_linear(tape, x, 0.5f, 0, w, tape.constant(Tensor({3}))); },
      {"dropout_linear (sparse x)", "bias"});
}

// ---- dropout_linear over a row selection of a constant x: the rows read in place ---------------

// n indices into [0, m): unsorted, with repeats (a sampled batch's input nodes are distinct, but
// nothing here relies on it).
std::shared_ptr<const std::vector<int64_t>> some_rows(int64_t n, int64_t m, uint64_t seed) {
  const Tensor u = random_tensor({n}, seed, 0.f, 1.f);
  auto rows = std::make_shared<std::vector<int64_t>>();
  for (int64_t i = 0; i < n; ++i)
    rows->push_back(std::min<int64_t>(m - 1, static_cast<int64_t>(u.data()[i] * static_cast<float>(m))));
  return rows;
}

TEST(SelectedRowsDropoutLinear, EqualsDropoutLinearOfTheGatheredCopyBitForBit) {
  // 9000 selected rows of a 3000-row x: several row blocks and two weight-gradient partials; 6
  // outputs (padded panels) and 32 (whole ones); p = 0.6 and, in eval mode, the plain map.
  const Tensor x = random_tensor({3000, 13}, 41);
  const auto rows = some_rows(9000, 3000, 42);
  const Tensor gathered = gather_rows(x.view(), *rows);
  for (int64_t out : {6, 32})
    for (bool training : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "out=" << out << " training=" << training);
      const Tensor w = random_tensor({out, 13}, 43), b = random_tensor({out}, 44);
      const OpRun selected = run_sparse_op(
          w, b,
          [&](Tape& t, Var wv, Var bv) {
            return dropout_linear(t, t.constant_ref(x), rows, 0.6f, 31, wv, bv);
          },
          training);
      const OpRun copy = run_sparse_op(
          w, b,
          [&](Tape& t, Var wv, Var bv) { return dropout_linear(t, t.constant(gathered), 0.6f, 31, wv, bv); },
          training);
      EXPECT_EQ(values(selected.y), values(copy.y));
      if (training) {
        EXPECT_EQ(values(selected.dw), values(copy.dw));
      } else {  // linear's weight gradient sums in chunks of its own
        EXPECT_LE(max_abs_diff(selected.dw, copy.dw), 2e-3f);
      }
      EXPECT_EQ(values(selected.db), values(copy.db));
    }
}

TEST(SelectedRowsDropoutLinear, IsBitIdenticalOnOneAndTwoThreads) {
  const Tensor x = random_tensor({5000, 9}, 45), w = random_tensor({32, 9}, 46), b = random_tensor({32}, 47);
  const auto rows = some_rows(20000, 5000, 48);
  std::vector<OpRun> runs;
  for (int threads : {1, 2}) {
    ThreadLimit limit(threads);
    runs.push_back(run_sparse_op(w, b, [&](Tape& t, Var wv, Var bv) {
      return dropout_linear(t, t.constant_ref(x), rows, 0.2f, 5, wv, bv);
    }));
  }
  EXPECT_EQ(values(runs[0].y), values(runs[1].y));
  EXPECT_EQ(values(runs[0].dw), values(runs[1].dw));
  EXPECT_EQ(values(runs[0].db), values(runs[1].db));
}

TEST(SelectedRowsDropoutLinear, GradientMatchesFiniteDifferences) {
  const Tensor x = random_tensor({60, 7}, 49);
  const auto rows = some_rows(150, 60, 50);
  Parameter w{"w", random_tensor({4, 7}, 51), {}}, b{"b", random_tensor({4}, 52), {}};
  EXPECT_TRUE(check_gradients({&w, &b}, [&](Tape& t) {
    return weighted_sum(
        t, dropout_linear(t, t.constant_ref(x), rows, 0.3f, 12, t.parameter(w), t.parameter(b)), 4);
  }));
  EXPECT_TRUE(check_gradients({&w}, [&](Tape& t) {  // no bias, no dropout
    return weighted_sum(t, dropout_linear(t, t.constant_ref(x), rows, 0.f, 13, t.parameter(w)), 5);
  }));
}

TEST(SelectedRowsDropoutLinear, RejectsBadRowsAGradientOnXAndBadShapes) {
  Tape tape;
  const Tensor xt({4, 3});
  const Var x = tape.constant_ref(xt), w = tape.constant(Tensor({2, 3}));
  const auto rows = std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{0, 3, 1});
  const char* op = "dropout_linear (row selection)";
  expect_throw_naming<InvalidArgument>([&] { (void)dropout_linear(tape, x, nullptr, 0.5f, 0, w); },
                                       {op, "rows is null"});
  for (int64_t bad : {-1, 4}) {
    const auto out_of_range = std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{0, 2, bad});
    expect_throw_naming<InvalidArgument>([&] { (void)dropout_linear(tape, x, out_of_range, 0.5f, 0, w); },
                                         {op, "rows[2] is " + std::to_string(bad), "[0, 4)"});
  }
  Parameter px{"x", Tensor({4, 3}), {}};
  expect_throw_naming<InvalidArgument>(
      [&] { (void)dropout_linear(tape, tape.parameter(px), rows, 0.5f, 0, w); }, {op, "requires a gradient"});
  expect_throw_naming<InvalidArgument>([&] { (void)dropout_linear(tape, x, rows, 1.f, 0, w); },
                                       {op, "p is 1"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)dropout_linear(tape, x, rows, 0.5f, 0, tape.constant(Tensor({2, 4})));
      },
      {op, "weight"});
  expect_throw_naming<ShapeError>(
      [&] { (void)dropout_linear(tape, x, rows, 0.5f, 0, w, tape.constant(Tensor({3}))); }, {op, "bias"});
}

// ---- elu_dropout: dropout(elu(x)) without the ELU output ------------------------------------------

TEST(EluDropout, EqualsDropoutOfEluBitForBit) {
  const Tensor x = random_tensor({700, 33}, 14, -3.f, 3.f), b = random_tensor({33}, 15);
  const Tensor w({33, 1});  // unused: run_op wants a weight
  for (const bool release : {false, true}) {
    SCOPED_TRACE(release ? "release_in_backward" : "keep");
    const OpRun unfused = run_op(
        x, w, b,
        [](Tape& t, Var x, Var, Var b) { return dropout(t, elu(t, add_bias(t, x, b), 1.3f), 0.4f, 21); },
        release);
    const OpRun fused = run_op(
        x, w, b, [](Tape& t, Var x, Var, Var b) { return elu_dropout(t, add_bias(t, x, b), 1.3f, 0.4f, 21); },
        release);
    EXPECT_EQ(values(fused.y), values(unfused.y));
    EXPECT_EQ(values(fused.dx), values(unfused.dx));
    EXPECT_EQ(values(fused.db), values(unfused.db));
  }
  Tape eval;
  eval.training = false;
  const Var xv = eval.constant(x);
  EXPECT_EQ(values(eval.value(elu_dropout(eval, xv, 1.3f, 0.4f, 21))),
            values(eval.value(elu(eval, xv, 1.3f))));
}

TEST(EluDropout, GradientMatchesFiniteDifferences) {
  // |x| >= 0.1, away from ELU's kink at 0.
  Tensor v = random_tensor({30, 9}, 16, 0.1f, 2.f);
  const Tensor sign = random_tensor({30, 9}, 17);
  for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] *= sign.data()[i] < 0.f ? -1.f : 1.f;
  Parameter x{"x", v, {}};
  EXPECT_TRUE(check_gradients(
      {&x}, [&](Tape& t) { return weighted_sum(t, elu_dropout(t, t.parameter(x), 1.f, 0.5f, 3), 6); }));
}

TEST(EluDropout, RejectsBadAlphaAndRate) {
  Tape tape;
  const Var x = tape.constant(Tensor({2}));
  expect_throw_naming<InvalidArgument>([&] { (void)elu_dropout(tape, x, 0.f, 0.5f, 0); },
                                       {"elu_dropout", "alpha"});
  expect_throw_naming<InvalidArgument>([&] { (void)elu_dropout(tape, x, 1.f, -1.f, 0); },
                                       {"elu_dropout", "p is -1"});
}

}  // namespace
}  // namespace edgeattn::autograd
