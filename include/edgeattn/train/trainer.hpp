// Transductive node classification: the training loops, full-batch (fit) and mini-batch over
// sampled neighbourhoods (fit_minibatch).
//
// Each epoch runs one training step (forward on a fresh tape in training mode, loss over the
// train nodes, backward, optimiser step) and one evaluation (forward in eval mode: no dropout),
// which gives train/val/test loss and accuracy (or, with TrainConfig::eval_every = k, only every
// k-th epoch and the last: evaluation is a full-graph forward, a sizeable cost beside a sampled
// mini-batch epoch). Early stopping watches the validation metrics
// (train/early_stopping.hpp) and the best weights are restored at the end. Single-label data is
// trained with cross-entropy and scored by accuracy; multi-label data with sigmoid + BCE and
// scored by micro-F1, or by ROC-AUC when data::Labels::eval_metric says "rocauc" (OGB's
// ogbn-proteins). The accuracy fields hold that metric (Labels::metric() names it).
//
// The model is any function from a tape and a step seed to logits [N, C], so the loop does not
// depend on how the model is built. Everything is deterministic for a given seed.
//
// Example:
//   auto model = edgeattn::nn::Model(config);               // e.g. the GAT paper's Cora set-up
//   const edgeattn::Graph g = model.prepare_graph(ds.graph);
//   auto forward = [&](edgeattn::autograd::Tape& t, uint64_t seed) {
//     return model.forward(t, g, ds.features, seed);
//   };
//   edgeattn::train::TrainResult r = edgeattn::train::fit(forward, model.parameters(), ds.labels, ds.split(),
//   {}); std::printf("test accuracy %.3f\n", r.test_accuracy);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/data/dataset.hpp"
#include "edgeattn/train/early_stopping.hpp"
#include "edgeattn/train/optimizer.hpp"

namespace edgeattn::train {

/// Builds the logits [N, C] on `tape` (honouring tape.training); `step_seed` keys dropout.
using ForwardFn = std::function<autograd::Var(autograd::Tape& tape, uint64_t step_seed)>;

struct EpochStats {
  int64_t epoch = 0;
  double train_loss = 0, train_accuracy = 0;
  double val_loss = 0, val_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double train_seconds = 0;  ///< the training step alone (forward + backward + optimiser)
  double eval_seconds = 0;   ///< the evaluation forward and metrics
  /// False for an epoch TrainConfig::eval_every skipped: train_accuracy and the val_* and test_*
  /// fields are then NaN and eval_seconds 0 (train_loss, the step's own, is always there).
  bool evaluated = true;
};

struct TrainingState;

struct TrainConfig {
  int64_t epochs = 1000;   ///< upper bound; early stopping usually ends sooner
  int64_t patience = 100;  ///< 0 disables early stopping (all epochs run, last weights kept)
  EarlyStoppingConfig::Criterion criterion = EarlyStoppingConfig::Criterion::loss_or_accuracy;
  AdamConfig optimizer{.lr = 0.005f, .weight_decay = 5e-4f};  ///< the GAT paper's Cora set-up
  uint64_t seed = 0;                                          ///< keys every dropout mask (with the epoch)
  /// Evaluate every eval_every-th epoch (epochs eval_every - 1, 2 eval_every - 1, ...) and the last
  /// one of config.epochs; >= 1. Early stopping and the kept weights then consider the evaluated
  /// epochs only; patience still counts epochs (an evaluation without progress adds the epochs
  /// since the previous one). Training itself does not depend on it: with patience 0 the weights
  /// are the same bit for bit for any eval_every. On large graphs evaluation (a full-graph
  /// forward) can cost a sizeable part of a mini-batch epoch.
  int64_t eval_every = 1;
  /// Split the training steps' time by op (autograd::Tape::profiling) into TrainResult::op_times.
  bool profile = false;
  /// Called after every epoch (progress bars, logging); return false to stop training.
  std::function<bool(const EpochStats&)> on_epoch;
  /// With checkpoint_every > 0: called after every checkpoint_every-th epoch and after the last
  /// one with the run's state (the parameters then hold the current weights), e.g. to write it
  /// with save_training_state (train/checkpoint.hpp).
  int64_t checkpoint_every = 0;
  std::function<void(const TrainingState&)> on_checkpoint;
  /// Continues the run `resume` describes: the parameters must already hold its weights
  /// (load_training_state). Epochs before resume->next_epoch are not run again and the run goes on
  /// exactly as the uninterrupted one would have (the same weights, bit for bit: every dropout
  /// mask and shuffle is keyed by the seed and the epoch). Not owned; must outlive fit().
  const TrainingState* resume = nullptr;
};

/// Where a training run stands after an epoch: with the parameters' values, enough to continue
/// it exactly (TrainConfig::resume).
struct TrainingState {
  int64_t next_epoch = 0;  ///< the first epoch still to run
  bool stopped = false;    ///< early stopping ended the run: resuming runs no further epoch
  Adam::State optimizer;
  EarlyStopping::State early_stopping;
  std::vector<EpochStats> history;  ///< the epochs run so far
  double train_seconds = 0;         ///< their training steps' total time
  /// The last epoch of history was evaluated only because it was the run's last (off
  /// TrainConfig::eval_every's schedule). early_stopping and stopped are then the state before
  /// that evaluation: a run resumed to more epochs does not evaluate that epoch, as the
  /// uninterrupted longer run does not, and one resumed to the same epochs applies it again from
  /// the recorded metrics, as the run itself did.
  bool final_evaluation_pending = false;
};

struct TrainResult {
  std::vector<EpochStats> history;
  int64_t best_epoch = -1;  ///< the epoch whose weights were kept
  int64_t epochs_run = 0;
  double val_accuracy = 0, val_loss = 0;  ///< of the kept weights
  double test_accuracy = 0, test_loss = 0;
  double seconds_per_epoch = 0;  ///< mean training-step time (forward + backward + update)
  double total_seconds = 0;      ///< wall time of fit(), evaluation included
  /// With TrainConfig::profile: training-step time per op over all epochs, plus "adam_step" for
  /// the optimiser and "loss+backward seed" folded into the loss op's entry.
  std::map<std::string, autograd::OpTime> op_times;
};

/// Trains `parameters` (they must be what `forward` reads) on the split's train nodes.
TrainResult fit(const ForwardFn& forward, std::vector<autograd::Parameter*> parameters,
                const data::Labels& labels, const data::Split& split, const TrainConfig& config);

/// Mini-batch training: the logits [seeds.size(), C] of a batch of training nodes (row k for
/// seeds[k]) on `tape` (in training mode), e.g. nn::Model::forward on sample_neighbors(graph,
/// seeds, {.fanouts, .seed = step_seed}); `step_seed` differs per batch and epoch.
using BatchForwardFn =
    std::function<autograd::Var(autograd::Tape& tape, std::span<const int64_t> seeds, uint64_t step_seed)>;

/// Mini-batch training (neighbour sampling; PyG's NeighborLoader loop): every epoch shuffles the
/// split's train nodes (a pure function of config.seed and the epoch) and takes one optimiser
/// step per batch of `batch_size` seeds (the last batch may be smaller) with `batch_forward`.
/// EpochStats::train_loss is the mean over the epoch's seeds. Evaluation, early stopping and the
/// result are as fit()'s, with `forward` the whole-graph forward in eval mode, i.e. exact
/// full-neighbourhood inference: e.g. nn::Model::inference when !tape.training (layer by layer,
/// the least memory). InvalidArgument when batch_size < 1 (and as fit).
///
/// Example (GraphSAGE-style fan-outs 10, 5 for a 2-layer model):
///   auto batch = [&](autograd::Tape& t, std::span<const int64_t> seeds, uint64_t s) {
///     return model.forward(t, sample_neighbors(ds.graph, seeds, {.fanouts = {10, 5}, .seed = s}), x, s);
///   };
///   auto forward = [&](autograd::Tape& t, uint64_t s) {
///     return t.training ? model.forward(t, g, x, s) : t.constant(model.inference(g, x));
///   };
///   TrainResult r = fit_minibatch(batch, forward, model.parameters(), ds.labels, ds.split(), 512, {});
TrainResult fit_minibatch(const BatchForwardFn& batch_forward, const ForwardFn& forward,
                          std::vector<autograd::Parameter*> parameters, const data::Labels& labels,
                          const data::Split& split, int64_t batch_size, const TrainConfig& config);

/// One epoch of training for fit_with(): `tape` is cleared and in training mode on entry; record
/// the forward, backpropagate and step `optimizer` (once, or once per batch) and return the
/// epoch's training loss. `result` takes op times when profiling (TrainConfig::profile).
using EpochFn =
    std::function<double(autograd::Tape& tape, int64_t epoch, Adam& optimizer, TrainResult& result)>;

/// The loop fit() and fit_minibatch() share, for training schemes of one's own (distributed
/// training, dist/distributed_training.hpp): per epoch `train_epoch`, then an evaluation of
/// `forward` (eval mode; logits whose rows `labels` and `split` index), early stopping, and the
/// kept weights' metrics at the end. `who` names the caller in error messages.
TrainResult fit_with(const char* who, const EpochFn& train_epoch, const ForwardFn& forward,
                     std::vector<autograd::Parameter*> parameters, const data::Labels& labels,
                     const data::Split& split, const TrainConfig& config);

/// What fit() minimises: the mean cross-entropy of logits [N, C] over `nodes`, or for multi-label
/// data BCE-with-logits against Labels::multi_hot -> [].
autograd::Var training_loss(autograd::Tape& tape, autograd::Var logits, const data::Labels& labels,
                            std::span<const int64_t> nodes);

/// The labels of `nodes`, in that order: row k of the result is node nodes[k]'s.
data::Labels select_labels(const data::Labels& labels, std::span<const int64_t> nodes);

/// `nodes` in an order that is a pure function of (nodes, seed) (Fisher-Yates, counter-based).
std::vector<int64_t> shuffled(std::span<const int64_t> nodes, uint64_t seed);

struct Evaluation {
  double loss = 0, accuracy = 0;
};

/// Loss and the labels' metric (accuracy, micro-F1 or ROC-AUC: Labels::metric()) of the logits
/// over `nodes` (0, 0 when empty).
Evaluation evaluate(const autograd::Tape& tape, autograd::Var logits, const data::Labels& labels,
                    std::span<const int64_t> nodes);

/// The step seed of an epoch: distinct per (seed, epoch), so masks never repeat across epochs.
uint64_t step_seed(uint64_t seed, int64_t epoch);

}  // namespace edgeattn::train
