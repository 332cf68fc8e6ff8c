#include "edgeattn/train/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "edgeattn/core/error.hpp"

namespace edgeattn::train {

std::vector<int32_t> predict_classes(ConstView logits) {
  check_shape("predict_classes: logits", logits, {kAny, kAny});
  const int64_t n = logits.dim(0), c = logits.dim(1);
  std::vector<int32_t> out(static_cast<size_t>(n), -1);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data() + i * c;
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k)
      if (row[k] > row[best]) best = k;
    out[static_cast<size_t>(i)] = c > 0 ? static_cast<int32_t>(best) : -1;
  }
  return out;
}

double accuracy(ConstView logits, std::span<const int32_t> labels, std::span<const int64_t> nodes) {
  check_shape("accuracy: logits", logits, {static_cast<int64_t>(labels.size()), kAny});
  if (nodes.empty()) return 0.0;
  const int64_t n = logits.dim(0), c = logits.dim(1);
  int64_t correct = 0;
  for (const int64_t i : nodes) {
    if (i < 0 || i >= n) raise<InvalidArgument>("accuracy: node ", i, " is outside [0, ", n, ")");
    const int32_t y = labels[static_cast<size_t>(i)];
    if (y < 0) raise<InvalidArgument>("accuracy: node ", i, " has no label (-1)");
    const float* row = logits.data() + i * c;
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k)
      if (row[k] > row[best]) best = k;
    correct += best == y;
  }
  return static_cast<double>(correct) / static_cast<double>(nodes.size());
}

double micro_f1(ConstView logits, ConstView targets, std::span<const int64_t> nodes) {
  check_shape("micro_f1: logits", logits, {kAny, kAny});
  check_shape("micro_f1: targets", targets, {logits.dim(0), logits.dim(1)});
  const int64_t n = logits.dim(0), c = logits.dim(1);
  int64_t tp = 0, fp = 0, fn = 0;
  for (const int64_t i : nodes) {
    if (i < 0 || i >= n) raise<InvalidArgument>("micro_f1: node ", i, " is outside [0, ", n, ")");
    for (int64_t k = 0; k < c; ++k) {
      const bool pred = logits.data()[i * c + k] > 0.f;
      const bool truth = targets.data()[i * c + k] > 0.5f;
      tp += pred && truth;
      fp += pred && !truth;
      fn += !pred && truth;
    }
  }
  const int64_t denom = 2 * tp + fp + fn;
  // Nothing positive, predicted or true: 0, as sklearn's f1_score(average="micro") (its
  // zero_division default), so an all-negative validation set never scores as perfect.
  return denom == 0 ? 0.0 : 2.0 * static_cast<double>(tp) / static_cast<double>(denom);
}

double roc_auc(ConstView scores, ConstView targets, std::span<const int64_t> nodes) {
  check_shape("roc_auc: scores", scores, {kAny, kAny});
  check_shape("roc_auc: targets", targets, {scores.dim(0), scores.dim(1)});
  const int64_t n = scores.dim(0), c = scores.dim(1);
  for (const int64_t i : nodes)
    if (i < 0 || i >= n) raise<InvalidArgument>("roc_auc: node ", i, " is outside [0, ", n, ")");
  // Per class: sort the nodes by score; the AUC is the Mann-Whitney U of the positives' ranks
  // (ties get their average rank, which counts a tied pair as 1/2) over P * N.
  std::vector<std::pair<float, bool>> col(nodes.size());
  double sum = 0;
  int64_t classes = 0;
  for (int64_t k = 0; k < c; ++k) {
    int64_t positives = 0;
    bool nan = false;
    for (size_t r = 0; r < nodes.size(); ++r) {
      const int64_t i = nodes[r];
      col[r] = {scores.data()[i * c + k], targets.data()[i * c + k] > 0.5f};
      positives += col[r].second;
      nan |= std::isnan(col[r].first);
    }
    // A NaN score has no rank (and would break the sort's ordering): the AUC is NaN, which the
    // training loop reports as a diverged run (sklearn's roc_auc_score refuses NaN input).
    if (nan) return std::numeric_limits<double>::quiet_NaN();
    const int64_t negatives = static_cast<int64_t>(nodes.size()) - positives;
    if (positives == 0 || negatives == 0) continue;
    std::sort(col.begin(), col.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    double rank_sum = 0;
    for (size_t lo = 0; lo < col.size();) {
      size_t hi = lo;
      int64_t pos_in_tie = 0;
      while (hi < col.size() && col[hi].first == col[lo].first) pos_in_tie += col[hi++].second;
      const double mean_rank = 0.5 * static_cast<double>(lo + 1 + hi);  // ranks lo+1 .. hi
      rank_sum += mean_rank * static_cast<double>(pos_in_tie);
      lo = hi;
    }
    const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
    sum += (rank_sum - p * (p + 1) / 2) / (p * q);
    ++classes;
  }
  if (classes == 0)
    raise<InvalidArgument>("roc_auc: no class has both positive and negative nodes among the ", nodes.size(),
                           " given (ROC-AUC is undefined, as in OGB's Evaluator)");
  return sum / static_cast<double>(classes);
}

double score(const std::string& name, ConstView logits, const data::Labels& labels,
             std::span<const int64_t> nodes) {
  if (name == "accuracy") {
    if (labels.multi_label())
      raise<InvalidArgument>("metric 'accuracy' needs single-label data; these labels are multi-label");
    return accuracy(logits, labels.classes, nodes);
  }
  if (name == "micro_f1" || name == "rocauc") {
    if (!labels.multi_label())
      raise<InvalidArgument>("metric '", name, "' needs multi-label data; these labels are single-label");
    return name == "micro_f1" ? micro_f1(logits, labels.multi_hot, nodes)
                              : roc_auc(logits, labels.multi_hot, nodes);
  }
  raise<InvalidArgument>("unknown metric '", name, "' (known: accuracy, micro_f1, rocauc)");
}

}  // namespace edgeattn::train
