// Internal: the element-wise tail that graph_attention and gat_attention can apply to their
// output in place (see AttentionEpilogue in autograd/ops/attention.hpp); SavedEpilogue is what
// both ops keep of it and runs its forward and backward halves:
//   y = dropout_p(act(y + bias)),   act = ELU(alpha) or the identity
// with the dense dropout mask of autograd::dropout / elu_dropout (keyed by seed and the flat
// element index), so the forward equals dropout(elu(add_bias(y))) bit for bit.
//
// The backward needs only y (the op's output), not its input: where an element was kept,
//   d y / d v = scale * ELU'(v) = (y > 0 ? scale : y + alpha * scale),   scale = 1 / (1 - p),
// and where it was dropped the gradient is 0. With p = 0 that is ELU's derivative from its output
// exactly as the elu op takes it; with p > 0 it rounds differently from the unfused pair (which
// has the ELU value before scaling) by at most an ulp or two.
#pragma once

#include <cstdint>

#include "edgeattn/autograd/ops/attention.hpp"
#include "edgeattn/core/tensor.hpp"

namespace edgeattn::autograd::detail {

struct OutputEpilogue {
  bool elu = false;
  float elu_alpha = 1.f;
  float dropout = 0.f;  ///< 0 when not training
  uint64_t seed = 0;
};

/// y [rows, width] (any shape whose numel is rows * width), bias [width] or null; in place. The
/// caller has checked the options (dropout in [0, 1), elu_alpha > 0) and the shapes.
void apply_output_epilogue(Tensor& y, const float* bias, int64_t width, const OutputEpilogue& e);

/// g = dL/dy becomes dL/d(input) in place, from the epilogue's output y; when `dbias` is given,
/// dbias[c] += sum over rows of the new g[:, c] (fixed row blocks: thread-count independent).
void output_epilogue_backward(Tensor& g, const Tensor& y, int64_t width, const OutputEpilogue& e,
                              float* dbias);

/// InvalidArgument naming `who` unless an active epilogue's dropout is in [0, 1) and elu_alpha > 0.
void check_epilogue(const char* who, const AttentionEpilogue& epilogue);

/// What an attention op keeps of its epilogue, and both halves of running it.
struct SavedEpilogue {
  Var bias{};
  OutputEpilogue applied;
  bool active = false;
  int64_t width = 0;  ///< output elements per row

  /// Applies a checked epilogue (when active) to the op's output `out` in place (dropout only
  /// when tape.training) and remembers what the backward needs. ShapeError naming `who` when the
  /// bias does not have the output's width.
  void apply(const Tape& tape, const char* who, const AttentionEpilogue& epilogue, Tensor& out);

  /// The node's gradient turned into d(attention output): taken (BackwardContext::take_grad_out),
  /// passed back through the epilogue when active (adding the bias gradient), and the node's
  /// output freed (BackwardContext::release_out).
  Tensor take_grad(BackwardContext& ctx) const;
};

}  // namespace edgeattn::autograd::detail
