// Segment pooling over the graphs of a batch: one task per run of graphs, each output row written
// by one task in node order (see kernels/pooling.hpp).
#include "edgeattn/kernels/pooling.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn {

Pooling parse_pooling(const std::string& name) {
  if (name == "sum" || name == "add") return Pooling::sum;
  if (name == "mean") return Pooling::mean;
  if (name == "max") return Pooling::max;
  raise<InvalidArgument>("unknown pooling '", name, "' (known: sum, mean, max)");
}

const char* to_string(Pooling p) {
  switch (p) {
    case Pooling::sum:
      return "sum";
    case Pooling::mean:
      return "mean";
    case Pooling::max:
      break;
  }
  return "max";
}

}  // namespace edgeattn

namespace edgeattn::kernels {
namespace {

// Graphs per task: enough rows that a task is not all overhead.
int64_t graph_grain(int64_t num_graphs, int64_t num_nodes) {
  const int64_t nodes_per_graph = num_graphs > 0 ? num_nodes / num_graphs + 1 : 1;
  return std::max<int64_t>(1, 4096 / nodes_per_graph);
}

}  // namespace

void check_graph_ptr(std::span<const int64_t> graph_ptr, int64_t num_nodes, const std::string& who) {
  if (graph_ptr.empty())
    raise<ShapeError>(who, ": graph_ptr is empty, expected [num_graphs + 1] >= 1 entries");
  if (graph_ptr.front() != 0 || graph_ptr.back() != num_nodes)
    raise<InvalidArgument>(who, ": graph_ptr runs from ", graph_ptr.front(), " to ", graph_ptr.back(),
                           ", expected from 0 to num_nodes = ", num_nodes);
  for (size_t g = 1; g < graph_ptr.size(); ++g)
    if (graph_ptr[g] < graph_ptr[g - 1])
      raise<InvalidArgument>(who, ": graph_ptr[", g, "] = ", graph_ptr[g], " is below graph_ptr[", g - 1,
                             "] = ", graph_ptr[g - 1], ", expected non-decreasing offsets");
}

PoolResult segment_pool(ConstView x, std::span<const int64_t> graph_ptr, Pooling kind) {
  check_shape("segment_pool: x", x, {kAny, kAny});
  check_graph_ptr(graph_ptr, x.dim(0), "segment_pool");
  const int64_t g_count = static_cast<int64_t>(graph_ptr.size()) - 1, f_count = x.dim(1);
  PoolResult r;
  r.out = Tensor::uninitialized({g_count, f_count});
  if (kind == Pooling::max) r.argmax.resize(static_cast<size_t>(g_count * f_count));
  const float* xd = x.data();
  float* od = r.out.data();
  parallel_for(0, g_count, graph_grain(g_count, x.dim(0)), [&](int64_t gb, int64_t ge) {
    std::vector<double> acc(static_cast<size_t>(f_count));
    std::vector<int32_t> arg32(kind == Pooling::max ? static_cast<size_t>(f_count) : 0);
    for (int64_t g = gb; g < ge; ++g) {
      const int64_t first = graph_ptr[static_cast<size_t>(g)], last = graph_ptr[static_cast<size_t>(g) + 1];
      float* out = od + g * f_count;
      if (kind == Pooling::max) {
        int64_t* arg = r.argmax.data() + g * f_count;
        if (first == last) {
          std::fill(out, out + f_count, 0.f);
          std::fill(arg, arg + f_count, int64_t{-1});
          continue;
        }
        std::copy(xd + first * f_count, xd + (first + 1) * f_count, out);
        // The winner's offset within the graph as int32, the width of a float, so the selects
        // below (not branches; ties keep the earlier node) vectorise; widened once per graph.
        std::fill(arg32.begin(), arg32.end(), 0);
        int32_t* a32 = arg32.data();
        for (int64_t v = first + 1; v < last; ++v) {
          const float* row = xd + v * f_count;
          const auto offset = static_cast<int32_t>(v - first);
          // Unconditional stores of bit-blended values: a select that GCC turns into a masked
          // store (vmaskmov) is microcoded and slow on AMD cores. A node takes over when it is
          // larger, or NaN where the maximum so far is not (the first NaN stays, as torch's amax).
#pragma omp simd
          for (int64_t f = 0; f < f_count; ++f) {
            const bool take = row[f] > out[f] || (row[f] != row[f] && out[f] == out[f]);
            const int32_t mask = -static_cast<int32_t>(take);
            const auto m = static_cast<uint32_t>(mask);
            out[f] = std::bit_cast<float>((std::bit_cast<uint32_t>(row[f]) & m) |
                                          (std::bit_cast<uint32_t>(out[f]) & ~m));
            a32[f] = (offset & mask) | (a32[f] & ~mask);
          }
        }
        for (int64_t f = 0; f < f_count; ++f) arg[f] = first + a32[f];
        continue;
      }
      // Sums in double, node by node: the reference's order, so both give the same bits.
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t v = first; v < last; ++v) {
        const float* row = xd + v * f_count;
        for (int64_t f = 0; f < f_count; ++f) acc[static_cast<size_t>(f)] += row[f];
      }
      const bool divide = kind == Pooling::mean && last > first;
      for (int64_t f = 0; f < f_count; ++f)
        out[f] = static_cast<float>(divide ? acc[static_cast<size_t>(f)] / static_cast<double>(last - first)
                                           : acc[static_cast<size_t>(f)]);
    }
  });
  return r;
}

Tensor segment_pool_backward(std::span<const int64_t> graph_ptr, Pooling kind, ConstView grad_out,
                             std::span<const int64_t> argmax, int64_t num_nodes, ConstView x) {
  check_graph_ptr(graph_ptr, num_nodes, "segment_pool_backward");
  const int64_t g_count = static_cast<int64_t>(graph_ptr.size()) - 1;
  check_shape("segment_pool_backward: grad_out", grad_out, {g_count, kAny});
  const int64_t f_count = grad_out.dim(1);
  if (kind == Pooling::max) {
    if (static_cast<int64_t>(argmax.size()) != g_count * f_count)
      raise<ShapeError>("segment_pool_backward: the forward result holds ", argmax.size(),
                        " argmax entries, expected ", g_count * f_count, " (max pooling's forward)");
    check_shape("segment_pool_backward: x (max pooling's input, for its ties)", x, {num_nodes, f_count});
    for (int64_t g = 0; g < g_count; ++g) {  // each entry a node of its own graph (-1: an empty one)
      const int64_t first = graph_ptr[static_cast<size_t>(g)], last = graph_ptr[static_cast<size_t>(g) + 1];
      for (int64_t f = 0; f < f_count; ++f) {
        const int64_t v = argmax[static_cast<size_t>(g * f_count + f)];
        if (first == last ? v != -1 : v < first || v >= last)
          raise<InvalidArgument>("segment_pool_backward: argmax[", g * f_count + f, "] (graph ", g,
                                 ", feature ", f, ") is ", v, ", expected ",
                                 first == last ? std::string("-1 (the graph is empty)")
                                               : detail::message("a node in [", first, ", ", last, ")"));
      }
    }
  }
  // Every node is in one graph, and each graph's task writes all of its rows.
  Tensor dx = Tensor::uninitialized({num_nodes, f_count});
  const float* gd = grad_out.data();
  const float* xd = x.data();
  float* dd = dx.data();
  parallel_for(0, g_count, graph_grain(g_count, num_nodes), [&](int64_t gb, int64_t ge) {
    const auto width = static_cast<size_t>(kind == Pooling::max ? f_count : 0);
    std::vector<float> top(width), share(width), block_count(width);
    std::vector<int64_t> count(width);
    for (int64_t g = gb; g < ge; ++g) {
      const int64_t first = graph_ptr[static_cast<size_t>(g)], last = graph_ptr[static_cast<size_t>(g) + 1];
      const float* go = gd + g * f_count;
      if (kind == Pooling::max) {
        if (first == last) continue;
        // Split evenly among the nodes equal to the maximum, as PyG's global_max_pool (torch's
        // amax): one pass over x writes each node's tie indicator (1 or 0) and counts the ties; a
        // second over the graph's rows of dx, still in cache, selects go / count or 0 (selects,
        // not masked stores, which are microcoded on AMD cores; 0, not 0 * go, where go is inf).
        // A NaN maximum equals nothing; its gradient goes to the NaN's node (argmax).
        const int64_t* arg = argmax.data() + g * f_count;
        for (int64_t f = 0; f < f_count; ++f) top[static_cast<size_t>(f)] = xd[arg[f] * f_count + f];
        std::fill(count.begin(), count.end(), int64_t{0});
        int64_t* c = count.data();
        const float* t = top.data();
        // Counted in float, which vectorises beside the float compares, over blocks of rows in
        // which a float count is exact (< 2^24), then added into int64.
        constexpr int64_t kExactRows = int64_t{1} << 23;
        for (int64_t b = first; b < last; b += kExactRows) {
          std::fill(block_count.begin(), block_count.end(), 0.f);
          float* bc = block_count.data();
          for (int64_t v = b; v < std::min(last, b + kExactRows); ++v) {
            const float* row = xd + v * f_count;
            float* d = dd + v * f_count;
#pragma omp simd
            for (int64_t f = 0; f < f_count; ++f) {
              d[f] = row[f] == t[f] ? 1.f : 0.f;
              bc[f] += d[f];
            }
          }
          for (int64_t f = 0; f < f_count; ++f) c[f] += static_cast<int64_t>(bc[f]);
        }
        float* sh = share.data();
        for (int64_t f = 0; f < f_count; ++f) sh[f] = c[f] > 0 ? go[f] / static_cast<float>(c[f]) : 0.f;
        for (int64_t v = first; v < last; ++v) {
          float* d = dd + v * f_count;
#pragma omp simd
          for (int64_t f = 0; f < f_count; ++f) d[f] = d[f] > 0.f ? sh[f] : 0.f;
        }
        for (int64_t f = 0; f < f_count; ++f)
          if (c[f] == 0) dd[arg[f] * f_count + f] = go[f];
        continue;
      }
      for (int64_t v = first; v < last; ++v) {
        float* row = dd + v * f_count;
        for (int64_t f = 0; f < f_count; ++f)
          row[f] = kind == Pooling::mean ? go[f] / static_cast<float>(last - first) : go[f];
      }
    }
  });
  return dx;
}

}  // namespace edgeattn::kernels
