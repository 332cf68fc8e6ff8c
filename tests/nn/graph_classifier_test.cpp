// GraphClassifier: parameters and shapes, finite-difference gradients through encoder, readout
// and classifier, and end to end on a task only the graph structure can solve, with the 10-fold
// protocol.
#include "edgeattn/nn/graph_classifier.hpp"

#include <gtest/gtest.h>

#include <random>

#include "edgeattn/data/splits.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/train/trainer.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"

namespace edgeattn::nn {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::weighted_sum;

// `count` graphs of 8-14 nodes, half of type A and half of type B (one-hot features plus noise).
// Class 1 graphs join nodes of different types, class 0 graphs nodes of the same type: every graph
// has the same mix of features, so only the edges tell the classes apart.
data::Dataset mixing_graphs(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.f, 0.1f);
  std::vector<int64_t> src, dst;
  std::vector<float> x;
  data::Dataset ds;
  ds.name = "mixing";
  ds.graph_ptr = {0};
  for (int g = 0; g < count; ++g) {
    const int64_t base = ds.graph_ptr.back(), size = 8 + static_cast<int64_t>(rng() % 4) * 2;
    const int label = static_cast<int>(rng() % 2);
    for (int64_t k = 0; k < size; ++k) {
      x.push_back((k % 2 == 0 ? 1.f : 0.f) + noise(rng));
      x.push_back((k % 2 == 1 ? 1.f : 0.f) + noise(rng));
    }
    for (int64_t e = 0; e < 2 * size; ++e) {
      const int64_t a = static_cast<int64_t>(rng() % size);
      int64_t b = static_cast<int64_t>(rng() % size);
      if ((a % 2 != b % 2) != (label == 1)) b = (b + 1) % size;  // flip the type to fit the class
      if (a == b) continue;
      src.insert(src.end(), {base + a, base + b});
      dst.insert(dst.end(), {base + b, base + a});
    }
    ds.graph_ptr.push_back(base + size);
    ds.graph_labels.classes.push_back(label);
  }
  const int64_t n = ds.graph_ptr.back();
  ds.graph = build_graph(n, n, src, dst);
  ds.features = data::Features(Tensor({n, 2}, x));
  ds.graph_labels.num_classes = 2;
  ds.validate();
  return ds;
}

GraphClassifierConfig small_config(Readout readout, int64_t hidden, int64_t embed) {
  GraphClassifierConfig cfg;
  cfg.encoder.kind = ModelKind::gat;
  cfg.encoder.in_channels = 2;
  cfg.encoder.hidden = hidden;
  cfg.encoder.heads = 2;
  cfg.encoder.layers = 2;
  cfg.encoder.num_classes = embed;
  cfg.encoder.dropout = cfg.encoder.attention_dropout = 0.f;
  cfg.num_classes = 2;
  cfg.readout = readout;
  cfg.seed = 7;
  return cfg;
}

TEST(GraphClassifier, ParametersAndOutputShape) {
  GraphClassifier model(small_config(Readout::attention, 4, 6));
  const auto shapes = edgeattn::testing::names_and_shapes(model.parameters());
  EXPECT_EQ(shapes.at("gate.weight"), "[1, 6]");
  EXPECT_EQ(shapes.at("classifier.weight"), "[2, 6]");
  EXPECT_EQ(shapes.at("classifier.bias"), "[2]");
  EXPECT_TRUE(shapes.contains("conv1.lin.weight"));
  const data::Dataset ds = mixing_graphs(5, 1);
  const Graph g = model.prepare_graph(ds.graph);
  const data::Features x = model.prepare_features(ds.graph, ds.features, ds.graph_ptr);
  autograd::Tape tape;
  EXPECT_EQ(tape.value(model.forward(tape, g, x, ds.graph_ptr, 0)).shape(), Shape({5, 2}));
}

TEST(GraphClassifier, GradientsMatchFiniteDifferencesForEveryReadout) {
  const data::Dataset ds = mixing_graphs(3, 2);
  for (const Readout readout : {Readout::sum, Readout::mean, Readout::max, Readout::attention}) {
    GraphClassifier model(small_config(readout, 2, 3));
    const Graph g = model.prepare_graph(ds.graph);
    const data::Features x = model.prepare_features(ds.graph, ds.features, ds.graph_ptr);
    edgeattn::testing::GradcheckOptions opt;
    opt.rtol = 3e-2f;
    opt.atol = 3e-3f;
    EXPECT_TRUE(check_gradients(
        model.parameters(),
        [&](autograd::Tape& t) { return weighted_sum(t, model.forward(t, g, x, ds.graph_ptr, 0), 3); }, opt))
        << to_string(readout);
  }
}

TEST(GraphClassifier, LearnsATaskOnlyTheEdgesCanSolveUnderTenFoldCrossValidation) {
  const data::Dataset ds = mixing_graphs(200, 3);
  const std::vector<data::Split> folds = data::stratified_kfold(ds.graph_labels, 10, 0.1, 0);
  double sum = 0;
  for (int f = 0; f < 3; ++f) {  // three of the ten folds keep the test short
    GraphClassifier model(small_config(Readout::mean, 8, 16));
    const Graph g = model.prepare_graph(ds.graph);
    const data::Features x = model.prepare_features(ds.graph, ds.features, ds.graph_ptr);
    train::TrainConfig tc;
    tc.epochs = 80;
    tc.patience = 0;
    tc.optimizer.lr = 0.01f;
    tc.optimizer.weight_decay = 0.f;
    auto forward = [&](autograd::Tape& t, uint64_t s) { return model.forward(t, g, x, ds.graph_ptr, s); };
    const train::TrainResult r = train::fit(forward, model.parameters(), ds.graph_labels, folds[f], tc);
    sum += r.test_accuracy;
  }
  EXPECT_GT(sum / 3, 0.9) << "mean test accuracy over three folds";
}

TEST(GraphClassifier, ConfigurationErrorsNameTheField) {
  GraphClassifierConfig cfg = small_config(Readout::mean, 4, 4);
  cfg.num_classes = 1;
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { GraphClassifier m(cfg); },
                                                          {"num_classes is 1"});
  cfg.num_classes = 2;
  cfg.dropout = 1.f;
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { GraphClassifier m(cfg); }, {"dropout is 1"});
  edgeattn::testing::expect_throw_naming<InvalidArgument>([] { parse_readout("median"); },
                                                          {"'median'", "sum, mean, max, attention"});
}

}  // namespace
}  // namespace edgeattn::nn
