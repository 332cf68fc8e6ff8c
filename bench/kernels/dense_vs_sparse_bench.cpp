// Sparse (fused, per-edge) versus dense (blocked BLAS GEMM with a mask) attention, to find the
// density at which the dense path starts to win: kDefaultDenseThreshold in kernels/attention.hpp,
// which AttentionPath::automatic uses, is read off these results (bench/RESULTS.md).
//
//   sweep       N in {1024, 4096, 16384} x density in {0.1%, 0.3%, 1%, 3%, 10%, 30%, 100%}
//               uniform random graphs of that density (100%: CompletePattern, no explicit graph);
//               at N = 16384 the 30% graph (80M edges) is skipped, explicit graphs stay <= ~30M
//   structured  N = 16384: causal (CausalPattern) and sliding window w = 256 (WindowPattern)
//   operation   attention_forward, dot_product score, softmax, H = 4 heads, d = 64
//
// Names: dense_vs_sparse/<pattern>/N:<N>/density:<density>/<path>, e.g.
//   dense_vs_sparse/uniform/N:4096/density:0.03/sparse
// Every run reports N, density (the actual one), edges, dense (0 = sparse path, 1 = dense path),
// edges_per_s and GFLOPps of useful work (2 * (d + d) flops per edge and head, the same count for
// both paths, so the faster path has the higher GFLOPps). For each N the crossover is the lowest
// density whose dense run has the higher edges_per_s (bench/README.md).
//
// A density rho graph is generated as G(N, m) with m = -N^2 ln(1 - rho) draws: after merging
// duplicate pairs, N^2 (1 - exp(-m / N^2)) = rho N^2 distinct edges are expected, so the realised
// density matches the nominal one even at 30%.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/graph/generators.hpp"
#include "edgeattn/graph/pattern.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "traffic_model.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kHeads = 4;
constexpr int64_t kDim = 64;
constexpr int64_t kMaxExplicitEdges = 30'000'000;
constexpr int64_t kWindow = 256;

enum class Kind { uniform, complete, causal, window };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::uniform:
      return "uniform";
    case Kind::complete:
      return "complete";
    case Kind::causal:
      return "causal";
    case Kind::window:
      return "window256";
  }
  return "?";
}

struct Case {
  Kind kind;
  int64_t n;
  double density;  // nominal; uniform only
  AttentionPath path;
};

Pattern make_pattern(const Case& c) {
  switch (c.kind) {
    case Kind::complete:
      return CompletePattern(c.n, c.n);
    case Kind::causal:
      return CausalPattern(c.n);
    case Kind::window:
      return WindowPattern::sliding(c.n, kWindow);
    case Kind::uniform:
      break;
  }
  const double cells = static_cast<double>(c.n) * static_cast<double>(c.n);
  const auto draws = static_cast<int64_t>(std::llround(-cells * std::log1p(-c.density)));
  Graph g = erdos_renyi_graph(c.n, draws, /*seed=*/static_cast<uint64_t>(c.n) * 1000003u + draws);
  g.partition();  // plan once, before timing
  return g;
}

// One slot: the sparse and dense runs of a pattern are registered back to back, and the largest
// explicit graphs take hundreds of MiB, so only the current pattern is kept.
const Pattern& cached_pattern(const Case& c) {
  static std::string key;
  static std::unique_ptr<Pattern> slot;
  char text[96];
  std::snprintf(text, sizeof text, "%s/%lld/%.6g", kind_name(c.kind), static_cast<long long>(c.n), c.density);
  if (!slot || key != text) {
    slot.reset();
    slot = std::make_unique<Pattern>(make_pattern(c));
    key = text;
  }
  return *slot;
}

struct Inputs {
  int64_t n = -1;
  Tensor query, key, value;
};

const Inputs& cached_inputs(int64_t n) {
  static Inputs slot;
  if (slot.n != n) {
    slot = Inputs{};
    slot.query = random_tensor({n, kHeads, kDim}, 11);
    slot.key = random_tensor({n, kHeads, kDim}, 12);
    slot.value = random_tensor({n, kHeads, kDim}, 13);
    slot.n = n;
  }
  return slot;
}

void run_case(benchmark::State& state, const Case& c) {
  try {
    const Pattern& p = cached_pattern(c);
    const Inputs& inputs = cached_inputs(c.n);
    AttentionInputs in;
    in.query = inputs.query;
    in.key = inputs.key;
    in.value = inputs.value;
    AttentionConfig config;
    config.score = Score::dot_product;
    config.path = c.path;
    AttentionPath ran = c.path;
    const LoopClock clock;
    for (auto _ : state) {
      AttentionResult r = attention_forward(p, in, config);
      ran = r.path;
      benchmark::DoNotOptimize(r.out.data());
      benchmark::ClobberMemory();
    }
    const double seconds = clock.seconds();
    if (ran != c.path) {
      state.SkipWithError(
          (std::string("asked for path ") + to_string(c.path) + ", ran " + to_string(ran)).c_str());
      return;
    }
    const AttentionShape shape{.num_dst = num_dst(p),
                               .num_src = num_src(p),
                               .num_edges = num_edges(p),
                               .heads = kHeads,
                               .qk_dim = kDim,
                               .value_dim = kDim};
    using benchmark::Counter;
    state.counters["N"] = Counter(static_cast<double>(c.n));
    state.counters["density"] = Counter(density(p));
    state.counters["edges"] = Counter(static_cast<double>(shape.num_edges));
    state.counters["dense"] = Counter(c.path == AttentionPath::dense ? 1.0 : 0.0);
    state.counters["edges_per_s"] =
        Counter(static_cast<double>(shape.num_edges), Counter::kIsIterationInvariantRate);
    set_flop_counters(state, attention_forward_flops(shape), seconds);
    state.SetLabel(describe(p));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_case(const Case& c, double shown_density) {
  char density[32];
  std::snprintf(density, sizeof density, "%.4g", shown_density);
  const std::string name = std::string("dense_vs_sparse/") + kind_name(c.kind) + "/N:" + std::to_string(c.n) +
                           "/density:" + density + "/" + to_string(c.path);
  benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& state) { run_case(state, c); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

void register_all() {
  const AttentionPath paths[] = {AttentionPath::sparse, AttentionPath::dense};
  for (int64_t n : {1024, 4096, 16384}) {
    for (double rho : {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0}) {
      const Kind kind = rho >= 1.0 ? Kind::complete : Kind::uniform;
      if (kind == Kind::uniform && rho * static_cast<double>(n) * static_cast<double>(n) > kMaxExplicitEdges)
        continue;
      for (AttentionPath path : paths) register_case({kind, n, rho, path}, rho);
    }
  }
  constexpr int64_t kLong = 16384;
  const double causal_density = static_cast<double>(kLong + 1) / (2.0 * kLong);
  // Row i of the window has min(i, w) + min(n - 1 - i, w) + 1 sources: n (2w + 1) - w (w + 1) in all.
  const double window_edges = static_cast<double>(kLong * (2 * kWindow + 1) - kWindow * (kWindow + 1));
  const double window_density = window_edges / (static_cast<double>(kLong) * static_cast<double>(kLong));
  for (AttentionPath path : paths) register_case({Kind::causal, kLong, 0.0, path}, causal_density);
  for (AttentionPath path : paths) register_case({Kind::window, kLong, 0.0, path}, window_density);
}

[[maybe_unused]] const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
