// The CUDA path of graph attention (AttentionPath::cuda) on the GPU, kernels alone: the graph,
// its transpose and the operands resident on the device, timed with CUDA events
// (kernels::cuda_time_attention: medians of 10 calls after a warm-up). What a training step that
// keeps its tensors on the GPU would pay; the per-call copies of the host-memory API are reported
// apart (upload_ms: graph, transpose and operands, once).
//
//   graphs  cora_uniform (2,708 nodes, 13,264 edges), 1m_uniform and 1m_rmat (1,000,000 nodes,
//           10,000,000 edges): the graphs of kernels_attention_bench
//   scores  additive H = 8, d = 8 (GAT's hidden layer), gatv2 H = 8, d = 8, dot_product H = 8,
//           d = 8 and H = 1, d = 64
//
// Names: cuda_attention/<score>/<graph>/H:<H>/d:<d>. The reported time is forward + backward;
// counters forward_ms, backward_ms, upload_ms, device_MB (GPU memory held), and the forward's and backward's
// GB/s under bench/support/traffic_model.hpp (compare with the GPU's copy bandwidth measured in the same run,
// bench/README.md). Without a GPU (or a CUDA build) every case is skipped with the reason.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/generators.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "edgeattn/kernels/cuda.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/cuda/cuda_timing.hpp"
#include "traffic_model.hpp"

namespace edgeattn::bench {
namespace {

using kernels::EdgeScore;

struct Spec {
  std::string graph;
  int64_t nodes, edges;
  bool rmat;
};

const Graph& graph_for(const Spec& s) {
  static std::map<std::string, std::unique_ptr<Graph>> cache;
  auto& slot = cache[s.graph];
  if (!slot)
    slot = std::make_unique<Graph>(s.rmat ? rmat_graph(s.nodes, s.edges, 1)
                                          : erdos_renyi_graph(s.nodes, s.edges, 1));
  return *slot;
}

Tensor filled(Shape shape, uint64_t seed) {
  Tensor t = Tensor::uninitialized(shape);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (int64_t n = 0; n < t.numel(); ++n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.data()[n] = static_cast<float>(x >> 40) / static_cast<float>(1 << 24) - 0.5f;
  }
  return t;
}

void run(benchmark::State& state, const Spec& spec, EdgeScore kind, int64_t heads, int64_t d) {
  if (!cuda_device()) {
    state.SkipWithError(("no CUDA device: " + cuda_unavailable_reason()).c_str());
    for (auto _ : state) {
    }
    return;
  }
  const Graph& g = graph_for(spec);
  const int64_t n = g.num_dst();
  const Tensor v = filled({n, heads, d}, 1), q = filled({n, heads, d}, 2), k = filled({n, heads, d}, 3),
               sd = filled({n, heads}, 4), ss = filled({n, heads}, 5), att = filled({heads, d}, 6),
               dout = filled({n, heads, d}, 7);
  kernels::KernelArgs a;
  a.heads = heads;
  a.dv = d;
  a.v = v.data();
  a.score.kind = kind;
  a.score.slope = 0.2f;
  if (kind == EdgeScore::additive) {
    a.score.sd = sd.data();
    a.score.ss = ss.data();
  } else {
    a.score.dk = d;
    a.score.q = q.data();
    a.score.k = k.data();
    a.score.scale = 0.125f;
    if (kind == EdgeScore::vector_leaky) a.score.att = att.data();
  }
  kernels::CudaAttentionTiming t;
  for (auto _ : state) {
    t = kernels::cuda_time_attention(g, a, dout.data(), 10);
    state.SetIterationTime((t.forward_ms + t.backward_ms) / 1e3);
  }
  const AttentionShape shape{n, n, g.num_edges(), heads, kind == EdgeScore::additive ? 0 : d, d};
  state.counters["forward_ms"] = t.forward_ms;
  state.counters["backward_ms"] = t.backward_ms;
  state.counters["upload_ms"] = t.upload_ms;
  state.counters["device_MB"] = static_cast<double>(t.device_bytes) / (1 << 20);
  state.counters["forward_GB/s"] = attention_forward_bytes(shape) / (t.forward_ms * 1e6);
  state.counters["backward_GB/s"] = attention_backward_bytes(shape) / (t.backward_ms * 1e6);
  state.counters["edges"] = static_cast<double>(g.num_edges());
}

const int registered = [] {
  const std::vector<Spec> specs = {{"cora_uniform", 2708, 13264, false},
                                   {"1m_uniform", 1000000, 10000000, false},
                                   {"1m_rmat", 1000000, 10000000, true}};
  const struct {
    const char* name;
    EdgeScore kind;
    int64_t heads, d;
  } shapes[] = {{"additive", EdgeScore::additive, 8, 8},
                {"gatv2", EdgeScore::vector_leaky, 8, 8},
                {"dot_product", EdgeScore::dot, 8, 8},
                {"dot_product", EdgeScore::dot, 1, 64}};
  for (const Spec& s : specs)
    for (const auto& sh : shapes) {
      const std::string name = std::string("cuda_attention/") + sh.name + "/" + s.graph +
                               "/H:" + std::to_string(sh.heads) + "/d:" + std::to_string(sh.d);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [s, sh](benchmark::State& st) { run(st, s, sh.kind, sh.heads, sh.d); })
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  return 0;
}();

}  // namespace
}  // namespace edgeattn::bench
