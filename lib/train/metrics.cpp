#include "edgeattn/train/metrics.hpp"

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
  return denom == 0 ? 1.0 : 2.0 * static_cast<double>(tp) / static_cast<double>(denom);
}

}  // namespace edgeattn::train
