// The additive score taken from the value (AttentionInputs::att_dst/att_src): GAT's node terms
// sd_i = <a_dst, v_i>, ss_j = <a_src, v_j> computed by the dispatch and their gradients folded into
// dv and d a_* inside the backward. Checked against the composition it replaces (the two score
// vectors formed by hand, attention on the reference path with score_dst/score_src, and the
// gradients of the score vectors carried on to v and a_* by hand, in double), on both backends,
// square and bipartite graphs, structured patterns, GAT's specialised shapes and generic ones,
// softmax and relu, dropout, mean heads, edge records on and off; bit-identical for one and two
// threads; in place over the value; and every misuse named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/head_scores.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::expect_throw_naming;
using testing::random_tensor;

// Max |a - b| / (1 + max|b|).
float scaled_error(const Tensor& a, const Tensor& b) {
  float scale = 0.f;
  for (float v : b.span()) scale = std::max(scale, std::fabs(v));
  return max_abs_diff(a, b) / (1.f + scale);
}

// Bit for bit, -inf (an empty row's log-sum-exp) included.
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.numel())) == 0;
}

struct Operands {
  Tensor value, att_dst, att_src, grad_out;
};

Operands make_operands(const Pattern& p, const AttentionConfig& c, int64_t heads, int64_t dv, uint64_t seed) {
  Operands o;
  o.value = random_tensor({num_src(p), heads, dv}, seed);
  o.att_dst = random_tensor({heads, dv}, seed + 1, -1.5f, 1.5f);
  o.att_src = random_tensor({heads, dv}, seed + 2, -1.5f, 1.5f);
  o.grad_out = c.combine == HeadCombine::concat ? random_tensor({num_dst(p), heads, dv}, seed + 3)
                                                : random_tensor({num_dst(p), dv}, seed + 3);
  return o;
}

AttentionInputs from_value(const Operands& o) {
  return {.value = o.value, .att_dst = o.att_dst, .att_src = o.att_src};
}

// <a[h], v[row, h]> in double, per head: [rows, H].
Tensor node_terms(const Tensor& v, const Tensor& a, int64_t rows) {
  const int64_t heads = v.dim(1), dv = v.dim(2);
  Tensor s({rows, heads});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      double acc = 0;
      for (int64_t d = 0; d < dv; ++d) acc += double(v(i, h, d)) * double(a(h, d));
      s(i, h) = static_cast<float>(acc);
    }
  return s;
}

struct Expected {
  Tensor out, value, att_dst, att_src;
};

// d a_dst = sum_{i < nd} dsd_i v_i and d a_src = sum_j dss_j v_j per head, in double, from the
// score gradients g.score_dst [nd, H] and g.score_src [ns, H]; into att_dst, att_src [H, Dv].
void fold_in_double(const AttentionGrads& g, const Tensor& value, int64_t nd, Tensor& att_dst,
                    Tensor& att_src) {
  const int64_t ns = value.dim(0), heads = value.dim(1), dv = value.dim(2);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t d = 0; d < dv; ++d) {
      double src = 0, dst = 0;
      for (int64_t j = 0; j < ns; ++j) {
        src += double(g.score_src(j, h)) * double(value(j, h, d));
        if (j < nd) dst += double(g.score_dst(j, h)) * double(value(j, h, d));
      }
      att_src(h, d) = static_cast<float>(src);
      att_dst(h, d) = static_cast<float>(dst);
    }
}

// The composition: explicit score vectors, the reference path, and the chain rule by hand.
Expected composition(const Pattern& p, AttentionConfig c, const Operands& o) {
  const int64_t nd = num_dst(p), ns = num_src(p), heads = o.value.dim(1), dv = o.value.dim(2);
  const Tensor sd = node_terms(o.value, o.att_dst, nd), ss = node_terms(o.value, o.att_src, ns);
  c.path = AttentionPath::reference;
  const AttentionInputs in{.value = o.value, .score_dst = sd, .score_src = ss};
  AttentionResult r = attention_forward(p, in, c);
  const AttentionGrads g = attention_backward(p, in, c, r, o.grad_out);
  Expected e{std::move(r.out), Tensor({ns, heads, dv}), Tensor({heads, dv}), Tensor({heads, dv})};
  for (int64_t j = 0; j < ns; ++j)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t d = 0; d < dv; ++d) {
        const double gs = g.score_src(j, h), gd = j < nd ? g.score_dst(j, h) : 0.0;
        e.value(j, h, d) = static_cast<float>(double(g.value(j, h, d)) + gs * double(o.att_src(h, d)) +
                                              gd * double(o.att_dst(h, d)));
      }
  fold_in_double(g, o.value, nd, e.att_dst, e.att_src);
  return e;
}

void check(const Pattern& p, const AttentionConfig& c, int64_t heads, int64_t dv, float tol = 2e-4f) {
  const Operands o = make_operands(p, c, heads, dv, 21);
  const Expected want = composition(p, c, o);
  const AttentionResult r = attention_forward(p, from_value(o), c);
  ASSERT_EQ(r.node_scores.shape(), Shape({num_dst(p) + num_src(p), heads}));
  EXPECT_LE(scaled_error(r.out, want.out), tol) << "out";
  const AttentionGrads g = attention_backward(p, from_value(o), c, r, o.grad_out);
  EXPECT_TRUE(g.score_dst.absent() && g.score_src.absent());
  EXPECT_LE(scaled_error(g.value, want.value), tol) << "d value";
  EXPECT_LE(scaled_error(g.att_dst, want.att_dst), tol) << "d att_dst";
  EXPECT_LE(scaled_error(g.att_src, want.att_src), tol) << "d att_src";
  EXPECT_GT(max_abs_diff(g.att_dst, Tensor(g.att_dst.shape())), 0.f);  // not trivially zero
}

struct RecordsMode {
  ~RecordsMode() { kernels::set_edge_records(kernels::EdgeRecords::automatic); }
};

TEST(ValueHeadScores, EqualTheCompositionOnEveryBackendAndShape) {
  RecordsMode restore;
  const Graph square = testing::power_law_graph(150, 1200, 2);            // isolated rows, self-loops
  const Graph bipartite = testing::uniform_graph(40, 130, 400, 3);        // a sampled block's shape
  const Graph no_edges_for_some = testing::uniform_graph(60, 60, 45, 5);  // empty rows and columns
  for (const Graph* g : {&square, &bipartite, &no_edges_for_some})
    for (const auto& [heads, dv] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {1, 7}, {3, 5}})
      for (const auto& [norm, dropout, combine] : std::vector<std::tuple<Normalization, float, HeadCombine>>{
               {Normalization::softmax, 0.f, HeadCombine::concat},
               {Normalization::softmax, 0.35f, HeadCombine::concat},
               {Normalization::softmax, 0.f, HeadCombine::mean},
               {Normalization::relu, 0.2f, HeadCombine::concat}})
        for (const AttentionPath path : {AttentionPath::sparse, AttentionPath::reference})
          for (const auto mode : {kernels::EdgeRecords::always, kernels::EdgeRecords::never})
            for (const bool save : {false, true}) {  // save: the forward's destination terms, 8 x 8
              if (path == AttentionPath::reference && mode == kernels::EdgeRecords::never) continue;
              if (save && (path == AttentionPath::reference || mode == kernels::EdgeRecords::never)) continue;
              SCOPED_TRACE(g->describe() + " heads " + std::to_string(heads) + " dv " + std::to_string(dv) +
                           " " + to_string(norm) + " dropout " + std::to_string(dropout) +
                           (combine == HeadCombine::mean ? " mean " : " ") + to_string(path) +
                           (mode == kernels::EdgeRecords::always ? " records" : " recomputed") +
                           (save ? " destination terms" : ""));
              kernels::set_edge_records(mode);
              check(*g,
                    {.score = Score::additive,
                     .normalization = norm,
                     .combine = combine,
                     .dropout = dropout,
                     .seed = 4,
                     .save_for_backward = save,
                     .path = path},
                    heads, dv);
            }
}

TEST(ValueHeadScores, EqualTheCompositionOnStructuredPatterns) {
  for (const Pattern& p : {Pattern(CompletePattern(30, 30)), Pattern(CompletePattern(20, 30)),
                           Pattern(CausalPattern(40)), Pattern(WindowPattern::sliding(50, 3, true, 2)),
                           Pattern(BlockDiagonalPattern::padded_batch(9, {9, 0, 4, 7}))}) {
    SCOPED_TRACE(describe(p));
    check(p, {.score = Score::additive, .dropout = 0.2f, .seed = 8, .path = AttentionPath::sparse}, 2, 4);
  }
}

// The fold's sums over a hub: a destination reading 2^18 sources (its row's D_i and d score_dst,
// and d a_src over all its sources) and two sources each read by 2^18 destinations (their dv with
// the fold's dss_j a_src + dsd_j a_dst, and d a_dst over all destinations): the block sums of
// block_sums.hpp and the fold's double chunk partials. GAT's 8 x 8 kernel, one head and the
// generic one; softmax, ReLU and dropout; edge records and recomputing.
// d a_* is checked twice. Against the kernel's own per-node score gradients (the explicit-score
// path, same config) folded in double, to 1e-6 of its scale: that isolates the fold's sum. Against
// the composition, to 5e-6: each node's d score is rounded to float on both sides, differently
// (the kernel's D_i = <dO_i, O_i> reads the rounded output), and 2^18 such differences add up
// like a random walk: 2.2e-6 of the scale with dropout, measured, against 3e-7 for the fold itself.
TEST(ValueHeadScores, HubRowsAndColumnsOfAQuarterMillionEdgesFoldTheirGradientsWithoutDrift) {
  RecordsMode restore;
#if defined(__SANITIZE_ADDRESS__)
  const int64_t n = 1 << 14;  // the sanitizer build checks memory, the release build the sums
#else
  const int64_t n = 1 << 18;
#endif
  const Graph row_hub = testing::hub_row_graph(n);
  const Graph column_hubs = testing::hub_columns_graph(n, /*square=*/true);
  for (const Graph* g : {&row_hub, &column_hubs})
    for (const auto& [heads, dv] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {1, 7}, {3, 5}})
      for (const auto& [norm, dropout] : std::vector<std::pair<Normalization, float>>{
               {Normalization::softmax, 0.f}, {Normalization::relu, 0.f}, {Normalization::softmax, 0.3f}}) {
        SCOPED_TRACE(g->describe() + " heads " + std::to_string(heads) + " dv " + std::to_string(dv) + " " +
                     to_string(norm) + " dropout " + std::to_string(dropout));
        const AttentionConfig c{.score = Score::additive,
                                .normalization = norm,
                                .dropout = dropout,
                                .seed = 12,
                                .path = AttentionPath::sparse};
        const Operands o = make_operands(*g, c, heads, dv, 21);
        const Expected want = composition(*g, c, o);
        // The kernel's own per-node score gradients (bit-identical with and without records).
        const int64_t nd = num_dst(*g), ns = num_src(*g);
        const Tensor sd = node_terms(o.value, o.att_dst, nd), ss = node_terms(o.value, o.att_src, ns);
        const AttentionInputs explicit_scores{.value = o.value, .score_dst = sd, .score_src = ss};
        const AttentionGrads own =
            attention_backward(*g, explicit_scores, c, attention_forward(*g, explicit_scores, c), o.grad_out);
        Tensor own_dst({heads, dv}), own_src({heads, dv});
        fold_in_double(own, o.value, nd, own_dst, own_src);
        for (const auto mode : {kernels::EdgeRecords::always, kernels::EdgeRecords::never}) {
          SCOPED_TRACE(mode == kernels::EdgeRecords::always ? "records" : "recomputed");
          kernels::set_edge_records(mode);
          const AttentionResult r = attention_forward(*g, from_value(o), c);
          const AttentionGrads got = attention_backward(*g, from_value(o), c, r, o.grad_out);
          EXPECT_LE(scaled_error(r.out, want.out), 2e-6f) << "out";
          EXPECT_LE(scaled_error(got.value, want.value), 2e-6f) << "d value";
          EXPECT_LE(scaled_error(got.att_dst, want.att_dst), 5e-6f) << "d att_dst";
          EXPECT_LE(scaled_error(got.att_src, want.att_src), 5e-6f) << "d att_src";
          EXPECT_LE(scaled_error(got.att_dst, own_dst), 1e-6f) << "d att_dst, the kernel's own terms";
          EXPECT_LE(scaled_error(got.att_src, own_src), 1e-6f) << "d att_src, the kernel's own terms";
        }
      }
}

// Large enough for several column chunks, so the per-chunk partials of d a_* are summed.
TEST(ValueHeadScores, AreBitIdenticalForOneAndTwoThreadsAndWithOrWithoutRecords) {
  RecordsMode restore;
  const Graph g = testing::uniform_graph(3000, 9000, 60000, 6);
  const AttentionConfig c{
      .score = Score::additive, .dropout = 0.2f, .seed = 3, .path = AttentionPath::sparse};
  const Operands o = make_operands(g, c, 8, 8, 5);
  auto run = [&](int threads, kernels::EdgeRecords mode) {
    ThreadLimit limit(threads);
    kernels::set_edge_records(mode);
    AttentionResult r = attention_forward(g, from_value(o), c);
    AttentionGrads d = attention_backward(g, from_value(o), c, r, o.grad_out);
    return std::make_pair(std::move(r), std::move(d));
  };
  const auto [r1, g1] = run(1, kernels::EdgeRecords::always);
  for (const auto& [threads, mode] : std::vector<std::pair<int, kernels::EdgeRecords>>{
           {2, kernels::EdgeRecords::always}, {2, kernels::EdgeRecords::never}}) {
    const auto [r2, g2] = run(threads, mode);
    EXPECT_EQ(max_abs_diff(r1.out, r2.out), 0.f);
    EXPECT_EQ(max_abs_diff(r1.node_scores, r2.node_scores), 0.f);
    EXPECT_EQ(max_abs_diff(g1.value, g2.value), 0.f);
    EXPECT_EQ(max_abs_diff(g1.att_dst, g2.att_dst), 0.f);
    EXPECT_EQ(max_abs_diff(g1.att_src, g2.att_src), 0.f);
  }
}

// The fold reads v_j in the task that then writes dv_j: the gradient may overwrite the value.
TEST(ValueHeadScores, ValueGradientOverTheValueEqualsTheReturnedOne) {
  const Graph g = testing::uniform_graph(200, 700, 3000, 2);
  const AttentionConfig c{.score = Score::additive, .dropout = 0.1f, .seed = 6};
  const Operands o = make_operands(g, c, 8, 8, 9);
  const AttentionResult r = attention_forward(g, from_value(o), c);
  const AttentionGrads returned = attention_backward(g, from_value(o), c, r, o.grad_out);
  Operands over = o;  // a deep copy: its value is overwritten
  const AttentionGrads in_place = attention_backward(g, from_value(over), c, r, o.grad_out, View(over.value));
  EXPECT_TRUE(in_place.value.absent());
  EXPECT_EQ(max_abs_diff(over.value, returned.value), 0.f);
  EXPECT_EQ(max_abs_diff(in_place.att_src, returned.att_src), 0.f);
  EXPECT_EQ(max_abs_diff(in_place.att_dst, returned.att_dst), 0.f);
}

// One head: the per-edge kernels compute an edge's source term from the value row they gather
// (ScoreArgs::ss_att) instead of gathering ss. The same bits as with the gathered terms, on graphs
// whose gathered rows exceed kGatherCachedBytes (so the prefetching loops run), square and
// bipartite, softmax and relu, with dropout, a per-edge term, edge records on and off.
TEST(ValueHeadScores, OneHeadKernelsTakeTheSourceTermFromTheValueRowWithTheGatheredBits) {
  RecordsMode restore;
  const Graph square = testing::power_law_graph(12000, 90000, 4);
  const Graph block = testing::uniform_graph(3000, 12000, 40000, 5);
  for (const Graph* g : {&square, &block})
    for (const int64_t dv : {8, 5, 16})
      for (const Normalization norm : {Normalization::softmax, Normalization::relu})
        for (const bool edge_term : {false, true})
          for (const auto mode : {kernels::EdgeRecords::always, kernels::EdgeRecords::never}) {
            SCOPED_TRACE(g->describe() + " dv " + std::to_string(dv) + " " + to_string(norm) +
                         (edge_term ? " edge term" : "") +
                         (mode == kernels::EdgeRecords::always ? " records" : " recomputed"));
            kernels::set_edge_records(mode);
            const int64_t nd = g->num_dst(), ns = g->num_src(), ne = g->num_edges();
            const Tensor v = random_tensor({ns, 1, dv}, 3);
            const Tensor a_src = random_tensor({1, dv}, 4, -1.5f, 1.5f);
            const Tensor sd = random_tensor({nd, 1}, 5);
            const Tensor se = random_tensor({ne, 1}, 6, -0.5f, 0.5f);
            const Tensor dout = random_tensor({nd, 1, dv}, 7);
            Tensor ss({ns, 1});
            kernels::head_scores_rows(ns, 1, dv, v.data(), a_src.data(), ss.data());
            kernels::KernelArgs a;
            a.heads = 1;
            a.dv = dv;
            a.v = v.data();
            a.norm = norm;
            a.dropout = 0.25f;
            a.seed = 9;
            a.score.kind = kernels::EdgeScore::additive;
            a.score.sd = sd.data();
            a.score.ss = ss.data();
            a.score.se = edge_term ? se.data() : nullptr;
            struct Run {
              Tensor out, lse, dsd, dss, dv, dse;
            };
            auto run = [&](const float* ss_att) {
              kernels::KernelArgs args = a;
              args.score.ss_att = ss_att;
              Run r{Tensor({nd, 1, dv}), Tensor({nd, 1}),     Tensor({nd, 1}),
                    Tensor({ns, 1}),     Tensor({ns, 1, dv}), Tensor({ne, 1})};
              kernels::parallel_forward(*g, args, {.out = r.out.data(), .lse = r.lse.data()});
              kernels::parallel_backward(*g, args,
                                         {.dout = dout.data(), .lse = r.lse.data(), .out = r.out.data()},
                                         {.dv = r.dv.data(),
                                          .dsd = r.dsd.data(),
                                          .dss = r.dss.data(),
                                          .dse = edge_term ? r.dse.data() : nullptr});
              return r;
            };
            const Run gathered = run(nullptr), from_value = run(a_src.data());
            EXPECT_GT(max_abs_diff(gathered.dss, Tensor({ns, 1})), 0.f);  // not trivially zero
            // The kernels do read the terms from the value rows: another a_src gives other scores.
            const Tensor other = random_tensor({1, dv}, 8, -1.5f, 1.5f);
            EXPECT_GT(max_abs_diff(run(other.data()).out, gathered.out), 0.f);
            EXPECT_TRUE(same_bits(from_value.out, gathered.out)) << "out";
            EXPECT_TRUE(same_bits(from_value.lse, gathered.lse)) << "lse";
            EXPECT_TRUE(same_bits(from_value.dsd, gathered.dsd)) << "dsd";
            EXPECT_TRUE(same_bits(from_value.dss, gathered.dss)) << "dss";
            EXPECT_TRUE(same_bits(from_value.dv, gathered.dv)) << "dv";
            EXPECT_TRUE(same_bits(from_value.dse, gathered.dse)) << "dse";
          }
}

TEST(ValueHeadScores, MisuseIsNamed) {
  const Graph g = testing::uniform_graph(10, 14, 40, 1);
  const AttentionConfig c{.score = Score::additive};
  const Operands o = make_operands(g, c, 2, 3, 1);
  const Tensor sd = random_tensor({10, 2}, 7), ss = random_tensor({14, 2}, 8);
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)attention_forward(
            g,
            {.value = o.value, .score_dst = sd, .score_src = ss, .att_dst = o.att_dst, .att_src = o.att_src},
            c);
      },
      {"score_dst", "att_dst/att_src", "not both"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)attention_forward(g, {.value = o.value, .att_dst = o.att_dst}, c); },
      {"att_src", "is missing"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)attention_forward(
            g, {.value = o.value, .att_dst = o.att_dst, .att_src = random_tensor({2, 4}, 3)}, c);
      },
      {"att_src", "[2, 4]"});
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)attention_forward(g,
                                {.query = random_tensor({10, 2, 3}, 11),
                                 .key = o.value,
                                 .value = o.value,
                                 .att_dst = o.att_dst,
                                 .att_src = o.att_src},
                                {.score = Score::dot_product});
      },
      {"att_dst", "dot_product"});
  const Graph wide = testing::uniform_graph(14, 10, 40, 1);  // more destinations than sources
  const Operands w = make_operands(wide, c, 2, 3, 1);
  expect_throw_naming<ShapeError>([&] { (void)attention_forward(wide, from_value(w), c); },
                                  {"att_dst", "num_dst <= num_src", "14 destinations and 10 sources"});
  // A forward run with score vectors has no node scores for a backward with att_dst/att_src.
  const AttentionResult plain = attention_forward(g, {.value = o.value, .score_dst = sd, .score_src = ss}, c);
  expect_throw_naming<ShapeError>([&] { (void)attention_backward(g, from_value(o), c, plain, o.grad_out); },
                                  {"forward.node_scores"});
}

}  // namespace
}  // namespace edgeattn
