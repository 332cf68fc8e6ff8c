// Losses with backward, averaged over a subset of nodes (the training mask of transductive node
// classification, given as node ids).
//
//   log_softmax(x)                   row-wise log-softmax, [N, C] -> [N, C]
//   nll_loss(logp, labels, ids)      -mean_{i in ids} logp[i, labels[i]]              (single label)
//   cross_entropy(x, labels, ids)    nll_loss(log_softmax(x)) fused, numerically stable
//   bce_with_logits(x, t, ids)       mean_{i in ids, c} max(x,0) - x t + log(1 + e^-|x|)  (multi-label)
//
// Losses return a scalar of shape [] (rank 0). `labels` holds one class per node ([N]; -1 marks
// an unlabelled node, which must not be among `ids`); `ids` may repeat (a repeated id counts
// twice). InvalidArgument names the offending node; ShapeError the operand.
//
// Example:
//   Var loss = cross_entropy(tape, logits, dataset.labels, dataset.train_ids);   // logits: [N, C]
//   tape.backward(loss);
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

/// x: [N, C] -> [N, C]
Var log_softmax(Tape& tape, Var x);

/// logp: [N, C] (log-probabilities), labels: [N] in [0, C) at `ids`, ids: node indices -> []
Var nll_loss(Tape& tape, Var logp, std::span<const int32_t> labels, std::span<const int64_t> ids);

/// logits: [N, C], labels and ids as nll_loss -> []
Var cross_entropy(Tape& tape, Var logits, std::span<const int32_t> labels, std::span<const int64_t> ids);

/// logits: [N, C], targets: [N, C] (0/1 or probabilities; a gradient flows to them too if they
/// need one), ids: node indices -> [] (mean over |ids| * C elements)
Var bce_with_logits(Tape& tape, Var logits, Var targets, std::span<const int64_t> ids);

}  // namespace edgeattn::autograd
