// Model: the GAT paper's Cora architecture with PyG's parameter names and count, determinism for
// a seed, no dropout in eval mode, the strict JSON config round trip, input preparation, and a
// tiny model of every kind overfitting a 20-node graph with a plain SGD loop (wiring check; the
// real optimiser lives in train/).
#include "edgeattn/nn/model.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::nn {
namespace {

using autograd::Parameter;
using autograd::Tape;
using autograd::Var;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::names_and_shapes;
using Names = std::map<std::string, std::string>;

std::vector<float> values(const Tensor& t) { return {t.span().begin(), t.span().end()}; }

TEST(Model, CoraGatHasPyGsParameterNamesShapesAndCount) {
  Model model({.kind = ModelKind::gat, .in_channels = 1433, .num_classes = 7});
  EXPECT_EQ(names_and_shapes(model.parameters()), (Names{{"conv1.lin.weight", "[64, 1433]"},
                                                         {"conv1.att_src", "[1, 8, 8]"},
                                                         {"conv1.att_dst", "[1, 8, 8]"},
                                                         {"conv1.bias", "[64]"},
                                                         {"conv2.lin.weight", "[7, 64]"},
                                                         {"conv2.att_src", "[1, 1, 7]"},
                                                         {"conv2.att_dst", "[1, 1, 7]"},
                                                         {"conv2.bias", "[7]"}}));
  EXPECT_EQ(model.num_parameters(), 92373);  // PyG's 2-layer GAT on Cora
  EXPECT_NE(model.describe().find("conv1.lin.weight [64, 1433]"), std::string::npos);
}

TEST(Model, OtherKindsNameTheirLayers) {
  Model v2({.kind = ModelKind::gatv2,
            .in_channels = 10,
            .hidden = 4,
            .heads = 2,
            .num_classes = 3,
            .layers = 3,
            .share_weights = true});
  const Names n2 = names_and_shapes(v2.parameters());
  EXPECT_EQ(n2.at("conv1.lin_l.weight"), "[8, 10]");
  EXPECT_EQ(n2.at("conv2.lin_l.weight"), "[8, 8]");
  EXPECT_EQ(n2.at("conv3.lin_l.weight"), "[3, 8]");
  EXPECT_EQ(n2.count("conv1.lin_r.weight"), 0u);
  Model tr({.kind = ModelKind::transformer,
            .in_channels = 10,
            .hidden = 4,
            .heads = 2,
            .num_classes = 3,
            .beta = true});
  const Names nt = names_and_shapes(tr.parameters());
  EXPECT_EQ(nt.at("conv1.lin_beta.weight"), "[1, 24]");
  EXPECT_EQ(nt.at("conv2.lin_skip.weight"), "[3, 8]");
  Model gt({.kind = ModelKind::graph_transformer,
            .in_channels = 10,
            .hidden = 4,
            .heads = 2,
            .num_classes = 3,
            .pe = PositionalEncodingKind::rwse,
            .pe_dim = 3});
  const Names ng = names_and_shapes(gt.parameters());
  EXPECT_EQ(ng.at("lin_in.weight"), "[8, 13]");
  EXPECT_EQ(ng.at("blocks.1.ffn.lin1.weight"), "[16, 8]");
  EXPECT_EQ(ng.at("lin_out.weight"), "[3, 8]");
}

struct Toy {
  Graph raw;
  data::Features features;
  std::vector<int32_t> labels;
  std::vector<int64_t> all;
};

// A 20-node stochastic block model: three communities (dense inside, sparse between), labels =
// community, 6 random dense features.
Toy toy(uint64_t seed) {
  Toy t;
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < 20; ++i)
    for (int64_t j = i + 1; j < 20; ++j) {
      const bool same = i % 3 == j % 3;
      const float u =
          edgeattn::testing::random_tensor({1}, seed * 1000 + static_cast<uint64_t>(i * 20 + j), 0.f, 1.f)(0);
      if (u < (same ? 0.5f : 0.05f)) src.push_back(i), dst.push_back(j);
    }
  t.raw = edgeattn::testing::undirected(20, src, dst);
  t.features = data::Features(edgeattn::testing::random_tensor({20, 6}, seed + 1));
  for (int64_t i = 0; i < 20; ++i) {
    t.labels.push_back(static_cast<int32_t>(i % 3));
    t.all.push_back(i);
  }
  return t;
}

Tensor logits_of(Model& model, const Graph& g, const data::Features& x, uint64_t step, bool training) {
  Tape tape;
  tape.training = training;
  return tape.value(model.forward(tape, g, x, step));
}

TEST(Model, IsDeterministicForASeedAndDropoutFollowsTheStepSeed) {
  const Toy t = toy(1);
  for (ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer}) {
    const ModelConfig cfg{
        .kind = kind, .in_channels = 6, .hidden = 4, .heads = 2, .num_classes = 3, .seed = 5};
    Model a(cfg), b(cfg);
    const Graph g = a.prepare_graph(t.raw);
    const Tensor la = logits_of(a, g, t.features, 3, true);
    EXPECT_EQ(values(la), values(logits_of(b, g, t.features, 3, true))) << to_string(kind);
    EXPECT_NE(values(la), values(logits_of(a, g, t.features, 4, true))) << to_string(kind);
    ModelConfig other = cfg;
    other.seed = 6;
    Model c(other);
    EXPECT_NE(values(la), values(logits_of(c, g, t.features, 3, true))) << to_string(kind);
  }
}

TEST(Model, EvalModeHasNoDropout) {
  const Toy t = toy(2);
  for (ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer}) {
    ModelConfig cfg{.kind = kind, .in_channels = 6, .hidden = 4, .heads = 2, .num_classes = 3, .seed = 9};
    Model with_dropout(cfg);
    cfg.dropout = cfg.attention_dropout = 0.f;
    Model without(cfg);  // same seed: same initial parameters
    const Graph g = with_dropout.prepare_graph(t.raw);
    const Tensor eval1 = logits_of(with_dropout, g, t.features, 1, false);
    EXPECT_EQ(values(eval1), values(logits_of(with_dropout, g, t.features, 2, false))) << to_string(kind);
    EXPECT_EQ(values(eval1), values(logits_of(without, g, t.features, 1, true))) << to_string(kind);
    EXPECT_NE(values(eval1), values(logits_of(with_dropout, g, t.features, 1, true))) << to_string(kind);
  }
}

TEST(Model, EveryKindOverfitsATwentyNodeGraphWithPlainSgd) {
  const Toy t = toy(3);
  for (ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer}) {
    Model model({.kind = kind,
                 .in_channels = 6,
                 .hidden = 8,
                 .heads = 2,
                 .num_classes = 3,
                 .dropout = 0.f,
                 .attention_dropout = 0.f,
                 .seed = 1});
    const Graph g = model.prepare_graph(t.raw);
    const float lr = kind == ModelKind::graph_transformer ? 0.05f : 0.5f;
    float first = 0.f, last = 0.f;
    for (int step = 0; step < 300; ++step) {
      Tape tape;
      const Var loss =
          autograd::cross_entropy(tape, model.forward(tape, g, t.features, step), t.labels, t.all);
      for (Parameter* p : model.parameters()) p->zero_grad();
      tape.backward(loss);
      for (Parameter* p : model.parameters())
        for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data()[i] -= lr * p->grad.data()[i];
      (step == 0 ? first : last) = tape.value(loss).data()[0];
    }
    const Tensor logits = logits_of(model, g, t.features, 0, false);
    int correct = 0;
    for (int64_t i = 0; i < 20; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < 3; ++c)
        if (logits(i, c) > logits(i, best)) best = c;
      correct += best == t.labels[static_cast<size_t>(i)];
    }
    EXPECT_EQ(correct, 20) << to_string(kind) << ": loss " << first << " -> " << last;
    EXPECT_LT(last, 0.1f * first) << to_string(kind);
  }
}

TEST(Model, SparseAndDenseFeaturesGiveTheSameLogits) {
  const Toy t = toy(4);
  Model model(
      {.kind = ModelKind::gat, .in_channels = 6, .hidden = 4, .heads = 2, .num_classes = 3, .seed = 2});
  const Graph g = model.prepare_graph(t.raw);
  const data::Features sparse(CsrMatrix::from_dense(t.features.dense()));
  const Tensor a = logits_of(model, g, t.features, 0, false);
  const Tensor b = logits_of(model, g, sparse, 0, false);
  EXPECT_LT(max_abs_diff(a, b), 1e-5f);
}

TEST(Model, PrepareFeaturesAppendsThePositionalEncoding) {
  const Toy t = toy(5);
  Model model({.kind = ModelKind::graph_transformer,
               .in_channels = 6,
               .hidden = 4,
               .heads = 2,
               .num_classes = 3,
               .pe = PositionalEncodingKind::rwse,
               .pe_dim = 4});
  const data::Features x = model.prepare_features(t.raw, t.features);
  ASSERT_EQ(x.cols(), 10);
  const Tensor d = x.to_dense();
  EXPECT_EQ(d(3, 2), t.features.dense()(3, 2));
  EXPECT_EQ(d(3, 6), 0.f);  // RWSE step 1 on a graph without self-loops
  const Graph g = model.prepare_graph(t.raw);
  EXPECT_EQ(logits_of(model, g, x, 0, false).shape(), (Shape{20, 3}));
  expect_throw_naming<ShapeError>([&] { (void)logits_of(model, g, t.features, 0, false); },
                                  {"Model::forward", "in_channels + pe_dim", "10"});
  const data::Features sparse =
      model.prepare_features(t.raw, data::Features(CsrMatrix::from_dense(t.features.dense())));
  EXPECT_LT(max_abs_diff(sparse.to_dense(), d), 1e-7f);
}

TEST(Model, ADatasetWithoutFeaturesTrainsOnItsPositionalEncodingAlone) {
  const Toy t = toy(5);
  const ModelConfig base{.kind = ModelKind::gat, .in_channels = 0, .hidden = 4, .heads = 2, .num_classes = 3};
  expect_throw_naming<InvalidArgument>([&] { Model m(base); }, {"in_channels is 0", "positional encoding"});
  ModelConfig c = base;
  c.in_channels = -1;
  c.pe = PositionalEncodingKind::rwse;
  c.pe_dim = 4;
  expect_throw_naming<InvalidArgument>([&] { Model m(c); }, {"in_channels is -1"});
  c.in_channels = 0;
  Model model(c);
  const data::Features none;  // a featureless dataset's (no columns)
  const data::Features x = model.prepare_features(t.raw, none);
  ASSERT_EQ(x.rows(), 20);
  ASSERT_EQ(x.cols(), 4);
  // The encoding itself: the same columns as after a dataset's own features.
  ModelConfig six = c;  // the same model over six feature columns
  six.in_channels = 6;
  Model with_features(six);
  const Tensor both = with_features.prepare_features(t.raw, t.features).to_dense();
  const Tensor alone = x.to_dense();
  for (int64_t i = 0; i < 20; ++i)
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(alone(i, k), both(i, 6 + k)) << i << ", " << k;
  const Graph g = model.prepare_graph(t.raw);
  EXPECT_EQ(logits_of(model, g, x, 0, false).shape(), (Shape{20, 3}));
}

TEST(ModelConfig, AnOptionTheKindDoesNotUseIsNamed) {
  const ModelConfig base{.in_channels = 5, .num_classes = 2};
  const auto message = [](const ModelConfig& c) {
    try {
      c.check_kind_options();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer}) {
    ModelConfig c = base;
    c.kind = kind;
    EXPECT_EQ(message(c), "no error");
    c.beta = true;
    EXPECT_EQ(message(c) == "no error", kind == ModelKind::transformer);
    c.beta = false;
    c.share_weights = true;
    EXPECT_EQ(message(c) == "no error", kind == ModelKind::gatv2);
    c.share_weights = false;
    c.pre_norm = true;
    EXPECT_EQ(message(c) == "no error", kind == ModelKind::graph_transformer);
    c.pre_norm = false;
    c.ffn_hidden = 32;
    EXPECT_EQ(message(c) == "no error", kind == ModelKind::graph_transformer);
    c.ffn_hidden = 0;
    c.residual = true;
    EXPECT_EQ(message(c) == "no error", kind == ModelKind::gat || kind == ModelKind::gatv2);
  }
  ModelConfig gat_beta = base;
  gat_beta.beta = true;
  EXPECT_EQ(message(gat_beta),
            "ModelConfig: beta is set, but kind 'gat' does not use it (transformer does); leave it unset");
  // A model file is not held to it: one written with an unused option set still loads.
  EXPECT_EQ(ModelConfig::from_json(gat_beta.to_json()), gat_beta);
}

TEST(Model, AModelBeyondMemoryIsRefusedBeforeItsWeightsAreAllocated) {
  // 1433 x 2^30 weights in the first layer alone: 6 TB with gradients and Adam's moments.
  for (const ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer})
    expect_throw_naming<InvalidArgument>(
        [&] {
          Model m({.kind = kind, .in_channels = 1433, .hidden = 1 << 20, .heads = 1024, .num_classes = 7});
        },
        {"in_channels 1433, heads 1024 x hidden 1048576", "GB with their gradients and Adam's moments"});
  // Products beyond int64 are estimated, not overflowed.
  expect_throw_naming<InvalidArgument>(
      [] {
        Model m({.kind = ModelKind::gat,
                 .in_channels = 1,
                 .hidden = int64_t{1} << 40,
                 .heads = int64_t{1} << 40,
                 .num_classes = 2});
      },
      {"weights"});
  Model fine({.kind = ModelKind::gat, .in_channels = 1433, .hidden = 64, .heads = 8, .num_classes = 7});
  EXPECT_EQ(fine.parameters().size(), 8u);  // conv1 lin, att_src, att_dst, bias; conv2 the same
}

TEST(Model, ForwardRejectsAGraphWithoutSelfLoopsWhenTheyAreConfigured) {
  const Toy t = toy(6);
  Model model({.kind = ModelKind::gat, .in_channels = 6, .hidden = 4, .heads = 2, .num_classes = 3});
  expect_throw_naming<InvalidArgument>([&] { (void)logits_of(model, t.raw, t.features, 0, false); },
                                       {"conv1", "prepare_graph"});
}

TEST(Model, EdgeFeaturesReachEveryConvLayerWithGradients) {
  const Toy t = toy(6);
  const Tensor raw_attr = edgeattn::testing::random_tensor({t.raw.num_edges(), 2}, 7);
  for (ModelKind kind : {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer}) {
    SCOPED_TRACE(to_string(kind));
    Model model({.kind = kind,
                 .in_channels = 6,
                 .hidden = 3,
                 .heads = 2,
                 .num_classes = 3,
                 .dropout = 0.f,
                 .attention_dropout = 0.f,
                 .negative_slope = kind == ModelKind::gatv2 ? 1.f : 0.2f,  // no kinks for the differences
                 .add_self_loops = kind != ModelKind::transformer,
                 .edge_dim = 2,
                 .seed = 4});
    const auto names = edgeattn::testing::names_and_shapes(model.parameters());
    EXPECT_EQ(names.at("conv1.lin_edge.weight"), "[6, 2]");
    EXPECT_EQ(names.at("conv2.lin_edge.weight"), "[3, 2]");
    const PreparedGraph p = model.prepare_graph(t.raw, raw_attr);
    Tape tape;
    expect_throw_naming<InvalidArgument>([&] { (void)model.forward(tape, p.graph, t.features, 0); },
                                         {"edge_dim = 2", "edge attributes"});
    Parameter attr{"edge_attr", Tensor(p.edge_attr), {}};
    auto params = model.parameters();
    params.push_back(&attr);
    EXPECT_TRUE(edgeattn::testing::check_gradients(params, [&](Tape& tp) {
      return edgeattn::testing::weighted_sum(
          tp, model.forward(tp, p.graph, t.features, EdgeFeatures{tp.parameter(attr)}, 3), 5);
    }));
    const SampledSubgraph batch = sample_neighbors(t.raw, std::vector<int64_t>{1, 2}, {.fanouts = {2, 2}});
    expect_throw_naming<InvalidArgument>([&] { (void)model.forward(tape, batch, t.features, 0); },
                                         {"edge_dim = 2", "sampled graph's edge attributes"});
  }
}

// Layer-wise inference runs the same layers on the same inputs as the eval-mode forward, one
// tape per layer: the logits agree bit for bit, for every kind, dense and sparse features, three
// layers (so a middle layer too) and edge attributes.
TEST(Model, InferenceEqualsTheEvalForwardBitForBit) {
  const Toy t = toy(8);
  const data::Features sparse(CsrMatrix::from_dense(t.features.dense()));
  for (ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer}) {
    SCOPED_TRACE(to_string(kind));
    Model model(
        {.kind = kind, .in_channels = 6, .hidden = 4, .heads = 3, .num_classes = 3, .layers = 3, .seed = 3});
    const Graph g = model.prepare_graph(t.raw);
    for (const data::Features* x : {&t.features, &sparse}) {
      const Tensor expected = logits_of(model, g, *x, 7, false);
      const Tensor got = model.inference(g, *x);
      ASSERT_EQ(got.shape(), (Shape{20, 3}));
      EXPECT_EQ(values(got), values(expected)) << (x->is_sparse() ? "sparse" : "dense");
    }
  }
  const Tensor raw_attr = edgeattn::testing::random_tensor({t.raw.num_edges(), 2}, 9);
  for (ModelKind kind : {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer}) {
    SCOPED_TRACE(std::string(to_string(kind)) + " with edge attributes");
    Model model({.kind = kind,
                 .in_channels = 6,
                 .hidden = 3,
                 .heads = 2,
                 .num_classes = 3,
                 .edge_dim = 2,
                 .seed = 1});
    const PreparedGraph p = model.prepare_graph(t.raw, raw_attr);
    Tape tape;
    tape.training = false;
    const Tensor expected =
        tape.value(model.forward(tape, p.graph, t.features, EdgeFeatures{tape.constant_ref(p.edge_attr)}, 0));
    EXPECT_EQ(values(model.inference(p.graph, t.features, p.edge_attr)), values(expected));
    expect_throw_naming<InvalidArgument>([&] { (void)model.inference(p.graph, t.features); },
                                         {"Model::inference", "edge_dim = 2", "edge attributes"});
  }
}

// What layer-wise inference is for: memory for one layer at a time, whatever the depth, where the
// eval-mode forward's grows with every layer. Measured as tensor storage in use
// (core/tensor.hpp) beyond the inputs, on 3000 nodes with hidden width 64.
TEST(Model, InferenceMemoryDoesNotGrowWithDepth) {
  const Graph raw = edgeattn::testing::uniform_graph(3000, 3000, 30000, 4);
  const data::Features x(edgeattn::testing::random_tensor({3000, 32}, 5));
  const size_t layer_out = size_t{3000} * 64 * sizeof(float);
  for (ModelKind kind :
       {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer}) {
    SCOPED_TRACE(to_string(kind));
    size_t forward_peak[2], inference_peak[2];
    for (int d = 0; d < 2; ++d) {
      Model model({.kind = kind,
                   .in_channels = 32,
                   .hidden = 16,
                   .heads = 4,
                   .num_classes = 5,
                   .layers = 3 * (d + 1)});
      const Graph g = model.prepare_graph(raw);
      reset_tensor_peak();
      size_t base = tensor_cache_stats().in_use_bytes;
      Tensor expected;
      {
        Tape tape;
        tape.training = false;
        expected = tape.value(model.forward(tape, g, x, 0));
      }
      forward_peak[d] = tensor_cache_stats().peak_in_use_bytes - base;
      reset_tensor_peak();
      base = tensor_cache_stats().in_use_bytes;
      const Tensor got = model.inference(g, x);
      inference_peak[d] = tensor_cache_stats().peak_in_use_bytes - base;
      EXPECT_EQ(values(got), values(expected));
    }
    EXPECT_EQ(inference_peak[1], inference_peak[0]);              // 6 layers need what 3 need
    EXPECT_GE(forward_peak[1], forward_peak[0] + 3 * layer_out);  // at least an output per extra layer
    EXPECT_LT(2 * inference_peak[1], forward_peak[1]) << inference_peak[1] << " vs " << forward_peak[1];
  }
}

TEST(Model, InferenceChecksItsInputs) {
  const Toy t = toy(9);
  Model model({.kind = ModelKind::gat, .in_channels = 6, .hidden = 4, .heads = 2, .num_classes = 3});
  const Graph g = model.prepare_graph(t.raw);
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)model.inference(g, t.features, edgeattn::testing::random_tensor({g.num_edges(), 2}, 1));
      },
      {"Model::inference", "no edge_dim"});
  const data::Features narrow(edgeattn::testing::random_tensor({20, 5}, 2));
  expect_throw_naming<ShapeError>([&] { (void)model.inference(g, narrow); },
                                  {"Model::inference", "[20, 5]", "in_channels + pe_dim=6"});
  expect_throw_naming<InvalidArgument>([&] { (void)model.inference(t.raw, t.features); },
                                       {"conv1", "prepare_graph"});
}

TEST(ModelConfig, JsonRoundTripsEveryField) {
  const ModelConfig cfg{.kind = ModelKind::graph_transformer,
                        .in_channels = 1433,
                        .hidden = 16,
                        .heads = 4,
                        .out_heads = 2,
                        .num_classes = 7,
                        .layers = 3,
                        .dropout = 0.35f,
                        .attention_dropout = 0.1f,
                        .negative_slope = 0.25f,
                        .residual = true,
                        .add_self_loops = false,
                        .share_weights = true,
                        .beta = true,
                        .pre_norm = true,
                        .ffn_hidden = 128,
                        .pe = PositionalEncodingKind::laplacian,
                        .pe_dim = 8,
                        .seed = 18446744073709551615ull};
  const std::string json = cfg.to_json();
  EXPECT_EQ(ModelConfig::from_json(json), cfg);
  EXPECT_EQ(ModelConfig::from_json(" " + json + "\n"), cfg);  // surrounding whitespace is fine
  EXPECT_NE(json.find("\"dropout\":0.35"), std::string::npos);
  const ModelConfig with_edges{.kind = ModelKind::gatv2, .in_channels = 5, .num_classes = 2, .edge_dim = 3};
  EXPECT_EQ(ModelConfig::from_json(with_edges.to_json()), with_edges);
}

TEST(ModelConfig, EdgeDimIsOptionalInOlderModelFilesAndChecked) {
  const ModelConfig plain{.in_channels = 5, .num_classes = 2};
  std::string json = plain.to_json();
  json.erase(json.find("\"edge_dim\":0,"), std::string("\"edge_dim\":0,").size());
  EXPECT_EQ(ModelConfig::from_json(json), plain);  // written before edge_dim existed: none
  expect_throw_naming<InvalidArgument>(
      [] { ModelConfig{.in_channels = 5, .num_classes = 2, .edge_dim = -1}.validate(); }, {"edge_dim is -1"});
  expect_throw_naming<InvalidArgument>(
      [] {
        ModelConfig{.kind = ModelKind::graph_transformer, .in_channels = 5, .num_classes = 2, .edge_dim = 2}
            .validate();
      },
      {"graph_transformer kind takes no edge attributes"});
}

TEST(ModelConfig, FromJsonIsStrict) {
  ModelConfig valid{.in_channels = 5, .num_classes = 2};
  const std::string json = valid.to_json();
  EXPECT_EQ(ModelConfig::from_json(json), valid);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = json;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expect_throw_naming<InvalidArgument>([&] { (void)ModelConfig::from_json(replaced("\"heads\":8,", "")); },
                                       {"missing key", "heads"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)ModelConfig::from_json(replaced("\"heads\":8,", "\"heads\":8,\"color\":1,")); },
      {"unknown key", "color"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)ModelConfig::from_json(replaced("\"heads\":8,", "\"heads\":8,\"heads\":8,")); },
      {"twice", "heads"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)ModelConfig::from_json(replaced("\"heads\":8", "\"heads\":\"8\"")); },
      {"heads", "a number"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)ModelConfig::from_json(replaced("\"heads\":8", "\"heads\":8.5")); }, {"heads", "8.5"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)ModelConfig::from_json(replaced("\"kind\":\"gat\"", "\"kind\":\"gcn\"")); },
      {"gcn", "gatv2"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)ModelConfig::from_json(replaced("\"dropout\":0.6", "\"dropout\":1.5")); },
      {"dropout", "1.5"});
  expect_throw_naming<InvalidArgument>([&] { (void)ModelConfig::from_json(json + "x"); }, {"offset", "end"});
  expect_throw_naming<InvalidArgument>([&] { (void)ModelConfig::from_json(json.substr(0, json.size() - 1)); },
                                       {"offset"});
  expect_throw_naming<InvalidArgument>([&] { (void)ModelConfig::from_json(""); }, {"offset 0", "'{'"});
}

}  // namespace
}  // namespace edgeattn::nn
