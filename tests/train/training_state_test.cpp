// Training checkpoints: a run stopped and resumed from its checkpoint ends with the weights and
// the history of the uninterrupted run, bit for bit (with dropout and early stopping on), and a
// file that is no training checkpoint, or does not fit the model, is refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/planetoid.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/train/checkpoint.hpp"
#include "edgeattn/train/trainer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::train {
namespace {

struct CoraRun {
  data::Dataset ds;
  nn::ModelConfig cfg;
  CoraRun() {
    ds = data::load_planetoid(std::filesystem::path(EDGEATTN_SOURCE_DIR) / "datasets/cora/planetoid", "cora");
    data::normalize_features(ds.features);
    cfg = {.kind = nn::ModelKind::gat,
           .in_channels = ds.num_features(),
           .num_classes = ds.num_classes(),
           .seed = 7};
  }
  TrainResult run(nn::Model& model, const TrainConfig& tc) const {
    const Graph g = model.prepare_graph(ds.graph);
    const data::Features x = model.prepare_features(ds.graph, ds.features);
    const auto forward = [&](autograd::Tape& t, uint64_t s) { return model.forward(t, g, x, s); };
    return fit(forward, model.parameters(), ds.labels, ds.split(), tc);
  }
};

void expect_same_weights(nn::Model& a, nn::Model& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t k = 0; k < pa.size(); ++k)
    EXPECT_EQ(std::memcmp(pa[k]->value.data(), pb[k]->value.data(), sizeof(float) * pa[k]->value.numel()), 0)
        << pa[k]->name;
}

TEST(TrainingState, AResumedRunIsTheUninterruptedRunBitForBit) {
  const CoraRun s;
  TrainConfig tc;
  tc.epochs = 24;
  tc.patience = 4;  // early stopping on: its snapshot and counters are part of the state
  tc.seed = 7;
  nn::Model straight(s.cfg);
  const TrainResult want = s.run(straight, tc);

  const testing::TempDir dir;
  const auto file = dir / "run.ckpt";
  nn::Model first(s.cfg);
  TrainConfig stop_early = tc;
  stop_early.epochs = 10;
  stop_early.checkpoint_every = 5;
  int64_t written = 0;
  stop_early.on_checkpoint = [&](const TrainingState& st) {
    save_training_state(file, first.parameters(), st, s.cfg.to_json());
    ++written;
  };
  s.run(first, stop_early);
  EXPECT_EQ(written, 2);  // after epochs 5 and 10

  nn::Model second(s.cfg);
  const LoadedTrainingState loaded = load_training_state(file, second.parameters());
  EXPECT_EQ(loaded.metadata, s.cfg.to_json() + "\n");
  EXPECT_EQ(loaded.state.next_epoch, 10);
  TrainConfig resume = tc;
  resume.resume = &loaded.state;
  const TrainResult got = s.run(second, resume);

  expect_same_weights(straight, second);
  ASSERT_EQ(got.history.size(), want.history.size());
  for (size_t e = 0; e < want.history.size(); ++e) {
    EXPECT_EQ(got.history[e].train_loss, want.history[e].train_loss) << e;
    EXPECT_EQ(got.history[e].val_loss, want.history[e].val_loss) << e;
    EXPECT_EQ(got.history[e].test_accuracy, want.history[e].test_accuracy) << e;
  }
  EXPECT_EQ(got.best_epoch, want.best_epoch);
  EXPECT_EQ(got.test_accuracy, want.test_accuracy);
  // The checkpoint is also a model file: its weights load as a model's (the optimiser's and
  // early stopping's tensors are skipped).
  nn::Model as_model(s.cfg);
  EXPECT_NO_THROW(load_parameters(load_checkpoint(file), as_model.parameters()));
}

TEST(TrainingState, PlainModelFilesAndOtherModelsAreRefused) {
  const CoraRun s;
  const testing::TempDir dir;
  nn::Model model(s.cfg);
  save_parameters(dir / "plain.model", model.parameters(), s.cfg.to_json());
  testing::expect_throw_naming<ParseError>(
      [&] { load_training_state(dir / "plain.model", model.parameters()); },
      {"plain.model", "without training state"});
  TrainConfig tc;
  tc.epochs = 2;
  tc.patience = 0;
  tc.checkpoint_every = 1;
  tc.on_checkpoint = [&](const TrainingState& st) {
    save_training_state(dir / "run.ckpt", model.parameters(), st, s.cfg.to_json());
  };
  s.run(model, tc);
  nn::ModelConfig wider = s.cfg;
  wider.hidden = 16;
  nn::Model other(wider);
  testing::expect_throw_naming<ShapeError>([&] { load_training_state(dir / "run.ckpt", other.parameters()); },
                                           {"conv1.lin.weight"});
  Adam adam(model.parameters(), {});
  testing::expect_throw_naming<InvalidArgument>([&] { adam.restore({}); }, {"moments for 0", "parameters"});
}

}  // namespace
}  // namespace edgeattn::train
