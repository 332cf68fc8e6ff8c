// Classification metrics over a subset of nodes.
//
//   accuracy  single-label: fraction of `nodes` whose arg-max logit equals the label
//   micro_f1  multi-label: 2TP / (2TP + FP + FN) over all (node, class) pairs of `nodes`, where a
//             class is predicted when its logit is > 0 (probability > 0.5)
//
// Example:
//   double acc = edgeattn::train::accuracy(logits, ds.labels.classes, ds.split().test);
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::train {

/// Per-node arg-max of logits [N, C] (ties: the smallest class id).
std::vector<int32_t> predict_classes(ConstView logits);

/// logits: [N, C]; labels: [N] (-1 = none; such nodes must not be in `nodes`); nodes: ids.
/// Returns 0 for an empty `nodes`.
double accuracy(ConstView logits, std::span<const int32_t> labels, std::span<const int64_t> nodes);

/// logits, targets: [N, C] with targets 0/1.
double micro_f1(ConstView logits, ConstView targets, std::span<const int64_t> nodes);

}  // namespace edgeattn::train
