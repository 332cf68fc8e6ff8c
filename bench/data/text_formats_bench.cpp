// Parse throughput of the text readers, from memory, on one thread (ThreadLimit(1), whatever
// EDGEATTN_BENCH_THREADS says): the MB/s a loader spends on its text once read_file has the bytes.
//
//   edge_list/ids        ~50 MB SNAP-style "u<TAB>v" lines, ids < 2^22 used as given
//   edge_list/relabel    the same text with relabel = true (hashing every id token)
//   matrix_market/real   ~50 MB "i j value" coordinate entries, real general
//   linqs/content        ~50 MB Cora-like .content lines (1433 0/1 words, ~1.3% ones, a label)
//
// Every case times the whole parse_* call, graph/feature construction included, and reports
// MBps (decimal megabytes of text per second, from the LoopClock), bytes_per_second (Google
// Benchmark's own), the input size and the number of edges or papers. Target: >= 100 MB/s.
// The inputs are generated once, deterministically (splitmix64), before the first timed case.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "bench_context.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/data/edge_list.hpp"
#include "edgeattn/data/linqs.hpp"
#include "edgeattn/data/matrix_market.hpp"

namespace edgeattn::bench {
namespace {

constexpr size_t kTargetBytes = 50'000'000;
constexpr uint64_t kNodes = uint64_t{1} << 22;

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

const std::string& edge_list_text() {
  static const std::string text = [] {
    std::string t;
    t.reserve(kTargetBytes + 64);
    t += "# generated SNAP-style edge list\n";
    SplitMix64 rng{1};
    while (t.size() < kTargetBytes) {
      t += std::to_string(rng.next() % kNodes);
      t += '\t';
      t += std::to_string(rng.next() % kNodes);
      t += '\n';
    }
    return t;
  }();
  return text;
}

const std::string& matrix_market_text() {
  static const std::string text = [] {
    std::string body;
    body.reserve(kTargetBytes + 64);
    SplitMix64 rng{2};
    int64_t nnz = 0;
    while (body.size() < kTargetBytes) {
      body += std::to_string(rng.next() % kNodes + 1);
      body += ' ';
      body += std::to_string(rng.next() % kNodes + 1);
      body += ' ';
      body += std::to_string(static_cast<double>(rng.next() % 1000000) / 1e6);
      body += '\n';
      ++nnz;
    }
    return "%%MatrixMarket matrix coordinate real general\n% generated\n" + std::to_string(kNodes) + " " +
           std::to_string(kNodes) + " " + std::to_string(nnz) + "\n" + body;
  }();
  return text;
}

const std::string& linqs_content_text() {
  static const std::string text = [] {
    static const char* const kClasses[] = {"Case_Based", "Genetic_Algorithms", "Neural_Networks", "Theory"};
    std::string t;
    t.reserve(kTargetBytes + 4096);
    SplitMix64 rng{3};
    for (int64_t paper = 0; t.size() < kTargetBytes; ++paper) {
      t += std::to_string(1000 + paper);
      for (int w = 0; w < 1433; ++w) {
        t += '\t';
        t += rng.next() % 1000 < 13 ? '1' : '0';
      }
      t += '\t';
      t += kClasses[rng.next() % 4];
      t += '\n';
    }
    return t;
  }();
  return text;
}

void set_throughput(benchmark::State& state, size_t bytes, double seconds) {
  const auto iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["input_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["MBps"] =
      benchmark::Counter(seconds > 0 ? iterations * static_cast<double>(bytes) / 1e6 / seconds : 0.0);
}

void BM_EdgeList(benchmark::State& state, bool relabel) {
  ThreadLimit one(1);
  const std::string& text = edge_list_text();
  int64_t edges = 0;
  LoopClock clock;
  for (auto _ : state) {
    const data::Dataset ds = data::parse_edge_list(text, "bench.txt", {.relabel = relabel});
    edges = ds.num_edges();
    benchmark::DoNotOptimize(edges);
  }
  set_throughput(state, text.size(), clock.seconds());
  state.counters["edges"] = static_cast<double>(edges);
}

void BM_MatrixMarket(benchmark::State& state) {
  ThreadLimit one(1);
  const std::string& text = matrix_market_text();
  int64_t edges = 0;
  LoopClock clock;
  for (auto _ : state) {
    const data::Dataset ds = data::parse_matrix_market_graph(text, "bench.mtx");
    edges = ds.num_edges();
    benchmark::DoNotOptimize(edges);
  }
  set_throughput(state, text.size(), clock.seconds());
  state.counters["edges"] = static_cast<double>(edges);
}

void BM_LinqsContent(benchmark::State& state) {
  ThreadLimit one(1);
  const std::string& text = linqs_content_text();
  int64_t papers = 0;
  LoopClock clock;
  for (auto _ : state) {
    const data::Dataset ds = data::parse_linqs(text, "bench.content", "", "bench.cites");
    papers = ds.num_nodes();
    benchmark::DoNotOptimize(papers);
  }
  set_throughput(state, text.size(), clock.seconds());
  state.counters["papers"] = static_cast<double>(papers);
}

BENCHMARK_CAPTURE(BM_EdgeList, ids, false)
    ->Name("edge_list/ids")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_EdgeList, relabel, true)
    ->Name("edge_list/relabel")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_MatrixMarket)->Name("matrix_market/real")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinqsContent)->Name("linqs/content")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace edgeattn::bench
