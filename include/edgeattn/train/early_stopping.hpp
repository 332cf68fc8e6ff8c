// Early stopping with patience, restoring the best weights.
//
// The GAT reference code's rule (PetarV-/GAT execute_cora.py), `Criterion::loss_or_accuracy`:
// an epoch counts as progress when val_acc >= best_acc OR val_loss <= best_loss (each best is
// then updated on its own), and the weights are saved only when BOTH hold at once; training stops
// after `patience` epochs without progress. `loss` and `accuracy` use one criterion alone
// (strictly better loss / accuracy is progress and saves the weights).
//
// Example:
//   edgeattn::train::EarlyStopping stop(model.parameters(), {.patience = 100});
//   for (epoch ...) {
//     ... train step, evaluate val_loss, val_acc ...
//     if (stop.update(epoch, val_loss, val_acc)) break;
//   }
//   stop.restore_best();   // parameters now hold the best epoch's weights
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/tensor.hpp"

namespace edgeattn::train {

struct EarlyStoppingConfig {
  enum class Criterion { loss_or_accuracy, loss, accuracy };
  int64_t patience = 100;
  Criterion criterion = Criterion::loss_or_accuracy;
};

class EarlyStopping {
 public:
  EarlyStopping(std::vector<autograd::Parameter*> parameters, EarlyStoppingConfig config);

  /// Records an epoch's validation metrics; snapshots the weights when they are the best so far.
  /// `epochs`: how many epochs this evaluation stands for (those since the previous one, when not
  /// every epoch is evaluated); without progress they all count against the patience. Returns true
  /// when training should stop.
  bool update(int64_t epoch, double val_loss, double val_accuracy, int64_t epochs = 1);
  /// Copies the best snapshot back into the parameters (no-op before any update).
  void restore_best();

  int64_t best_epoch() const { return best_epoch_; }
  double best_loss() const { return best_loss_; }
  double best_accuracy() const { return best_acc_; }
  int64_t epochs_without_improvement() const { return bad_epochs_; }
  /// Everything update() remembers, for a training checkpoint.
  struct State {
    double best_loss = std::numeric_limits<double>::infinity();
    double best_accuracy = -1.0;
    int64_t best_epoch = -1;
    int64_t bad_epochs = 0;
    std::vector<Tensor> snapshot;  ///< the best weights, one per parameter (empty before any update)
  };
  State state() const { return {best_loss_, best_acc_, best_epoch_, bad_epochs_, snapshot_}; }
  /// Continues from a saved state; InvalidArgument unless the snapshot is empty or matches the
  /// parameters' shapes.
  void restore(State state);

 private:
  std::vector<autograd::Parameter*> params_;
  std::vector<Tensor> snapshot_;
  EarlyStoppingConfig config_;
  double best_loss_ = std::numeric_limits<double>::infinity();
  double best_acc_ = -1.0;
  int64_t best_epoch_ = -1;
  int64_t bad_epochs_ = 0;
};

}  // namespace edgeattn::train
