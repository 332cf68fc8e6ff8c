// Classification metrics over a subset of nodes.
//
//   accuracy  single-label: fraction of `nodes` whose arg-max logit equals the label
//   micro_f1  multi-label: 2TP / (2TP + FP + FN) over all (node, class) pairs of `nodes`, where a
//             class is predicted when its logit is > 0 (probability > 0.5)
//   roc_auc   multi-label: the area under the ROC curve of each class (column) over `nodes`, i.e.
//             P(score of a positive > score of a negative) with ties counted 1/2, averaged over
//             the classes that have both positives and negatives among `nodes` (OGB's Evaluator
//             for ogbn-proteins, which uses sklearn's roc_auc_score per task)
//
// Example:
//   double acc = edgeattn::train::accuracy(logits, ds.labels.classes, ds.split().test);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/data/dataset.hpp"

namespace edgeattn::train {

/// Per-node arg-max of logits [N, C] (ties: the smallest class id).
std::vector<int32_t> predict_classes(ConstView logits);

/// logits: [N, C]; labels: [N] (-1 = none; such nodes must not be in `nodes`); nodes: ids.
/// Returns 0 for an empty `nodes`.
double accuracy(ConstView logits, std::span<const int32_t> labels, std::span<const int64_t> nodes);

/// logits, targets: [N, C] with targets 0/1. 0 when no pair is positive, predicted or true (as
/// sklearn's f1_score with its default zero_division).
double micro_f1(ConstView logits, ConstView targets, std::span<const int64_t> nodes);

/// scores, targets: [N, C] with targets 0/1 (any monotone score: logits or probabilities).
/// InvalidArgument when no class has both a positive and a negative among `nodes`; NaN when a
/// score of a counted class is NaN.
double roc_auc(ConstView scores, ConstView targets, std::span<const int64_t> nodes);

/// The metric `name` ("accuracy", "micro_f1", "rocauc": data::Labels::metric()) of the logits
/// against the labels over `nodes`. InvalidArgument for another name or a kind of labels the
/// metric does not apply to.
double score(const std::string& name, ConstView logits, const data::Labels& labels,
             std::span<const int64_t> nodes);

}  // namespace edgeattn::train
