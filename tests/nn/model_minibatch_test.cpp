// Model::forward on sampled blocks (mini-batch training, graph/neighbor_sampler.hpp) and
// train::fit_minibatch: whole neighbourhoods give exactly the whole-graph forward for every conv
// kind and both feature kinds; gradients through sampled blocks match finite differences; bad
// batches are named; mini-batch training learns an SBM as well as full batch does.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/data/npz.hpp"
#include "edgeattn/data/npz_writer.hpp"
#include "edgeattn/data/synthetic.hpp"
#include "edgeattn/graph/neighbor_sampler.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/train/trainer.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/temp_dir.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using autograd::Var;
using edgeattn::testing::expect_throw_naming;

// 40 nodes in 4 communities, undirected, with a few isolated-ish nodes; 6 random dense features.
struct Toy {
  Graph raw;
  data::Features features;
};

Toy toy(uint64_t seed) {
  Toy t;
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = i + 1; j < 40; ++j) {
      const float u =
          edgeattn::testing::random_tensor({1}, seed * 7919 + static_cast<uint64_t>(i * 40 + j), 0.f, 1.f)(0);
      if (u < (i % 4 == j % 4 ? 0.35f : 0.03f)) src.push_back(i), dst.push_back(j);
    }
  t.raw = edgeattn::testing::undirected(40, src, dst);
  t.features = data::Features(edgeattn::testing::random_tensor({40, 6}, seed + 1));
  return t;
}

ModelConfig config(ModelKind kind, int64_t layers) {
  return {.kind = kind,
          .in_channels = 6,
          .hidden = 4,
          .heads = 2,
          .out_heads = 2,
          .num_classes = 3,
          .layers = layers,
          .dropout = 0.3f,
          .attention_dropout = 0.3f,
          .add_self_loops = kind != ModelKind::transformer,
          .seed = 3};
}

TEST(ModelMiniBatch, WholeNeighbourhoodsGiveTheWholeGraphForwardForEveryConvKind) {
  const Toy t = toy(1);
  const std::vector<int64_t> seeds = {17, 3, 38, 0, 22};
  const data::Features sparse(CsrMatrix::from_dense(t.features.dense()));
  for (const ModelKind kind : {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer}) {
    for (const int64_t layers : {1, 2, 3}) {
      Model model(config(kind, layers));
      const Graph g = model.prepare_graph(t.raw);
      const SampledSubgraph batch =
          sample_neighbors(t.raw, seeds, {.fanouts = std::vector<int64_t>(static_cast<size_t>(layers), -1)});
      for (const data::Features* x : {&t.features, &sparse}) {
        Tape whole, mini;
        whole.training = mini.training = false;
        const Tensor all = whole.value(model.forward(whole, g, *x, 0));
        const Tensor some = mini.value(model.forward(mini, batch, *x, 0));
        ASSERT_EQ(some.shape(), Shape({5, 3}));
        for (size_t k = 0; k < seeds.size(); ++k)
          for (int64_t c = 0; c < 3; ++c)
            EXPECT_NEAR(some(static_cast<int64_t>(k), c), all(seeds[k], c), 2e-5f)
                << to_string(kind) << " layers " << layers << (x == &sparse ? " sparse" : " dense")
                << " seed " << seeds[k];
      }
    }
  }
}

TEST(ModelMiniBatch, WholeNeighbourhoodsWithEdgeFeaturesGiveTheWholeGraphForward) {
  const Toy t = toy(4);
  const Tensor attr = edgeattn::testing::random_tensor({t.raw.num_edges(), 3}, 9);
  const std::vector<int64_t> seeds = {5, 0, 33, 12};
  for (const ModelKind kind : {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer}) {
    ModelConfig cfg = config(kind, 2);
    cfg.edge_dim = 3;
    Model model(cfg);
    const PreparedGraph p = model.prepare_graph(t.raw, attr);
    const SampledSubgraph batch = sample_neighbors(t.raw, seeds, {.fanouts = {-1, -1}});
    Tape whole, mini;
    whole.training = mini.training = false;
    const Tensor all = whole.value(
        model.forward(whole, p.graph, t.features, EdgeFeatures{whole.constant_ref(p.edge_attr)}, 0));
    const Tensor some = mini.value(model.forward(mini, batch, t.features, attr.view(), 0));
    for (size_t k = 0; k < seeds.size(); ++k)
      for (int64_t c = 0; c < 3; ++c)
        EXPECT_NEAR(some(static_cast<int64_t>(k), c), all(seeds[k], c), 2e-5f)
            << to_string(kind) << " seed " << seeds[k];
    // A model without edge_dim refuses attributes it would ignore.
    Model plain(config(kind, 2));
    expect_throw_naming<InvalidArgument>(
        [&] { (void)plain.forward(mini, batch, t.features, attr.view(), 0); }, {"no edge_dim"});
  }
}

TEST(ModelMiniBatch, GradientsThroughSampledBlocksMatchFiniteDifferences) {
  const Toy t = toy(2);
  for (const ModelKind kind : {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer}) {
    ModelConfig cfg = config(kind, 2);
    // GAT's score has a LeakyReLU per head of every edge, GATv2's one per feature: with dropout's
    // 1/(1-p) scaling some of them sit within the difference step of their kink (which ones
    // depends on the dropout masks). A slope of 1 removes the kinks; the layers' own gradient
    // tests cover the slope (this test is about the blocks' wiring).
    if (kind == ModelKind::gat || kind == ModelKind::gatv2) cfg.negative_slope = 1.f;
    Model model(cfg);
    const SampledSubgraph batch =
        sample_neighbors(t.raw, std::vector<int64_t>{4, 9, 31}, {.fanouts = {3, 2}, .seed = 5});
    // Training mode: the dropout masks are fixed by the step seed, so the loss is a function of
    // the parameters alone.
    EXPECT_TRUE(edgeattn::testing::check_gradients(model.parameters(), [&](Tape& tape) {
      tape.training = true;
      return edgeattn::testing::weighted_sum(tape, model.forward(tape, batch, t.features, 11), 12);
    })) << to_string(kind);
  }
}

TEST(ModelMiniBatch, GradientsThroughSampledBlocksWithEdgeFeaturesMatchFiniteDifferences) {
  const Toy t = toy(5);
  const Tensor attr = edgeattn::testing::random_tensor({t.raw.num_edges(), 2}, 3);
  for (const ModelKind kind : {ModelKind::gat, ModelKind::transformer}) {
    ModelConfig cfg = config(kind, 2);
    cfg.edge_dim = 2;
    Model model(cfg);
    const SampledSubgraph batch =
        sample_neighbors(t.raw, std::vector<int64_t>{7, 20, 39}, {.fanouts = {3, 2}, .seed = 8});
    // The backward runs after forward has returned: the blocks' attributes must live on the tape.
    EXPECT_TRUE(edgeattn::testing::check_gradients(model.parameters(), [&](Tape& tape) {
      tape.training = true;
      return edgeattn::testing::weighted_sum(tape, model.forward(tape, batch, t.features, attr.view(), 11),
                                             12);
    })) << to_string(kind);
  }
}

TEST(ModelMiniBatch, BadBatchesAreNamed) {
  const Toy t = toy(3);
  Model model(config(ModelKind::gat, 2));
  Tape tape;
  const SampledSubgraph one = sample_neighbors(t.raw, std::vector<int64_t>{1, 2}, {.fanouts = {4}});
  expect_throw_naming<InvalidArgument>([&] { (void)model.forward(tape, one, t.features, 0); },
                                       {"1 blocks", "one per layer (2)"});
  const SampledSubgraph two = sample_neighbors(t.raw, std::vector<int64_t>{1, 2}, {.fanouts = {4, 4}});
  const data::Features narrow(edgeattn::testing::random_tensor({40, 5}, 1));
  expect_throw_naming<ShapeError>([&] { (void)model.forward(tape, two, narrow, 0); }, {"5 columns", "6"});
  Model transformer_block(
      {.kind = ModelKind::graph_transformer, .in_channels = 6, .hidden = 4, .heads = 2, .num_classes = 3});
  expect_throw_naming<InvalidArgument>([&] { (void)transformer_block.forward(tape, two, t.features, 0); },
                                       {"graph_transformer"});
}

TEST(Shuffled, IsAPermutationFixedByTheSeed) {
  std::vector<int64_t> nodes(100);
  std::iota(nodes.begin(), nodes.end(), 1000);
  const std::vector<int64_t> a = train::shuffled(nodes, 1), b = train::shuffled(nodes, 1),
                             c = train::shuffled(nodes, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, nodes);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()), std::set<int64_t>(nodes.begin(), nodes.end()));
}

TEST(FitMiniBatch, SampledTrainingLearnsAnSbmAsWellAsFullBatchAndIsDeterministic) {
  data::SbmConfig sc;
  sc.num_nodes = 600;
  sc.num_classes = 3;
  sc.feature_dim = 8;
  sc.signal = 0.35f;  // features alone are weak: neighbours carry the class
  sc.train_per_class = 40;
  sc.num_val = 150;
  sc.num_test = 300;
  sc.seed = 4;
  const data::Dataset ds = data::sbm_dataset(sc);
  ModelConfig cfg = config(ModelKind::gat, 2);
  cfg.in_channels = 8;
  cfg.hidden = 8;
  cfg.heads = 4;
  cfg.out_heads = 1;
  cfg.dropout = cfg.attention_dropout = 0.2f;
  train::TrainConfig tc;
  tc.epochs = 60;
  tc.patience = 0;
  tc.optimizer.lr = 0.01f;
  auto run = [&](bool minibatch) {
    Model model(cfg);
    const Graph g = model.prepare_graph(ds.graph);
    auto forward = [&](Tape& tape, uint64_t s) { return model.forward(tape, g, ds.features, s); };
    if (!minibatch) return train::fit(forward, model.parameters(), ds.labels, ds.split(), tc);
    auto batch = [&](Tape& tape, std::span<const int64_t> seeds, uint64_t s) {
      return model.forward(tape, sample_neighbors(ds.graph, seeds, {.fanouts = {5, 5}, .seed = s}),
                           ds.features, s);
    };
    return train::fit_minibatch(batch, forward, model.parameters(), ds.labels, ds.split(), 32, tc);
  };
  const train::TrainResult full = run(false), mini = run(true), again = run(true);
  // Each epoch takes 4 steps of 32 seeds (the last one 24) instead of one.
  EXPECT_GT(mini.test_accuracy, 0.8) << "full batch: " << full.test_accuracy;
  EXPECT_GT(mini.test_accuracy, full.test_accuracy - 0.05);
  EXPECT_LT(mini.history.back().train_loss, 0.5 * mini.history.front().train_loss);
  EXPECT_EQ(mini.test_accuracy, again.test_accuracy);
  EXPECT_EQ(mini.history.back().train_loss, again.history.back().train_loss);
  expect_throw_naming<InvalidArgument>(
      [&] {
        Model model(cfg);
        (void)train::fit_minibatch([](Tape&, std::span<const int64_t>, uint64_t) { return Var{}; },
                                   [](Tape&, uint64_t) { return Var{}; }, model.parameters(), ds.labels,
                                   ds.split(), 0, tc);
      },
      {"batch_size is 0"});
}

TEST(FitMiniBatch, FeaturesMappedFromAFileTrainExactlyAsFeaturesInMemory) {
  data::SbmConfig sc;
  sc.num_nodes = 300;
  sc.num_classes = 3;
  sc.feature_dim = 6;
  sc.train_per_class = 20;
  sc.num_val = 60;
  sc.num_test = 100;
  sc.seed = 9;
  const data::Dataset ds = data::sbm_dataset(sc);
  const edgeattn::testing::TempDir dir;
  data::write_npz(ds, dir / "sbm.npz");
  const data::Dataset mapped = data::load_npz(dir / "sbm.npz", [] {
    data::NpzOptions o;
    o.map_features = true;
    return o;
  }());
  ASSERT_TRUE(mapped.features.is_mapped());
  ModelConfig cfg = config(ModelKind::gat, 2);
  cfg.in_channels = 6;
  cfg.hidden = 4;
  cfg.heads = 2;
  cfg.dropout = cfg.attention_dropout = 0.3f;
  train::TrainConfig tc;
  tc.epochs = 8;
  tc.patience = 0;
  auto run = [&](const data::Dataset& d) {
    Model model(cfg);
    const data::Features x = model.prepare_features(d.graph, d.features);
    EXPECT_EQ(x.is_mapped(), d.features.is_mapped());
    const Graph g = model.prepare_graph(d.graph);
    auto forward = [&](Tape& tape, uint64_t s) { return model.forward(tape, g, x, s); };
    auto batch = [&](Tape& tape, std::span<const int64_t> seeds, uint64_t s) {
      return model.forward(tape, sample_neighbors(d.graph, seeds, {.fanouts = {4, 3}, .seed = s}), x, s);
    };
    return train::fit_minibatch(batch, forward, model.parameters(), d.labels, d.split(), 16, tc);
  };
  const train::TrainResult in_memory = run(ds), from_file = run(mapped);
  ASSERT_EQ(in_memory.history.size(), from_file.history.size());
  for (size_t e = 0; e < in_memory.history.size(); ++e) {
    EXPECT_EQ(in_memory.history[e].train_loss, from_file.history[e].train_loss) << "epoch " << e;
    EXPECT_EQ(in_memory.history[e].val_loss, from_file.history[e].val_loss) << "epoch " << e;
  }
  EXPECT_EQ(in_memory.test_accuracy, from_file.test_accuracy);
}

}  // namespace
}  // namespace edgeattn::nn
