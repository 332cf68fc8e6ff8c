// Training checkpoints: a run stopped and resumed from its checkpoint ends with the weights and
// the history of the uninterrupted run, bit for bit (with dropout and early stopping on), and a
// file that is no training checkpoint, or does not fit the model, is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

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

// Equal, or both NaN (the metrics of epochs that eval_every skipped).
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// A resumed run's history, kept epoch and scores are the uninterrupted run's.
void expect_same_run(const TrainResult& got, const TrainResult& want) {
  ASSERT_EQ(got.history.size(), want.history.size());
  for (size_t e = 0; e < want.history.size(); ++e) {
    EXPECT_EQ(got.history[e].train_loss, want.history[e].train_loss) << e;
    EXPECT_TRUE(same(got.history[e].val_loss, want.history[e].val_loss)) << e;
    EXPECT_TRUE(same(got.history[e].test_accuracy, want.history[e].test_accuracy)) << e;
    EXPECT_EQ(got.history[e].evaluated, want.history[e].evaluated) << e;
  }
  EXPECT_EQ(got.best_epoch, want.best_epoch);
  EXPECT_EQ(got.test_accuracy, want.test_accuracy);
}

TEST(TrainingState, AResumedRunIsTheUninterruptedRunBitForBit) {
  for (const int64_t every : {1, 3}) {
    SCOPED_TRACE("eval_every " + std::to_string(every));
    const CoraRun s;
    TrainConfig tc;
    tc.epochs = 24;
    tc.patience = 4;  // early stopping on: its snapshot and counters are part of the state
    tc.seed = 7;
    tc.eval_every = every;
    nn::Model straight(s.cfg);
    const TrainResult want = s.run(straight, tc);

    const testing::TempDir dir;
    const auto file = dir / "run.ckpt";
    nn::Model first(s.cfg);
    // Interrupted after 9 epochs (an evaluated epoch for both eval_every: a shorter run also
    // evaluates its own last epoch, which the 24-epoch run would not at every other epoch).
    TrainConfig stop_early = tc;
    stop_early.epochs = 9;
    stop_early.checkpoint_every = 3;
    int64_t written = 0;
    stop_early.on_checkpoint = [&](const TrainingState& st) {
      save_training_state(file, first.parameters(), st, s.cfg.to_json());
      ++written;
    };
    s.run(first, stop_early);
    EXPECT_EQ(written, 3);  // after epochs 3, 6 and 9

    nn::Model second(s.cfg);
    const LoadedTrainingState loaded = load_training_state(file, second.parameters());
    EXPECT_EQ(loaded.metadata, s.cfg.to_json() + "\n");
    EXPECT_EQ(loaded.state.next_epoch, 9);
    TrainConfig resume = tc;
    resume.resume = &loaded.state;
    const TrainResult got = s.run(second, resume);

    expect_same_weights(straight, second);
    expect_same_run(got, want);
    EXPECT_TRUE(want.history[static_cast<size_t>(want.best_epoch)].evaluated);
    // The checkpoint is also a model file: its weights load as a model's (the optimiser's and
    // early stopping's tensors are skipped).
    nn::Model as_model(s.cfg);
    EXPECT_NO_THROW(load_parameters(load_checkpoint(file), as_model.parameters()));
  }
}

// A run evaluates its last epoch also off eval_every's schedule. Its checkpoint keeps early
// stopping's state from before that evaluation (TrainingState::final_evaluation_pending): resumed
// to more epochs, the run goes on as the uninterrupted longer run, which never evaluated that
// epoch; resumed to the same epochs, it ends as the run itself did.
TEST(TrainingState, AResumeAfterAnOffScheduleLastEvaluationIsTheUninterruptedRun) {
  const CoraRun s;
  TrainConfig tc;
  tc.patience = 4;
  tc.seed = 7;
  tc.eval_every = 3;
  const testing::TempDir dir;
  const auto file = dir / "run.ckpt";
  // 10 epochs: the schedule evaluates epochs 2, 5 and 8; epoch 9 is evaluated as the last.
  TrainConfig ten = tc;
  ten.epochs = 10;
  ten.checkpoint_every = 10;
  nn::Model first(s.cfg);
  ten.on_checkpoint = [&](const TrainingState& st) {
    EXPECT_TRUE(st.final_evaluation_pending);
    EXPECT_FALSE(st.stopped);
    save_training_state(file, first.parameters(), st, s.cfg.to_json());
  };
  const TrainResult ten_result = s.run(first, ten);
  ASSERT_EQ(ten_result.history.size(), 10u);
  ASSERT_TRUE(ten_result.history[9].evaluated);
  for (const int64_t epochs : {24, 10}) {
    SCOPED_TRACE("resumed to " + std::to_string(epochs) + " epochs");
    TrainConfig whole = tc;
    whole.epochs = epochs;
    nn::Model straight(s.cfg);
    const TrainResult want = s.run(straight, whole);
    nn::Model second(s.cfg);
    const LoadedTrainingState loaded = load_training_state(file, second.parameters());
    EXPECT_TRUE(loaded.state.final_evaluation_pending);
    TrainConfig resume = whole;
    resume.resume = &loaded.state;
    const TrainResult got = s.run(second, resume);
    expect_same_weights(straight, second);
    expect_same_run(got, want);
  }
  // A pending evaluation needs an evaluated last epoch to apply.
  nn::Model third(s.cfg);
  LoadedTrainingState bad = load_training_state(file, third.parameters());
  bad.state.history.back().evaluated = false;
  TrainConfig resume = ten;
  resume.on_checkpoint = nullptr;
  resume.resume = &bad.state;
  testing::expect_throw_naming<InvalidArgument>([&] { s.run(third, resume); },
                                                {"evaluation of its last epoch pending", "not evaluated"});
}

TEST(TrainingState, EvaluatingEveryThirdEpochTrainsTheSameWeightsAndScoresThoseEpochs) {
  const CoraRun s;
  TrainConfig tc;
  tc.epochs = 10;
  tc.patience = 0;
  tc.seed = 7;
  nn::Model every(s.cfg);
  const TrainResult all = s.run(every, tc);
  TrainConfig third_only = tc;
  third_only.eval_every = 3;
  nn::Model third(s.cfg);
  const TrainResult some = s.run(third, third_only);
  expect_same_weights(every, third);  // evaluation leaves training alone
  ASSERT_EQ(some.history.size(), 10u);
  for (size_t e = 0; e < 10; ++e) {
    const EpochStats &a = all.history[e], &b = some.history[e];
    EXPECT_EQ(b.train_loss, a.train_loss) << e;
    const bool scored = e == 2 || e == 5 || e == 8 || e == 9;  // every third, and the last
    EXPECT_EQ(b.evaluated, scored) << e;
    if (scored) {
      EXPECT_EQ(b.val_loss, a.val_loss) << e;
      EXPECT_EQ(b.test_accuracy, a.test_accuracy) << e;
    } else {
      EXPECT_TRUE(std::isnan(b.val_loss) && std::isnan(b.train_accuracy) && std::isnan(b.test_accuracy)) << e;
      EXPECT_EQ(b.eval_seconds, 0.0) << e;
    }
  }
  EXPECT_EQ(some.best_epoch, 9);
  EXPECT_EQ(some.test_accuracy, all.test_accuracy);
  // With early stopping the kept weights are an evaluated epoch's: their scores are its scores.
  TrainConfig stopping = third_only;
  stopping.epochs = 60;
  stopping.patience = 6;
  nn::Model stopped(s.cfg);
  const TrainResult r = s.run(stopped, stopping);
  const EpochStats& best = r.history[static_cast<size_t>(r.best_epoch)];
  EXPECT_TRUE(best.evaluated);
  EXPECT_EQ(r.val_loss, best.val_loss);
  EXPECT_EQ(r.test_accuracy, best.test_accuracy);
  TrainConfig bad = tc;
  bad.eval_every = 0;
  nn::Model m(s.cfg);
  testing::expect_throw_naming<InvalidArgument>([&] { s.run(m, bad); }, {"eval_every is 0", ">= 1"});
}

TEST(TrainingState, CheckpointsWrittenBeforeTheEvaluatedFlagStillLoad) {
  const CoraRun s;
  const testing::TempDir dir;
  nn::Model model(s.cfg);
  TrainConfig tc;
  tc.epochs = 3;
  tc.patience = 0;
  tc.checkpoint_every = 3;
  tc.on_checkpoint = [&](const TrainingState& st) {
    save_training_state(dir / "run.ckpt", model.parameters(), st, s.cfg.to_json());
  };
  const TrainResult r = s.run(model, tc);
  Checkpoint c = load_checkpoint(dir / "run.ckpt");
  // The earlier layout: nine fields per history entry (no trailing ":1").
  for (size_t at = 0; (at = c.metadata.find(":1;", at)) != std::string::npos;) c.metadata.erase(at, 2);
  const size_t last = c.metadata.rfind(":1\n");
  ASSERT_NE(last, std::string::npos);
  c.metadata.erase(last, 2);
  const LoadedTrainingState old = load_training_state(c, "old.ckpt", model.parameters());
  ASSERT_EQ(old.state.history.size(), 3u);
  for (size_t e = 0; e < 3; ++e) {
    EXPECT_TRUE(old.state.history[e].evaluated);
    EXPECT_EQ(old.state.history[e].val_loss, r.history[e].val_loss);
  }
  Checkpoint bad = load_checkpoint(dir / "run.ckpt");
  bad.metadata.replace(bad.metadata.rfind(":1\n"), 2, ":7");
  testing::expect_throw_naming<ParseError>([&] { load_training_state(bad, "bad.ckpt", model.parameters()); },
                                           {"bad.ckpt", "ends in 7"});
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
