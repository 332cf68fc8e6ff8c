#include "edgeattn/autograd/ops/pooling.hpp"

#include <vector>

#include "edgeattn/autograd/ops/attention.hpp"
#include "edgeattn/autograd/ops/shape.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::autograd {

Var global_pool(Tape& tape, Var x, std::span<const int64_t> graph_ptr, Pooling kind) {
  const Tensor& xv = tape.value(x);
  check_shape("global_pool: x", xv, {kAny, kAny});
  kernels::PoolResult fwd = kernels::segment_pool(xv, graph_ptr, kind);
  Tensor out = std::move(fwd.out);
  const int64_t n = xv.dim(0);
  std::vector<int64_t> ptr(graph_ptr.begin(), graph_ptr.end());
  return tape.record(
      kind == Pooling::sum    ? "global_add_pool"
      : kind == Pooling::mean ? "global_mean_pool"
                              : "global_max_pool",
      std::move(out), {x},
      [x, kind, n, ptr = std::move(ptr), argmax = std::move(fwd.argmax)](BackwardContext& ctx) {
        if (!ctx.needs_grad(x)) return;
        const Tensor dx =
            kernels::segment_pool_backward(ptr, kind, ctx.grad_out(), argmax, n,
                                           kind == Pooling::max ? ConstView(ctx.value(x)) : ConstView{});
        Tensor& g = ctx.grad(x);
        for (int64_t i = 0; i < g.numel(); ++i) g.data()[i] += dx.data()[i];
      });
}

Var global_attention_pool(Tape& tape, Var x, Var gate, std::span<const int64_t> graph_ptr) {
  const Tensor& xv = tape.value(x);
  check_shape("global_attention_pool: x", xv, {kAny, kAny});
  const int64_t n = xv.dim(0), f = xv.dim(1);
  check_shape("global_attention_pool: gate", tape.value(gate), {n, 1});
  kernels::check_graph_ptr(graph_ptr, n, "global_attention_pool");
  const int64_t g_count = static_cast<int64_t>(graph_ptr.size()) - 1;
  // One destination per graph; node v (a source) sends to its graph's destination.
  std::vector<int64_t> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
  for (int64_t g = 0; g < g_count; ++g)
    for (int64_t v = graph_ptr[static_cast<size_t>(g)]; v < graph_ptr[static_cast<size_t>(g) + 1]; ++v) {
      src[static_cast<size_t>(v)] = v;
      dst[static_cast<size_t>(v)] = g;
    }
  const Graph readout = build_graph(g_count, n, src, dst);
  // The additive score with a zero destination term and slope 1 is the gate itself:
  // softmax over each graph's nodes of gate_v.
  const Var zero = tape.constant(Tensor({g_count, 1}));
  AttentionConfig config{.score = Score::additive, .negative_slope = 1.f};
  const Var out = graph_attention(
      tape, readout, {.value = reshape(tape, x, {n, 1, f}), .score_dst = zero, .score_src = gate}, config);
  return reshape(tape, out, {g_count, f});
}

}  // namespace edgeattn::autograd
