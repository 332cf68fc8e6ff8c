// Internal: the serial oracle of kernels/pooling.hpp, written for clarity; used only by tests.
#pragma once

#include "edgeattn/kernels/pooling.hpp"

namespace edgeattn::kernels::reference {

PoolResult segment_pool(ConstView x, std::span<const int64_t> graph_ptr, Pooling kind);
Tensor segment_pool_backward(std::span<const int64_t> graph_ptr, Pooling kind, ConstView grad_out,
                             std::span<const int64_t> argmax, int64_t num_nodes, ConstView x);

}  // namespace edgeattn::kernels::reference
