#include "edgeattn/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "edgeattn/autograd/ops/loss.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/train/metrics.hpp"

namespace edgeattn::train {
namespace {

using Clock = std::chrono::steady_clock;
// The 128-bit product of Lemire's bounded draw (a GCC/Clang extension; __extension__ says so).
__extension__ using uint128 = unsigned __int128;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

autograd::Var training_loss(autograd::Tape& tape, autograd::Var logits, const data::Labels& labels,
                            std::span<const int64_t> nodes) {
  if (labels.multi_label())
    return autograd::bce_with_logits(tape, logits, tape.constant_ref(labels.multi_hot), nodes);
  return autograd::cross_entropy(tape, logits, labels.classes, nodes);
}

uint64_t step_seed(uint64_t seed, int64_t epoch) {
  const auto r =
      philox4x32(seed, {static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32), 0x5eed, 0});
  return (uint64_t{r[0]} << 32) | r[1];
}

Evaluation evaluate(const autograd::Tape& tape, autograd::Var logits, const data::Labels& labels,
                    std::span<const int64_t> nodes) {
  Evaluation e;
  if (nodes.empty()) return e;
  // Loss on a scratch tape over a constant copy-free reference to the logits.
  autograd::Tape scratch;
  scratch.training = false;
  const autograd::Var x = scratch.constant_ref(tape.value(logits));
  e.loss = static_cast<double>(scratch.value(training_loss(scratch, x, labels, nodes)).data()[0]);
  e.accuracy = score(labels.metric(), tape.value(logits), labels, nodes);
  return e;
}

TrainResult fit_with(const char* who, const EpochFn& train_epoch, const ForwardFn& forward,
                     std::vector<autograd::Parameter*> parameters, const data::Labels& labels,
                     const data::Split& split, const TrainConfig& config) {
  if (config.epochs < 1) raise<InvalidArgument>(who, ": epochs is ", config.epochs, ", expected >= 1");
  if (config.patience < 0) raise<InvalidArgument>(who, ": patience is ", config.patience, ", expected >= 0");
  if (config.eval_every < 1)
    raise<InvalidArgument>(who, ": eval_every is ", config.eval_every, ", expected >= 1 (1: every epoch)");
  if (split.train.empty()) raise<InvalidArgument>(who, ": the split has no training nodes");
  // Training is a phase of its own: the tensor blocks that loading and preprocessing left cached
  // (a renumbered copy's old features, say) go back to the system, and the cache's headroom is
  // measured from the training steps' own high-water mark, not from a transient peak before
  // them (with --reorder degree on a 1M-node graph, 490 MB of stale features stayed resident).
  release_tensor_cache();
  const auto start = Clock::now();
  Adam optimizer(parameters, config.optimizer);
  EarlyStopping stopper(parameters,
                        {.patience = std::max<int64_t>(config.patience, 1), .criterion = config.criterion});
  TrainResult result;
  double train_seconds = 0;
  int64_t first_epoch = 0;
  int64_t last_evaluated = -1;  // the latest evaluated epoch: early stopping counts the epochs since
  if (const TrainingState* r = config.resume) {
    if (r->next_epoch < 0 || static_cast<int64_t>(r->history.size()) != r->next_epoch)
      raise<InvalidArgument>(who, ": the resumed state is at epoch ", r->next_epoch, " with ",
                             r->history.size(), " epochs of history");
    if (!r->stopped && config.epochs < r->next_epoch)
      raise<InvalidArgument>(
          who, ": epochs is ", config.epochs, ", but the resumed state has run ", r->next_epoch,
          " epochs already (epochs counts from the start of the run: give at least ", r->next_epoch, ")");
    if (r->final_evaluation_pending && (r->history.empty() || !r->history.back().evaluated || r->stopped))
      raise<InvalidArgument>(who, ": the resumed state has an evaluation of its last epoch pending, but ",
                             r->history.empty() ? "no epoch was run"
                             : r->stopped       ? "it stopped early"
                                                : "that epoch was not evaluated");
    optimizer.restore(r->optimizer);
    stopper.restore(r->early_stopping);
    result.history = r->history;
    result.epochs_run = r->next_epoch;
    train_seconds = r->train_seconds;
    first_epoch = r->stopped ? config.epochs : r->next_epoch;
    for (size_t k = 0; k + (r->final_evaluation_pending ? 1 : 0) < r->history.size(); ++k)
      if (r->history[k].evaluated) last_evaluated = r->history[k].epoch;
    if (r->final_evaluation_pending) {  // TrainingState::final_evaluation_pending
      EpochStats& last = result.history.back();
      if (config.epochs > r->next_epoch) {  // the longer run skips it, as eval_every says
        last.train_accuracy = last.val_loss = last.val_accuracy = last.test_loss = last.test_accuracy =
            std::numeric_limits<double>::quiet_NaN();
        last.eval_seconds = 0;
        last.evaluated = false;
      } else {  // the run ends here, with the evaluation the parameters' weights had then
        if (config.patience > 0)
          stopper.update(last.epoch, last.val_loss, last.val_accuracy, last.epoch - last_evaluated);
        last_evaluated = last.epoch;
      }
    }
  }
  autograd::Tape tape;
  // Activations go as soon as the backward is past them, so the gradients reuse their blocks.
  tape.release_in_backward = true;
  // The logits in evaluation mode (no dropout) on the cleared tape, for the scores.
  const auto eval_logits = [&] {
    tape.clear();
    tape.training = false;
    return forward(tape, 0);
  };
  for (int64_t epoch = first_epoch; epoch < config.epochs; ++epoch) {
    EpochStats s;
    s.epoch = epoch;
    auto t0 = Clock::now();
    tape.clear();
    tape.training = true;
    tape.profiling = config.profile;
    s.train_loss = train_epoch(tape, epoch, optimizer, result);
    tape.profiling = false;
    s.train_seconds = seconds_since(t0);
    train_seconds += s.train_seconds;

    const bool scheduled = (epoch + 1) % config.eval_every == 0;
    s.evaluated = scheduled || epoch + 1 == config.epochs;
    if (s.evaluated) {
      t0 = Clock::now();
      const autograd::Var logits = eval_logits();
      const Evaluation tr = evaluate(tape, logits, labels, split.train);
      const Evaluation va = evaluate(tape, logits, labels, split.val);
      const Evaluation te = evaluate(tape, logits, labels, split.test);
      s.train_accuracy = tr.accuracy;
      s.val_loss = va.loss;
      s.val_accuracy = va.accuracy;
      s.test_loss = te.loss;
      s.test_accuracy = te.accuracy;
      s.eval_seconds = seconds_since(t0);
    } else {
      s.train_accuracy = s.val_loss = s.val_accuracy = s.test_loss = s.test_accuracy =
          std::numeric_limits<double>::quiet_NaN();
    }

    if (!std::isfinite(s.train_loss))
      raise<InvalidArgument>(who, ": the training loss became ", s.train_loss, " at epoch ", epoch,
                             " (learning rate too high, or non-finite input features?)");
    // Evaluation reads nodes training may not (beyond the sampled or the training nodes' reach): a
    // NaN there would choose the kept weights against a NaN loss and end in NaN metrics.
    if (s.evaluated)
      for (const auto& [part, loss, nodes] : {std::tuple{"validation", s.val_loss, split.val.size()},
                                              std::tuple{"test", s.test_loss, split.test.size()}})
        if (nodes > 0 && !std::isfinite(loss))
          raise<InvalidArgument>(who, ": the ", part, " loss became ", loss, " at epoch ", epoch,
                                 " while the training loss is ", s.train_loss,
                                 " (non-finite input features of nodes training does not read?)");
    result.history.push_back(s);
    result.epochs_run = epoch + 1;
    bool stop = false;
    // The last epoch's evaluation off eval_every's schedule: a checkpoint keeps early stopping's
    // state from before it (TrainingState::final_evaluation_pending).
    const bool off_schedule = s.evaluated && !scheduled;
    std::optional<EarlyStopping::State> before_final;
    if (s.evaluated) {
      if (config.patience > 0) {
        if (off_schedule && config.on_checkpoint) before_final = stopper.state();
        stop = stopper.update(epoch, s.val_loss, s.val_accuracy, epoch - last_evaluated);
      }
      last_evaluated = epoch;
    }
    const bool go_on = !config.on_epoch || config.on_epoch(s);
    const bool last = stop || !go_on || epoch + 1 == config.epochs;
    if (config.on_checkpoint && config.checkpoint_every > 0 &&
        ((epoch + 1) % config.checkpoint_every == 0 || last))
      config.on_checkpoint(
          TrainingState{.next_epoch = epoch + 1,
                        .stopped = stop && !off_schedule,
                        .optimizer = optimizer.state(),
                        .early_stopping = before_final ? std::move(*before_final) : stopper.state(),
                        .history = result.history,
                        .train_seconds = train_seconds,
                        .final_evaluation_pending = off_schedule});
    if (last) break;
  }
  if (config.patience > 0 && stopper.best_epoch() >= 0) {
    stopper.restore_best();
    result.best_epoch = stopper.best_epoch();
  } else {  // no early stopping, or no epoch evaluated (on_epoch ended the run first): the last weights
    result.best_epoch = result.epochs_run - 1;
  }
  // The kept weights' metrics: re-evaluate (cheap, and exact even when the best epoch was not the last).
  const autograd::Var logits = eval_logits();
  const Evaluation va = evaluate(tape, logits, labels, split.val);
  const Evaluation te = evaluate(tape, logits, labels, split.test);
  result.val_accuracy = va.accuracy;
  result.val_loss = va.loss;
  result.test_accuracy = te.accuracy;
  result.test_loss = te.loss;
  for (const auto& [op, t] : tape.profile()) result.op_times[op] = t;
  result.seconds_per_epoch = train_seconds / static_cast<double>(result.epochs_run);
  result.total_seconds = seconds_since(start);
  return result;
}

namespace {

// One optimiser step on `tape` for `loss`; times the update when profiling.
void backward_and_step(autograd::Tape& tape, autograd::Var loss, Adam& optimizer, TrainResult& result,
                       bool profile) {
  tape.backward(loss);
  const auto t_step = Clock::now();
  optimizer.step();
  if (profile) {
    autograd::OpTime& adam = result.op_times["adam_step"];
    adam.forward_seconds += seconds_since(t_step);
    ++adam.forward_calls;
  }
}

}  // namespace

data::Labels select_labels(const data::Labels& labels, std::span<const int64_t> nodes) {
  data::Labels out;
  out.num_classes = labels.num_classes;
  out.eval_metric = labels.eval_metric;
  if (labels.multi_label()) {
    const int64_t c = labels.multi_hot.dim(1);
    out.multi_hot = Tensor({static_cast<int64_t>(nodes.size()), c});
    for (size_t k = 0; k < nodes.size(); ++k)
      std::copy_n(labels.multi_hot.data() + nodes[k] * c, c,
                  out.multi_hot.data() + static_cast<int64_t>(k) * c);
  } else {
    out.classes.resize(nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) out.classes[k] = labels.classes[static_cast<size_t>(nodes[k])];
  }
  return out;
}

TrainResult fit(const ForwardFn& forward, std::vector<autograd::Parameter*> parameters,
                const data::Labels& labels, const data::Split& split, const TrainConfig& config) {
  const auto step = [&](autograd::Tape& tape, int64_t epoch, Adam& optimizer, TrainResult& result) {
    optimizer.zero_grad();
    const autograd::Var logits = forward(tape, step_seed(config.seed, epoch));
    const autograd::Var loss = training_loss(tape, logits, labels, split.train);
    const double value = static_cast<double>(tape.value(loss).data()[0]);
    backward_and_step(tape, loss, optimizer, result, config.profile);
    return value;
  };
  return fit_with("fit", step, forward, std::move(parameters), labels, split, config);
}

std::vector<int64_t> shuffled(std::span<const int64_t> nodes, uint64_t seed) {
  std::vector<int64_t> out(nodes.begin(), nodes.end());
  // Fisher-Yates with counter-based draws: the order is a pure function of (nodes, seed).
  for (size_t i = out.size(); i > 1; --i) {
    const auto r =
        philox4x32(seed, {static_cast<uint32_t>(i), static_cast<uint32_t>(uint64_t{i} >> 32), 0x5b1f, 0});
    const uint64_t bits = (uint64_t{r[0]} << 32) | r[1];
    const auto j = static_cast<size_t>(static_cast<uint128>(bits) * i >> 64);
    std::swap(out[i - 1], out[j]);
  }
  return out;
}

TrainResult fit_minibatch(const BatchForwardFn& batch_forward, const ForwardFn& forward,
                          std::vector<autograd::Parameter*> parameters, const data::Labels& labels,
                          const data::Split& split, int64_t batch_size, const TrainConfig& config) {
  if (batch_size < 1) raise<InvalidArgument>("fit_minibatch: batch_size is ", batch_size, ", expected >= 1");
  const auto step = [&](autograd::Tape& tape, int64_t epoch, Adam& optimizer, TrainResult& result) {
    const uint64_t epoch_seed = step_seed(config.seed, epoch);
    const std::vector<int64_t> order = shuffled(split.train, epoch_seed);
    const auto n = static_cast<int64_t>(order.size());
    double loss_sum = 0;
    for (int64_t b = 0, batch = 0; b < n; b += batch_size, ++batch) {
      const std::span<const int64_t> seeds(order.data() + b,
                                           static_cast<size_t>(std::min(batch_size, n - b)));
      tape.clear();
      optimizer.zero_grad();
      const autograd::Var logits = batch_forward(tape, seeds, step_seed(epoch_seed, batch));
      if (tape.value(logits).rank() != 2 || tape.value(logits).dim(0) != static_cast<int64_t>(seeds.size()))
        raise<ShapeError>("fit_minibatch: the batch's logits have shape ", tape.value(logits).shape().str(),
                          ", expected [", seeds.size(), ", num_classes] (one row per seed)");
      const data::Labels batch_labels = select_labels(labels, seeds);
      std::vector<int64_t> rows(seeds.size());
      for (size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<int64_t>(k);
      const autograd::Var loss = training_loss(tape, logits, batch_labels, rows);
      loss_sum += static_cast<double>(tape.value(loss).data()[0]) * static_cast<double>(seeds.size());
      backward_and_step(tape, loss, optimizer, result, config.profile);
    }
    return loss_sum / static_cast<double>(n);
  };
  return fit_with("fit_minibatch", step, forward, std::move(parameters), labels, split, config);
}

}  // namespace edgeattn::train
