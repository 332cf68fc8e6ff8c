// Internal: the checks on what a SourceExpansion (autograd/ops/shape.hpp) returns, shared by the
// ops that take one (expand_sources, gat_attention). `who` names the op in the messages.
#pragma once

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::autograd::detail {

/// ShapeError unless `expanded` has own's trailing dimensions and at least own's rows.
void check_expanded(const char* who, const Shape& own, const Tensor& expanded);
/// ShapeError unless `reduced` has exactly own's shape.
void check_reduced(const char* who, const Shape& own, const Tensor& reduced);

}  // namespace edgeattn::autograd::detail
