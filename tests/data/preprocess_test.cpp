#include "edgeattn/data/preprocess.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::data {
namespace {

using I64 = std::vector<int64_t>;

// Six nodes: edges 0->1, 1->0, 1->2, 2->3, 3->3 (a loop) and 4->5, so two components {0..3} and
// {4, 5}. Every part encodes the node (or edge) it belongs to, so a test can tell where it went:
// features row v = [v, 100 + v], name "n<v>", weight of edge i <- j = 10 i + j, its attributes
// [10 i + j, -(10 i + j)].
Dataset six_nodes() {
  Dataset ds;
  ds.name = "six";
  const I64 src = {0, 1, 1, 2, 3, 4}, dst = {1, 0, 2, 3, 3, 5};
  ds.graph = build_graph(6, 6, src, dst);
  for (int64_t i = 0; i < 6; ++i)
    for (int32_t j : ds.graph.row(i)) ds.edge_weight.push_back(static_cast<float>(10 * i + j));
  ds.edge_attr = Tensor({ds.num_edges(), 2});
  for (int64_t e = 0; e < ds.num_edges(); ++e) {
    ds.edge_attr(e, 0) = ds.edge_weight[static_cast<size_t>(e)];
    ds.edge_attr(e, 1) = -ds.edge_weight[static_cast<size_t>(e)];
  }
  Tensor x({6, 2});
  for (int64_t v = 0; v < 6; ++v) {
    x(v, 0) = static_cast<float>(v);
    x(v, 1) = static_cast<float>(100 + v);
  }
  ds.features = Features(std::move(x));
  ds.labels.classes = {0, 1, 0, 1, 0, -1};
  ds.labels.num_classes = 2;
  ds.node_names = {"n0", "n1", "n2", "n3", "n4", "n5"};
  ds.splits["s"] = Split{{0, 4}, {1, 5}, {2, 3}};
  ds.default_split = "s";
  ds.validate();
  return ds;
}

int64_t old_id(const Dataset& ds, int64_t v) {
  return std::stoi(ds.node_names[static_cast<size_t>(v)].substr(1));
}

// Every node's features and label followed its name; every edge's weight and attributes followed
// the edge (an added edge weighs 1 with attributes 0). `reversed_ok`: an edge whose reverse was
// an original edge may carry the reverse's weight and attributes.
void expect_aligned(const Dataset& ds, bool reversed_ok = false) {
  ASSERT_NO_THROW(ds.validate());
  const Dataset orig = six_nodes();
  std::set<std::pair<int64_t, int64_t>> orig_edges;
  for (int64_t i = 0; i < 6; ++i)
    for (int32_t j : orig.graph.row(i)) orig_edges.emplace(i, j);
  const Tensor x = ds.features.to_dense();
  for (int64_t v = 0; v < ds.num_nodes(); ++v) {
    const int64_t o = old_id(ds, v);
    EXPECT_EQ(x(v, 0), static_cast<float>(o));
    EXPECT_EQ(x(v, 1), static_cast<float>(100 + o));
    EXPECT_EQ(ds.labels.classes[static_cast<size_t>(v)], orig.labels.classes[static_cast<size_t>(o)]);
  }
  for (int64_t i = 0; i < ds.num_nodes(); ++i)
    for (int64_t p = ds.graph.row_ptr()[static_cast<size_t>(i)];
         p < ds.graph.row_ptr()[static_cast<size_t>(i) + 1]; ++p) {
      const int64_t oi = old_id(ds, i), oj = old_id(ds, ds.graph.col_idx()[static_cast<size_t>(p)]);
      const float w = ds.edge_weight[static_cast<size_t>(p)];
      const float a0 = ds.edge_attr(p, 0), a1 = ds.edge_attr(p, 1);
      if (orig_edges.contains({oi, oj})) {
        EXPECT_EQ(w, static_cast<float>(10 * oi + oj)) << "edge " << oi << " <- " << oj;
        EXPECT_EQ(a0, w);
        EXPECT_EQ(a1, -w);
      } else if (reversed_ok && orig_edges.contains({oj, oi})) {
        EXPECT_EQ(w, static_cast<float>(10 * oj + oi)) << "reverse edge " << oi << " <- " << oj;
        EXPECT_EQ(a0, w);
        EXPECT_EQ(a1, -w);
      } else {
        EXPECT_EQ(w, 1.f) << "added edge " << oi << " <- " << oj;
        EXPECT_EQ(a0, 0.f);
        EXPECT_EQ(a1, 0.f);
      }
    }
}

TEST(SparsifyFeatures, TurnsMostlyZeroDenseFeaturesIntoTheSameCsr) {
  // 3 x 10, 2 non-zeros: 6.7% dense
  Tensor x({3, 10});
  x(0, 7) = 1.5f;
  x(2, 0) = -2.f;
  const Features f = sparsify_features(Features(x));
  ASSERT_TRUE(f.is_sparse());
  EXPECT_EQ(f.rows(), 3);
  EXPECT_EQ(f.cols(), 10);
  const CsrMatrix& m = f.sparse();
  EXPECT_EQ(std::vector<int64_t>(m.indptr().begin(), m.indptr().end()), (I64{0, 1, 1, 2}));
  EXPECT_EQ(std::vector<int32_t>(m.indices().begin(), m.indices().end()), (std::vector<int32_t>{7, 0}));
  EXPECT_EQ(std::vector<float>(m.values().begin(), m.values().end()), (std::vector<float>{1.5f, -2.f}));
  const Tensor back = f.to_dense();
  EXPECT_EQ(max_abs_diff(back, x), 0.f);
}

TEST(SparsifyFeatures, LeavesDenserAndSparseFeaturesAlone) {
  Tensor x({2, 4});
  x(0, 0) = 1.f;  // 12.5% > 10%
  EXPECT_FALSE(sparsify_features(Features(x)).is_sparse());
  EXPECT_TRUE(sparsify_features(Features(x), /*max_density=*/0.2).is_sparse());
  const Features s(CsrMatrix(1, 3, {0, 3}, {0, 1, 2}, {1.f, 2.f, 3.f}));
  EXPECT_TRUE(sparsify_features(s).is_sparse());
  EXPECT_FALSE(sparsify_features(Features(Tensor({0, 5}))).is_sparse());
}

TEST(SparsifyFeatures, DenseFeaturesLeftAloneShareTheInputInsteadOfACopy) {
  Tensor x({2, 4}, 1.f);
  const Features in(std::move(x));
  const Features out = sparsify_features(in);
  ASSERT_FALSE(out.is_sparse());
  EXPECT_EQ(out.dense().data(), in.dense().data());
  EXPECT_TRUE(in.dense().shares_storage());
}

TEST(Reorder, MovesEveryPartOfANodeTogether) {
  const I64 new_of_old = {3, 5, 0, 1, 4, 2};
  const Dataset ds = reorder(six_nodes(), new_of_old);
  EXPECT_EQ(ds.node_names, (std::vector<std::string>{"n2", "n3", "n5", "n0", "n4", "n1"}));
  EXPECT_EQ(ds.num_edges(), 6);
  expect_aligned(ds);
  EXPECT_EQ(ds.split().train, (I64{3, 4}));
  EXPECT_EQ(ds.split().val, (I64{2, 5}));
  EXPECT_EQ(ds.split().test, (I64{0, 1}));
  ASSERT_EQ(ds.notes.size(), 1u);
  EXPECT_NE(ds.notes[0].find("reordered 6 nodes"), std::string::npos);
}

TEST(Reorder, CarriesSparseFeaturesAndMultiHotLabels) {
  Dataset in = six_nodes();
  in.features = Features(CsrMatrix::from_dense(in.features.dense()));
  in.labels.classes.clear();
  in.labels.multi_hot = Tensor({6, 2});
  in.labels.multi_hot(4, 1) = 1.f;
  const Dataset ds = reorder(in, I64{3, 5, 0, 1, 4, 2});
  ASSERT_TRUE(ds.features.is_sparse());
  EXPECT_EQ(ds.features.to_dense()(4, 1), 104.f);
  EXPECT_EQ(ds.labels.multi_hot(4, 1), 1.f);
  EXPECT_EQ(ds.labels.multi_hot(5, 1), 0.f);
}

TEST(Reorder, RejectsWhatIsNotAPermutation) {
  testing::expect_throw_naming<GraphError>(
      [] {
        reorder(six_nodes(), I64{0, 1, 2, 3, 4, 4});
      },
      {"new_of_old[5]", "permutation"});
}

TEST(LargestComponent, DropsTheOtherNodesFromEveryPart) {
  const Dataset ds = largest_component(six_nodes());
  EXPECT_EQ(ds.num_nodes(), 4);
  EXPECT_EQ(ds.num_edges(), 5);
  EXPECT_EQ(ds.node_names, (std::vector<std::string>{"n0", "n1", "n2", "n3"}));
  expect_aligned(ds);
  EXPECT_EQ(ds.split().train, (I64{0}));
  EXPECT_EQ(ds.split().val, (I64{1}));
  EXPECT_EQ(ds.split().test, (I64{2, 3}));
  ASSERT_EQ(ds.notes.size(), 1u);
  EXPECT_NE(ds.notes[0].find("4 of 6 nodes, 5 of 6 edges"), std::string::npos);
}

TEST(WithSelfLoops, AddsOneLoopPerNodeWithWeightOne) {
  const Dataset ds = with_self_loops(six_nodes());
  EXPECT_EQ(ds.num_edges(), 11);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 6);
  expect_aligned(ds);  // the existing loop 3 <- 3 keeps weight 33, the new ones weigh 1
  EXPECT_NE(ds.notes.back().find("added 5 self-loops"), std::string::npos);
}

TEST(WithoutSelfLoops, DropsTheLoopAndKeepsTheOtherWeights) {
  const Dataset ds = without_self_loops(six_nodes());
  EXPECT_EQ(ds.num_edges(), 5);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  expect_aligned(ds);
  EXPECT_NE(ds.notes.back().find("removed 1 self-loops"), std::string::npos);
}

TEST(ToUndirected, AddsReverseEdgesCarryingTheirMirrorsWeight) {
  const Dataset ds = to_undirected(six_nodes());
  EXPECT_EQ(ds.num_edges(), 9);  // 0-1, 1-2, 2-3, 4-5 both ways, loop 3-3 once
  expect_aligned(ds, /*reversed_ok=*/true);
  EXPECT_NE(ds.notes.back().find("6 -> 9 edges"), std::string::npos);
}

TEST(Preprocess, RejectsAnInconsistentDataset) {
  Dataset ds = six_nodes();
  ds.edge_weight.pop_back();
  testing::expect_throw_naming<InvalidArgument>([&] { with_self_loops(ds); }, {"edge weights", "6 edges"});
  ds = six_nodes();
  ds.edge_attr = Tensor({5, 2});
  testing::expect_throw_naming<InvalidArgument>([&] { to_undirected(ds); },
                                                {"edge_attr", "[5, 2]", "[6, edge_dim]"});
}

TEST(NormalizeFeatures, MakesRowsSumToOneAndLeavesZeroRows) {
  const float values[] = {1.f, 3.f, 0.f, 0.f, -1.f, 1.f};
  Features dense(Tensor({3, 2}, values));
  Features sparse(CsrMatrix::from_dense(Tensor({3, 2}, values)));
  normalize_features(dense);
  normalize_features(sparse);
  const std::vector<float> expected = {0.25f, 0.75f, 0.f, 0.f, -0.5f, 0.5f};
  const Tensor d = dense.to_dense(), s = sparse.to_dense();
  EXPECT_EQ(std::vector<float>(d.span().begin(), d.span().end()), expected);
  EXPECT_EQ(std::vector<float>(s.span().begin(), s.span().end()), expected);
  EXPECT_EQ(sparse.nnz(), 4);  // the pattern does not change
}

}  // namespace
}  // namespace edgeattn::data
