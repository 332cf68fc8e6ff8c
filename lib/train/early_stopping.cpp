#include "edgeattn/train/early_stopping.hpp"

#include <algorithm>

#include "edgeattn/core/error.hpp"

namespace edgeattn::train {

EarlyStopping::EarlyStopping(std::vector<autograd::Parameter*> parameters, EarlyStoppingConfig config)
    : params_(std::move(parameters)), config_(config) {
  if (config_.patience < 1)
    raise<InvalidArgument>("EarlyStopping: patience is ", config_.patience, ", expected >= 1");
}

bool EarlyStopping::update(int64_t epoch, double val_loss, double val_accuracy, int64_t epochs) {
  if (epochs < 1) raise<InvalidArgument>("EarlyStopping::update: epochs is ", epochs, ", expected >= 1");
  bool progress = false, save = false;
  using C = EarlyStoppingConfig::Criterion;
  switch (config_.criterion) {
    case C::loss_or_accuracy: {
      const bool acc_ok = val_accuracy >= best_acc_, loss_ok = val_loss <= best_loss_;
      progress = acc_ok || loss_ok;
      save = acc_ok && loss_ok;
      break;
    }
    case C::loss:
      progress = save = val_loss < best_loss_;
      break;
    case C::accuracy:
      progress = save = val_accuracy > best_acc_;
      break;
  }
  if (save || best_epoch_ < 0) {
    snapshot_.clear();
    for (const autograd::Parameter* p : params_) snapshot_.push_back(p->value);
    best_epoch_ = epoch;
  }
  if (progress) {
    best_acc_ = std::max(best_acc_, val_accuracy);
    best_loss_ = std::min(best_loss_, val_loss);
    bad_epochs_ = 0;
    return false;
  }
  bad_epochs_ += epochs;
  return bad_epochs_ >= config_.patience;
}

void EarlyStopping::restore_best() {
  if (snapshot_.empty()) return;
  for (size_t k = 0; k < params_.size(); ++k) params_[k]->value = snapshot_[k];
}

void EarlyStopping::restore(State state) {
  if (!state.snapshot.empty()) {
    if (state.snapshot.size() != params_.size())
      raise<InvalidArgument>("EarlyStopping::restore: the snapshot has ", state.snapshot.size(),
                             " tensors, there are ", params_.size(), " parameters");
    for (size_t k = 0; k < params_.size(); ++k)
      if (!(state.snapshot[k].shape() == params_[k]->value.shape()))
        raise<InvalidArgument>("EarlyStopping::restore: the snapshot of ", params_[k]->name, " has shape ",
                               state.snapshot[k].shape().str(), ", expected ",
                               params_[k]->value.shape().str());
  }
  best_loss_ = state.best_loss;
  best_acc_ = state.best_accuracy;
  best_epoch_ = state.best_epoch;
  bad_epochs_ = state.bad_epochs;
  snapshot_ = std::move(state.snapshot);
}

}  // namespace edgeattn::train
