// The tiled (flash) attention's building blocks and each of its SIMD paths against the serial
// reference, on this machine: every vector policy compiled in (portable always, AVX2 with
// __AVX2__ and __FMA__, AVX-512 with __AVX512F__) is instantiated directly, whichever the
// automatic dispatch picks.
//   - the register-blocked product C (+)= A B with every row count 1..MR, row-major and transposed
//     A, panel-packed and row-major B, against a double-precision loop;
//   - the vector exp against std::exp (and exactly 0 at -inf and below the clamp);
//   - tiled_forward and tiled_backward per path against reference_forward / reference_backward on
//     complete, causal, causal with more keys, sliding window, padded batch (rows of length 0),
//     with N not a multiple of any tile, H = 1 and 8, dk != dv, softmax and relu, bias and dropout;
//   - the same on explicit graphs, whose rows run masked within their hulls (uniform at 5% and
//     20%, power law with isolated rows, two bands far apart, bipartite);
//   - bit-identical results for 1, 2 and 3 threads on every path, and each subset of the
//     gradients (the backward's row pass, column pass, and fused pass with dQ partials);
//   - `automatic` gives the widest compiled path's bits.
#include "kernels/parallel/flash_microkernel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/pattern.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/parallel/tiled_attention.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::kernels {
namespace {

using edgeattn::testing::random_tensor;

template <class P>
struct PolicyTest : ::testing::Test {};

using Policies = ::testing::Types<flash::Portable
#if defined(__AVX2__) && defined(__FMA__)
                                  ,
                                  flash::Avx2
#endif
#if defined(__AVX512F__)
                                  ,
                                  flash::Avx512
#endif
                                  >;
struct PolicyName {
  template <class P>
  static std::string GetName(int) {
    return P::kName;
  }
};
TYPED_TEST_SUITE(PolicyTest, Policies, PolicyName);

std::vector<float> random_vector(int64_t n, uint64_t seed) {
  const Tensor t = random_tensor({n}, seed);
  return {t.data(), t.data() + n};
}

TYPED_TEST(PolicyTest, GemmTileMatchesADoubleLoopForEveryLayoutAndRowCount) {
  using P = TypeParam;
  constexpr int64_t NR = flash::kPanel<P>;
  for (bool transposed_a : {false, true})
    for (bool packed_b : {false, true})
      for (bool accumulate : {false, true})
        for (int64_t m : {int64_t{1}, int64_t{P::kRows} - 1, int64_t{P::kRows}, 2 * int64_t{P::kRows} + 3})
          for (int64_t k : {1, 7, 64}) {
            if (m < 1) continue;
            SCOPED_TRACE(std::string(transposed_a ? "A^T " : "A ") + (packed_b ? "panels " : "rows ") +
                         (accumulate ? "+= " : "= ") + "m=" + std::to_string(m) + " k=" + std::to_string(k));
            const int64_t n = 3 * NR, lda = transposed_a ? m + 5 : k + 3, ldb = n + 2 * NR, ldc = n + NR;
            const std::vector<float> a = random_vector((transposed_a ? k : m) * lda, 1);
            const std::vector<float> b = random_vector(k * ldb, 2);
            std::vector<float> c = random_vector(m * ldc, 3);
            const std::vector<float> c0 = c;
            // A(i, kk): row-major [m, lda], or the transpose of a row-major [k, lda].
            const int64_t ars = transposed_a ? 1 : lda, acs = transposed_a ? lda : 1;
            // B: row-major [k, ldb], or its first n columns packed as [n / NR][k][NR].
            std::vector<float> panels(static_cast<size_t>(n * k));
            for (int64_t j = 0; j < n; ++j)
              for (int64_t kk = 0; kk < k; ++kk)
                panels[static_cast<size_t>((j / NR) * k * NR + kk * NR + j % NR)] =
                    b[static_cast<size_t>(kk * ldb + j)];
            if (accumulate)
              flash::gemm_tile<P, true>(m, n, k, a.data(), ars, acs, packed_b ? panels.data() : b.data(),
                                        packed_b ? NR : ldb, packed_b ? k * NR : NR, c.data(), ldc);
            else
              flash::gemm_tile<P, false>(m, n, k, a.data(), ars, acs, packed_b ? panels.data() : b.data(),
                                         packed_b ? NR : ldb, packed_b ? k * NR : NR, c.data(), ldc);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double want = accumulate ? c0[static_cast<size_t>(i * ldc + j)] : 0.0;
                for (int64_t kk = 0; kk < k; ++kk)
                  want += double{a[static_cast<size_t>(i * ars + kk * acs)]} *
                          b[static_cast<size_t>(kk * ldb + j)];
                ASSERT_NEAR(c[static_cast<size_t>(i * ldc + j)], want, 1e-5 * (1.0 + std::fabs(want)))
                    << "C(" << i << ", " << j << ")";
              }
              // Columns past n are not touched.
              for (int64_t j = n; j < ldc; ++j)
                ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], c0[static_cast<size_t>(i * ldc + j)]);
            }
          }
}

TYPED_TEST(PolicyTest, VectorExpMatchesStdExpAndIsZeroFarBelow) {
  using P = TypeParam;
  std::vector<float> xs;
  for (float x = -87.f; x <= 88.f; x += 0.0137f) xs.push_back(x);
  for (float x : {0.f, -0.f, 1e-8f, -1e-8f, 0.5f, -0.5f, 88.f, -87.3f}) xs.push_back(x);
  while (xs.size() % P::kLanes != 0) xs.push_back(0.f);
  float worst = 0.f;
  for (size_t i = 0; i < xs.size(); i += P::kLanes) {
    float y[P::kLanes];
    P::store(y, P::exp(P::load(xs.data() + i)));
    for (int l = 0; l < P::kLanes; ++l) {
      const double want = std::exp(static_cast<double>(xs[i + static_cast<size_t>(l)]));
      worst = std::max(worst, static_cast<float>(std::fabs(y[l] - want) / want));
    }
  }
  EXPECT_LE(worst, 3e-7f);
  std::vector<float> low(P::kLanes, -INFINITY);
  low[1] = -88.f, low[2] = -1e30f, low[3] = -87.34f;
  float y[P::kLanes];
  P::store(y, P::exp(P::load(low.data())));
  for (int l = 0; l < P::kLanes; ++l) EXPECT_EQ(y[l], 0.f) << "lane " << l;
}

TYPED_TEST(PolicyTest, RowReductionsUseEveryLane) {
  using P = TypeParam;
  const int64_t n = 4 * flash::kPanel<P>;
  std::vector<float> row = random_vector(n, 5);
  row[static_cast<size_t>(n - 3)] = 9.f;
  EXPECT_EQ(flash::row_max<P>(row.data(), n, -1e30f), 9.f);
  EXPECT_EQ(flash::row_max<P>(row.data(), n, 12.f), 12.f);
  double want = 0;
  for (float x : row) want += std::exp(static_cast<double>(x) - 9.0);
  std::vector<float> e = row;
  EXPECT_NEAR(flash::exp_shifted_row<P>(e.data(), n, 9.f), want, 1e-5 * want);
  for (int64_t x = 0; x < n; ++x)
    EXPECT_NEAR(e[static_cast<size_t>(x)], std::exp(row[static_cast<size_t>(x)] - 9.0), 1e-6);
}

// Row i: every other source of [i, i + 40) and every third of [ns - 100, ns) (from i % 3): two
// bands, so a strip's hull spans column blocks where none of its rows has an edge.
Graph two_band_graph(int64_t nd, int64_t ns) {
  std::vector<int64_t> row_ptr{0};
  std::vector<int32_t> cols;
  for (int64_t i = 0; i < nd; ++i) {
    for (int64_t j = i; j < std::min(i + 40, ns - 100); j += 2) cols.push_back(static_cast<int32_t>(j));
    for (int64_t j = ns - 100 + i % 3; j < ns; j += 3) cols.push_back(static_cast<int32_t>(j));
    row_ptr.push_back(static_cast<int64_t>(cols.size()));
  }
  return Graph::from_csr(nd, ns, std::move(row_ptr), std::move(cols));
}

// One tiled call per SIMD path against the reference.
struct Case {
  std::string name;
  Pattern pattern;
  int64_t heads, dk, dv;
};

std::vector<Case> cases() {
  return {
      {"complete H1", CompletePattern(150, 301), 1, 64, 64},
      {"complete H8 dk!=dv", CompletePattern(77, 130), 8, 24, 40},
      {"causal H1", CausalPattern(261), 1, 32, 32},
      {"causal H8", CausalPattern(200), 8, 16, 12},
      {"causal more keys", CausalPattern(100, 401), 2, 20, 36},
      {"window", WindowPattern::sliding(333, 45), 2, 64, 8},
      {"window causal", WindowPattern::sliding(290, 70, /*causal=*/true), 1, 17, 64},
      {"padded batch, empty rows", BlockDiagonalPattern::padded_batch(100, {100, 0, 70, 1}), 3, 8, 16},
      // Many column tiles: the backward's dQ partials come in groups that each reach only some rows.
      {"long window, many groups", WindowPattern::sliding(2600, 150), 1, 16, 8},
      // Explicit graphs: rows masked within their hulls (isolated rows, bipartite, hub rows).
      {"graph 20% H1", testing::uniform_graph(150, 301, 9000, 21), 1, 64, 64},
      {"graph 5% bipartite H8 dk!=dv", testing::uniform_graph(130, 700, 4550, 22), 8, 24, 40},
      {"graph power law", testing::power_law_graph(400, 6000, 23), 2, 32, 16},
      {"graph two bands, many groups", two_band_graph(600, 1300), 1, 16, 8},
  };
}

struct Operands {
  Tensor q, k, v, bias, dout, out, lse, dq, dk, dv, dbias;
};

Operands make_run(const Case& c, bool bias, uint64_t seed) {
  const int64_t nd = num_dst(c.pattern), ns = num_src(c.pattern), h = c.heads;
  Operands r;
  r.q = random_tensor({nd, h, c.dk}, seed + 1, -1.5f, 1.5f);
  r.k = random_tensor({ns, h, c.dk}, seed + 2, -1.5f, 1.5f);
  r.v = random_tensor({ns, h, c.dv}, seed + 3);
  if (bias) r.bias = random_tensor({num_edges(c.pattern), h}, seed + 4, -0.5f, 0.5f);
  r.dout = random_tensor({nd, h, c.dv}, seed + 5);
  return r;
}

KernelArgs args_for(const Case& c, const Operands& r, Normalization norm, float dropout) {
  KernelArgs a;
  a.heads = c.heads;
  a.dv = c.dv;
  a.score = {.kind = EdgeScore::dot,
             .scale = 1.f / std::sqrt(static_cast<float>(c.dk)),
             .dk = c.dk,
             .q = r.q.data(),
             .k = r.k.data()};
  a.v = r.v.data();
  a.bias = r.bias.absent() ? nullptr : r.bias.data();
  a.norm = norm;
  a.dropout = dropout;
  a.seed = 17;
  return a;
}

// Forward then backward on `path` (or the reference when `reference`); gradients into buffers
// full of NaN on the tiled paths (they write every element), zeros on the reference.
// `want`: which of dQ, dK, dV (and d bias, with a bias) to ask for; the others are null.
struct Wanted {
  bool dq = true, dk = true, dv = true;
};

void forward_backward(const Case& c, Operands& r, Normalization norm, float dropout, bool reference,
                      SimdPath path, bool with_out = true, Wanted want = {}) {
  const int64_t nd = num_dst(c.pattern), ns = num_src(c.pattern), h = c.heads;
  const float fill = reference ? 0.f : std::nanf("");
  r.out = Tensor({nd, h, c.dv}, fill);
  r.lse = Tensor({nd, h}, fill);
  r.dq = Tensor({nd, h, c.dk}, fill);
  r.dk = Tensor({ns, h, c.dk}, fill);
  r.dv = Tensor({ns, h, c.dv}, fill);
  if (!r.bias.absent()) r.dbias = Tensor(r.bias.shape(), fill);
  const KernelArgs a = args_for(c, r, norm, dropout);
  const ForwardBuffers fb{.out = r.out.data(), .lse = r.lse.data()};
  const BackwardInputs bi{.dout = r.dout.data(),
                          .lse = norm == Normalization::softmax ? r.lse.data() : nullptr,
                          .out = with_out ? r.out.data() : nullptr};
  const BackwardBuffers bb{.dq = want.dq ? r.dq.data() : nullptr,
                           .dk = want.dk ? r.dk.data() : nullptr,
                           .dv = want.dv ? r.dv.data() : nullptr,
                           .dbias = r.bias.absent() ? nullptr : r.dbias.data()};
  if (reference) {
    const Graph g = materialize(c.pattern);
    reference_forward(g, a, fb);
    reference_backward(g, a, bi, bb);
  } else {
    tiled_forward(c.pattern, a, fb, path);
    tiled_backward(c.pattern, a, bi, bb, path);
  }
}

float scaled_error(const Tensor& got, const Tensor& want) {
  float scale = 0.f, err = 0.f;
  for (int64_t x = 0; x < want.numel(); ++x) {
    scale = std::max(scale, std::fabs(want.data()[x]));
    const float d = std::fabs(got.data()[x] - want.data()[x]);
    err = std::isnan(d) ? INFINITY : std::max(err, d);
  }
  return err / (1.f + scale);
}

void expect_close(const char* what, const Tensor& got, const Tensor& want, float tol = 2e-4f) {
  if (want.absent()) return;
  EXPECT_LE(scaled_error(got, want), tol) << what;
}

class TiledPath : public ::testing::TestWithParam<SimdPath> {};

std::string path_name(const ::testing::TestParamInfo<SimdPath>& info) {
  switch (info.param) {
    case SimdPath::automatic:
      return "automatic";
    case SimdPath::portable:
      return "portable";
    case SimdPath::avx2:
      return "avx2";
    case SimdPath::avx512:
      return "avx512";
  }
  return "unknown";
}

TEST_P(TiledPath, ForwardAndBackwardMatchTheReference) {
  ASSERT_TRUE(simd_path_available(GetParam()));
  for (const Case& c : cases())
    for (Normalization norm : {Normalization::softmax, Normalization::relu})
      for (bool extras : {false, true}) {
        SCOPED_TRACE(c.name + (norm == Normalization::relu ? " relu" : " softmax") +
                     (extras ? " bias+dropout" : ""));
        const float dropout = extras ? 0.3f : 0.f;
        Operands want = make_run(c, extras, 7), got = make_run(c, extras, 7);
        forward_backward(c, want, norm, dropout, true, GetParam());
        forward_backward(c, got, norm, dropout, false, GetParam());
        expect_close("out", got.out, want.out);
        if (norm == Normalization::softmax)
          for (int64_t x = 0; x < want.lse.numel(); ++x) {
            const float w = want.lse.data()[x], g = got.lse.data()[x];
            if (std::isinf(w))
              EXPECT_EQ(g, w) << "lse[" << x << "]";
            else
              EXPECT_NEAR(g, w, 1e-4f * (1.f + std::fabs(w))) << "lse[" << x << "]";
          }
        expect_close("dq", got.dq, want.dq);
        expect_close("dk", got.dk, want.dk);
        expect_close("dv", got.dv, want.dv);
        expect_close("dbias", got.dbias, want.dbias);
      }
}

TEST_P(TiledPath, BackwardWithoutTheForwardOutputMatchesTheReference) {
  // Without O (heads averaged by the caller) D_i = sum_j P_ij dP_ij takes an extra sweep.
  for (const Case& c : {cases()[2], cases()[7]})
    for (bool extras : {false, true}) {
      SCOPED_TRACE(c.name + (extras ? " bias+dropout" : ""));
      Operands want = make_run(c, extras, 3), got = make_run(c, extras, 3);
      forward_backward(c, want, Normalization::softmax, extras ? 0.2f : 0.f, true, GetParam(), false);
      forward_backward(c, got, Normalization::softmax, extras ? 0.2f : 0.f, false, GetParam(), false);
      expect_close("dq", got.dq, want.dq);
      expect_close("dk", got.dk, want.dk);
      expect_close("dv", got.dv, want.dv);
      expect_close("dbias", got.dbias, want.dbias);
    }
}

TEST_P(TiledPath, ResultsAreBitIdenticalForOneTwoAndThreeThreads) {
  // The causal case's dQ is summed from several groups' partials (window: groups that reach
  // different rows, with a bias and dropout); their order must not depend on the threads.
  for (const Case& c : {Case{"causal H2", CausalPattern(530), 2, 64, 64},
                        Case{"window H1", WindowPattern::sliding(1700, 90), 1, 32, 16},
                        Case{"graph H1", testing::uniform_graph(530, 900, 530 * 90, 31), 1, 64, 64}}) {
    SCOPED_TRACE(c.name);
    const bool extras = c.heads == 1;
    std::vector<Operands> runs;
    for (int threads : {1, 2, 3}) {
      ThreadLimit limit(threads);
      runs.push_back(make_run(c, extras, 9));
      forward_backward(c, runs.back(), Normalization::softmax, extras ? 0.25f : 0.f, false, GetParam());
    }
    for (size_t t = 1; t < runs.size(); ++t)
      for (auto field : {&Operands::out, &Operands::lse, &Operands::dq, &Operands::dk, &Operands::dv})
        EXPECT_EQ(max_abs_diff(runs[0].*field, runs[t].*field), 0.f) << "run " << t;
    if (extras) {
      EXPECT_EQ(max_abs_diff(runs[0].dbias, runs[2].dbias), 0.f);
    }
  }
}

TEST_P(TiledPath, EachSubsetOfGradientsMatchesTheReference) {
  // dQ alone takes the row pass; dK or dV alone the column pass without dQ partials; all three
  // the fused column pass, or the row pass for dQ when the partials' budget leaves too few groups
  // (forced here with a small budget); a small budget for the packed operands takes the heads one
  // or two at a time.
  const Case c{"causal more keys", CausalPattern(700, 1100), 3, 24, 40};
  Operands want = make_run(c, true, 5);
  forward_backward(c, want, Normalization::softmax, 0.1f, true, GetParam());
  struct Subset {
    const char* name;
    Wanted grads;
    int64_t partial_budget, packed_budget;
  };
  // The packed operands of one head (K^T and V^T panels, K, Q and dO rows) are 162k-174k floats
  // on every path: a budget of 400k takes two heads at a time.
  for (const Subset& subset :
       {Subset{"dq", {true, false, false}, 0, 0}, Subset{"dk", {false, true, false}, 0, 0},
        Subset{"dv", {false, false, true}, 0, 0}, Subset{"dq dv", {true, false, true}, 0, 0},
        Subset{"all, fused", {}, 0, 0}, Subset{"all, dq by rows", {}, 1000, 0},
        Subset{"all, one head at a time", {}, 0, 1}, Subset{"all, two heads at a time", {}, 0, 400000},
        Subset{"dq, one head at a time", {true, false, false}, 0, 1}}) {
    SCOPED_TRACE(subset.name);
    set_tiled_budgets(subset.partial_budget, subset.packed_budget);
    Operands got = make_run(c, true, 5);
    forward_backward(c, got, Normalization::softmax, 0.1f, false, GetParam(), true, subset.grads);
    set_tiled_budgets(0, 0);
    if (subset.grads.dq) expect_close("dq", got.dq, want.dq);
    if (subset.grads.dk) expect_close("dk", got.dk, want.dk);
    if (subset.grads.dv) expect_close("dv", got.dv, want.dv);
    expect_close("dbias", got.dbias, want.dbias);
  }
}

TEST_P(TiledPath, ForwardInSlicesOfHeadsIsBitIdenticalToAllHeadsAtOnce) {
  // A small budget for the packed K panels and V rows takes the heads one (budget 1) or two at a
  // time; every output row of a head is one task's, so nothing may change. Three heads, so the
  // two-at-a-time run ends on a slice of one; dv = 20 is no multiple of any panel width.
  const Case c{"window H3", WindowPattern::sliding(900, 150), 3, 32, 20};
  // One head's K panels and V rows: 50k-59k floats on every path, so 130k takes two heads.
  for (int64_t budget : {int64_t{1}, int64_t{130000}})
    for (Normalization norm : {Normalization::softmax, Normalization::relu})
      for (bool extras : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "budget " << budget << (norm == Normalization::relu ? " relu" : "")
                     << (extras ? " bias+dropout" : ""));
        Operands all = make_run(c, extras, 11), sliced = make_run(c, extras, 11);
        forward_backward(c, all, norm, extras ? 0.3f : 0.f, false, GetParam());
        set_tiled_budgets(0, budget);
        forward_backward(c, sliced, norm, extras ? 0.3f : 0.f, false, GetParam());
        set_tiled_budgets(0, 0);
        EXPECT_EQ(max_abs_diff(all.out, sliced.out), 0.f);
        if (norm == Normalization::softmax) {
          EXPECT_EQ(max_abs_diff(all.lse, sliced.lse), 0.f);
        }
        // The backward under the same budget takes its own slices, and its dQ partials' groups
        // depend on the slice, so its sums may round differently: close, not identical.
        expect_close("dq", sliced.dq, all.dq);
        expect_close("dk", sliced.dk, all.dk);
        expect_close("dv", sliced.dv, all.dv);
      }
}

TEST(TiledDispatch, GraphsRunTiledWhenTheirRowsAreLongAndTheirHullsFullEnough) {
  KernelArgs a;
  a.heads = 1;
  a.dv = 16;
  a.score = {.kind = EdgeScore::dot, .scale = 0.25f, .dk = 16};
  const Graph g = testing::uniform_graph(200, 300, 200 * 100, 3);
  ASSERT_GE(static_cast<double>(g.num_edges()),
            masked_tiled_min_fill(1) * static_cast<double>(g.degree_stats().row_extent));
  EXPECT_TRUE(tiled_applies(g, a, false));
  EXPECT_FALSE(tiled_applies(g, a, /*want_alpha=*/true));
  // The same rows with one duplicate edge: the mask would count it once.
  std::vector<int64_t> row_ptr(g.row_ptr().begin(), g.row_ptr().end());
  std::vector<int32_t> cols(g.col_idx().begin(), g.col_idx().end());
  cols.insert(cols.begin() + 1, cols[0]);
  for (size_t i = 1; i < row_ptr.size(); ++i) ++row_ptr[i];
  EXPECT_FALSE(tiled_applies(Graph::from_csr(200, 300, row_ptr, cols, CsrCheck::sort), a, false));
  // Rows shorter than kTiledMinMeanRow on average.
  EXPECT_FALSE(tiled_applies(testing::uniform_graph(200, 300, 200 * 30, 3), a, false));
  // Long rows whose hulls are mostly empty: 100 sources spread over 100,000.
  EXPECT_FALSE(tiled_applies(testing::uniform_graph(100, 100000, 100 * 100, 3), a, false));
}

// The named paths only: `automatic` is one of them (the widest), checked bit for bit against it
// below rather than run through every case again (under ASan its runs took ~140 s of CI).
std::vector<SimdPath> compiled_paths() {
  std::vector<SimdPath> paths;
  for (SimdPath p : {SimdPath::portable, SimdPath::avx2, SimdPath::avx512})
    if (simd_path_available(p)) paths.push_back(p);
  return paths;
}

INSTANTIATE_TEST_SUITE_P(CompiledPaths, TiledPath, ::testing::ValuesIn(compiled_paths()), path_name);

TEST(TiledPath, UnavailablePathsAreRejectedAndAutomaticIsTheWidest) {
#if defined(__AVX512F__)
  EXPECT_STREQ(automatic_simd_path_name(), "avx512");
#elif defined(__AVX2__) && defined(__FMA__)
  EXPECT_STREQ(automatic_simd_path_name(), "avx2");
  EXPECT_FALSE(simd_path_available(SimdPath::avx512));
#else
  EXPECT_STREQ(automatic_simd_path_name(), "portable");
#endif
  for (SimdPath p : {SimdPath::avx2, SimdPath::avx512})
    if (!simd_path_available(p)) {
      const Case c{"complete", CompletePattern(70, 70), 1, 8, 8};
      Operands r = make_run(c, false, 1);
      EXPECT_THROW(forward_backward(c, r, Normalization::softmax, 0.f, false, p), InvalidArgument);
    }
}

TEST(TiledPath, AutomaticGivesTheWidestPathsBits) {
  const SimdPath widest = compiled_paths().back();  // listed narrowest first
  // A causal case (dQ from partials) and a masked graph, with bias and dropout.
  for (const Case& c : {cases()[4], cases()[11]}) {
    SCOPED_TRACE(c.name);
    Operands automatic = make_run(c, true, 13), named = make_run(c, true, 13);
    forward_backward(c, automatic, Normalization::softmax, 0.2f, false, SimdPath::automatic);
    forward_backward(c, named, Normalization::softmax, 0.2f, false, widest);
    // Bits, not differences: an isolated row's lse is -inf on both.
    for (auto field :
         {&Operands::out, &Operands::lse, &Operands::dq, &Operands::dk, &Operands::dv, &Operands::dbias}) {
      const Tensor &a = automatic.*field, &b = named.*field;
      ASSERT_EQ(a.numel(), b.numel());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)), 0);
    }
  }
}

}  // namespace
}  // namespace edgeattn::kernels
