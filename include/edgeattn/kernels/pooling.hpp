// Graph-level readouts: pooling the node rows of each graph of a batch into one row per graph.
//
//   sum   out_g = sum_{v in g} x_v
//   mean  out_g = sum_{v in g} x_v / |g|                      (0 for an empty graph)
//   max   out_g,f = max_{v in g} x_v,f (0 for an empty graph); argmax the first such v
//
// Max pooling's gradient is split evenly among the nodes equal to the maximum, as PyG's
// global_max_pool (torch's scatter 'amax') does; where one-hot features tie, each of the k tied
// nodes gets 1/k of it. A NaN in a graph's column is its maximum (the first NaN, as torch's amax
// propagates it), and its gradient goes to that node.
//
// A batch of graphs is one block-diagonal graph whose graph g owns the node rows
// [graph_ptr[g], graph_ptr[g + 1]) (data::Dataset::graph_ptr; PyG's `batch` vector in ptr form).
// The kernels are parallel over graphs: every output row is written by one task, in node order,
// so results are bit-identical for any thread count; backward needs no atomics either (each node
// belongs to one graph). The serial oracle is lib/kernels/reference/reference_pooling.cpp.
//
// Example:
//   std::vector<int64_t> ptr = {0, 3, 5};                       // graphs of 3 and 2 nodes
//   auto r = edgeattn::kernels::segment_pool(x /*[5, F]*/, ptr, edgeattn::Pooling::mean);
//   // r.out: [2, F]
//   Tensor dx = edgeattn::kernels::segment_pool_backward(ptr, edgeattn::Pooling::mean, dy, r.argmax, 5, x);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn {

enum class Pooling { sum, mean, max };

/// "sum", "mean", "max"; InvalidArgument listing them otherwise.
Pooling parse_pooling(const std::string& name);
const char* to_string(Pooling p);

}  // namespace edgeattn

namespace edgeattn::kernels {

struct PoolResult {
  Tensor out;                   ///< [G, F]
  std::vector<int64_t> argmax;  ///< max only: [G * F], the node each output came from (-1: empty graph)
};

/// x: [N, F]; graph_ptr: [G + 1], from 0 to N, non-decreasing (ShapeError / InvalidArgument
/// naming the operand otherwise) -> [G, F].
PoolResult segment_pool(ConstView x, std::span<const int64_t> graph_ptr, Pooling kind);

/// grad_out: [G, F]; argmax: max pooling's PoolResult::argmax, and x [num_nodes, F] its input
/// (both ignored, and may be empty, for sum and mean; for max, ShapeError naming them when their
/// sizes differ, InvalidArgument for an entry that is not a node of its graph) -> d x:
/// [num_nodes, F].
Tensor segment_pool_backward(std::span<const int64_t> graph_ptr, Pooling kind, ConstView grad_out,
                             std::span<const int64_t> argmax, int64_t num_nodes, ConstView x = {});

/// Checks graph_ptr against num_nodes; `who` names the caller in the message.
void check_graph_ptr(std::span<const int64_t> graph_ptr, int64_t num_nodes, const std::string& who);

}  // namespace edgeattn::kernels
