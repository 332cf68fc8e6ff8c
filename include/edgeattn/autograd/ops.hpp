// Every autograd op: include this to write layers.
//
//   linear.hpp         matmul, linear (dense input), linear (sparse constant input)
//   arithmetic.hpp     add, sub, mul, scale_rows, add_bias, scale
//   shape.hpp          reshape, mean_heads, concat, leading_rows, expand_sources
//   activation.hpp     relu, leaky_relu, elu, gelu, sigmoid
//   dropout.hpp        dropout (dense Var, sparse CsrMatrix)
//   attention.hpp      graph_attention, gat_attention, head_scores
//   normalization.hpp  layer_norm
//   loss.hpp           log_softmax, nll_loss, cross_entropy, bce_with_logits
//   reduction.hpp      sum, mean
//   pooling.hpp        global_pool (sum / mean / max per graph), global_attention_pool
#pragma once

#include "edgeattn/autograd/ops/activation.hpp"     // IWYU pragma: export
#include "edgeattn/autograd/ops/arithmetic.hpp"     // IWYU pragma: export
#include "edgeattn/autograd/ops/attention.hpp"      // IWYU pragma: export
#include "edgeattn/autograd/ops/dropout.hpp"        // IWYU pragma: export
#include "edgeattn/autograd/ops/linear.hpp"         // IWYU pragma: export
#include "edgeattn/autograd/ops/loss.hpp"           // IWYU pragma: export
#include "edgeattn/autograd/ops/normalization.hpp"  // IWYU pragma: export
#include "edgeattn/autograd/ops/pooling.hpp"        // IWYU pragma: export
#include "edgeattn/autograd/ops/reduction.hpp"      // IWYU pragma: export
#include "edgeattn/autograd/ops/shape.hpp"          // IWYU pragma: export
#include "edgeattn/autograd/tape.hpp"               // IWYU pragma: export
