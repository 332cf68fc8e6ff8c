#include "kernels/reference/reference_pooling.hpp"

#include <cmath>
#include <vector>

namespace edgeattn::kernels::reference {

PoolResult segment_pool(ConstView x, std::span<const int64_t> graph_ptr, Pooling kind) {
  check_graph_ptr(graph_ptr, x.dim(0), "reference::segment_pool");
  const int64_t g_count = static_cast<int64_t>(graph_ptr.size()) - 1, f_count = x.dim(1);
  PoolResult r;
  r.out = Tensor({g_count, f_count}, 0.f);
  if (kind == Pooling::max) r.argmax.assign(static_cast<size_t>(g_count * f_count), -1);
  for (int64_t g = 0; g < g_count; ++g) {
    const int64_t first = graph_ptr[static_cast<size_t>(g)], last = graph_ptr[static_cast<size_t>(g) + 1];
    for (int64_t f = 0; f < f_count; ++f) {
      double acc = 0;
      int64_t best = -1;
      for (int64_t v = first; v < last; ++v) {
        const float value = x.data()[v * f_count + f];
        if (kind == Pooling::max) {
          const float kept = best < 0 ? 0.f : x.data()[best * f_count + f];
          // Larger, or the first NaN (torch's amax propagates NaN).
          if (best < 0 || value > kept || (std::isnan(value) && !std::isnan(kept))) best = v;
        } else {
          acc += value;
        }
      }
      if (kind == Pooling::max) {
        r.out(g, f) = best < 0 ? 0.f : x.data()[best * f_count + f];
        r.argmax[static_cast<size_t>(g * f_count + f)] = best;
      } else {
        r.out(g, f) = static_cast<float>(
            kind == Pooling::mean && last > first ? acc / static_cast<double>(last - first) : acc);
      }
    }
  }
  return r;
}

Tensor segment_pool_backward(std::span<const int64_t> graph_ptr, Pooling kind, ConstView grad_out,
                             std::span<const int64_t> argmax, int64_t num_nodes, ConstView x) {
  const int64_t g_count = static_cast<int64_t>(graph_ptr.size()) - 1, f_count = grad_out.dim(1);
  Tensor dx({num_nodes, f_count}, 0.f);
  for (int64_t g = 0; g < g_count; ++g) {
    const int64_t first = graph_ptr[static_cast<size_t>(g)], last = graph_ptr[static_cast<size_t>(g) + 1];
    for (int64_t f = 0; f < f_count; ++f) {
      if (kind == Pooling::max) {  // split evenly among the nodes equal to the maximum
        const int64_t best = argmax[static_cast<size_t>(g * f_count + f)];
        if (best < 0) continue;
        const float top = x.data()[best * f_count + f];
        std::vector<int64_t> tied;
        for (int64_t v = first; v < last; ++v)
          if (x.data()[v * f_count + f] == top) tied.push_back(v);
        if (tied.empty()) tied.push_back(best);  // a NaN maximum equals nothing
        for (int64_t v : tied)
          dx.data()[v * f_count + f] = grad_out.data()[g * f_count + f] / static_cast<float>(tied.size());
        continue;
      }
      const float share = kind == Pooling::mean
                              ? grad_out.data()[g * f_count + f] / static_cast<float>(last - first)
                              : grad_out.data()[g * f_count + f];
      for (int64_t v = first; v < last; ++v) dx.data()[v * f_count + f] = share;
    }
  }
  return dx;
}

}  // namespace edgeattn::kernels::reference
