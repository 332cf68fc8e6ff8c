// End to end, the GAT paper's inductive multi-label task on a small instance of PPI's layout
// written here: graphs for training, validation and testing that share no edge, labels that
// depend on a node's and its neighbours' features, loaded by the GraphSAGE reader and trained
// with BCE-with-logits, scored by micro-F1 on the unseen test graphs. (The real PPI files cannot
// be obtained here; `edgeattn train --dataset ppi` downloads them.)
#include <gtest/gtest.h>

#include <random>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/graphsage.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/train/metrics.hpp"
#include "edgeattn/train/trainer.hpp"
#include "support/archive_writer.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::train {
namespace {

constexpr int kGraphs = 8, kNodesPerGraph = 40, kFeatures = 8, kClasses = 5;

// Graphs 0-5 train, 6 val, 7 test; label c of node v is 1 when (x_v + mean of its neighbours'
// x) . w_c > 0, so it takes attention over the neighbourhood to predict well.
void write_ppi_like(const std::filesystem::path& dir) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal;
  const int n = kGraphs * kNodesPerGraph;
  std::vector<double> x(static_cast<size_t>(n * kFeatures)), w(kClasses * kFeatures);
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = normal(rng);
  std::vector<std::vector<int>> nbrs(static_cast<size_t>(n));
  std::string nodes, links;
  for (int g = 0; g < kGraphs; ++g) {
    const int base = g * kNodesPerGraph;
    for (int k = 0; k < kNodesPerGraph; ++k) {
      const int v = base + k;
      nodes += std::string(v ? ", " : "") + "{\"id\": " + std::to_string(v) +
               ", \"val\": " + (g == 6 ? "true" : "false") + ", \"test\": " + (g == 7 ? "true" : "false") +
               "}";
      for (int e = 0; e < 2; ++e) {  // a ring plus a random chord: each node has 2 to ~6 neighbours
        const int u =
            e == 0 ? base + (k + 1) % kNodesPerGraph : base + static_cast<int>(rng() % kNodesPerGraph);
        if (u == v) continue;
        links += std::string(links.empty() ? "" : ", ") + "{\"source\": " + std::to_string(v) +
                 ", \"target\": " + std::to_string(u) + "}";
        nbrs[static_cast<size_t>(v)].push_back(u);
        nbrs[static_cast<size_t>(u)].push_back(v);
      }
    }
  }
  std::string id_map = "{", class_map = "{";
  for (int v = 0; v < n; ++v) {
    const std::string key = std::string(v ? ", " : "") + "\"" + std::to_string(v) + "\": ";
    id_map += key + std::to_string(v);
    class_map += key + "[";
    for (int c = 0; c < kClasses; ++c) {
      double s = 0, m = 0;
      for (int f = 0; f < kFeatures; ++f)
        s += x[static_cast<size_t>(v * kFeatures + f)] * w[static_cast<size_t>(c * kFeatures + f)];
      for (const int u : nbrs[static_cast<size_t>(v)])
        for (int f = 0; f < kFeatures; ++f)
          m += x[static_cast<size_t>(u * kFeatures + f)] * w[static_cast<size_t>(c * kFeatures + f)];
      m /= static_cast<double>(std::max<size_t>(1, nbrs[static_cast<size_t>(v)].size()));
      class_map += std::string(c ? ", " : "") + (s + 2 * m > 0 ? "1" : "0");
    }
    class_map += "]";
  }
  write_file_atomic(dir / "toy-G.json",
                    "{\"directed\": false, \"nodes\": [" + nodes + "], \"links\": [" + links + "]}");
  write_file_atomic(dir / "toy-id_map.json", id_map + "}");
  write_file_atomic(dir / "toy-class_map.json", class_map + "}");
  write_file_atomic(dir / "toy-feats.npy",
                    edgeattn::testing::npy_bytes("<f8", {n, kFeatures}, edgeattn::testing::raw(x)));
}

TEST(PpiTraining, AGatTrainedOnSomeGraphsPredictsTheLabelsOfAnUnseenGraph) {
  const edgeattn::testing::TempDir dir;
  write_ppi_like(dir.path());
  const data::Dataset ds = data::load_graphsage(dir.path());
  ASSERT_TRUE(ds.labels.multi_label());
  ASSERT_EQ(ds.split().test.size(), static_cast<size_t>(kNodesPerGraph));
  // No edge leaves the test graph: what the model sees of it at test time it never trained on.
  for (const int64_t v : ds.split().test)
    for (const int32_t u : ds.graph.row(v)) ASSERT_GE(u, 7 * kNodesPerGraph);

  nn::ModelConfig cfg;  // the GAT paper's PPI model, scaled down: residual, averaged output heads
  cfg.kind = nn::ModelKind::gat;
  cfg.in_channels = kFeatures;
  cfg.num_classes = kClasses;
  cfg.hidden = 16;
  cfg.heads = 4;
  cfg.out_heads = 2;
  cfg.layers = 2;
  cfg.residual = true;
  cfg.dropout = cfg.attention_dropout = 0.f;
  cfg.seed = 3;
  nn::Model model(cfg);
  const Graph g = model.prepare_graph(ds.graph);
  const data::Features x = model.prepare_features(ds.graph, ds.features);
  TrainConfig tc;
  tc.epochs = 150;
  tc.patience = 0;
  tc.optimizer.lr = 0.01f;
  tc.optimizer.weight_decay = 0.f;
  auto forward = [&](autograd::Tape& tape, uint64_t seed) { return model.forward(tape, g, x, seed); };
  const TrainResult r = fit(forward, model.parameters(), ds.labels, ds.split(), tc);

  // Baselines on the test graph: predicting every label present, and a fixed per-class guess from
  // the training graphs' majority.
  const std::vector<int64_t>& test = ds.split().test;
  const Tensor all_on(ds.labels.multi_hot.shape(), 1.f);
  const double all_on_f1 = micro_f1(all_on, ds.labels.multi_hot, test);
  EXPECT_GT(r.test_accuracy, 0.8) << "micro-F1 on the unseen graph";
  EXPECT_GT(r.test_accuracy, all_on_f1 + 0.1);
  EXPECT_LT(r.history.back().train_loss, 0.5 * r.history.front().train_loss);
}

}  // namespace
}  // namespace edgeattn::train
