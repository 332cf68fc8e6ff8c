// edgeattn bench write-inputs | bench limits: the peer suite's shared inputs and the machine's
// measured limits (bench/README.md, "Peer suite inputs"; the layout is in peer_inputs.hpp).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>

#include "args.hpp"
#include "commands.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/data/npz_writer.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/data/registry.hpp"
#include "edgeattn/graph/pattern.hpp"
#include "json.hpp"
#include "output_path.hpp"
#include "patterns.hpp"
#include "peer_inputs.hpp"
#include "support/machine_limits.hpp"
#include "timing.hpp"

namespace edgeattn::cli {
namespace {

constexpr uint32_t kStreamFeatures = 11, kStreamAttSrc = 12, kStreamAttDst = 13, kStreamLabels = 14,
                   kStreamSplit = 15;

const char* kWriteSummary =
    "Writes one input of the peer benchmark suite as an .npz file that numpy.load reads:\n"
    "  adj_indptr int64 [N+1], adj_indices int32 [E], adj_data float32 [E] (ones), adj_shape int64\n"
    "  (N, N): CSR BY DESTINATION, row i lists the sources j of the edges j -> i;\n"
    "  adj_rows_are_destinations bool (True); attr_matrix float32 [N, F] (C order); labels int64 [N];\n"
    "  idx_train, idx_val, idx_test int64 (sorted node ids); and, when H divides F (d = F / H),\n"
    "  att_src, att_dst float32 [H, d]: the additive score vectors, score_src[j, h] = x[j, h, :] .\n"
    "  att_src[h], score_dst[i, h] = x[i, h, :] . att_dst[h] with x = attr_matrix viewed [N, H, d].\n"
    "Features are seeded standard normals, labels uniform in [0, C), the split seeded (20 C train,\n"
    "500 val, 1000 test, fewer on small graphs). --graph cora writes the real Cora dataset\n"
    "(features row-normalised, the public split). complete, causal and window:W are materialised\n"
    "as explicit edges. Prints one JSON object: path, graph, nodes, edges, features, classes,\n"
    "heads, seed, att, seconds, peak_rss_mb.";

/// Sorted ids of one part of a seeded node order.
std::vector<int64_t> sorted_part(const std::vector<int64_t>& order, int64_t begin, int64_t end) {
  std::vector<int64_t> ids(order.begin() + begin, order.begin() + end);
  std::ranges::sort(ids);
  return ids;
}

uint64_t node_key(uint64_t seed, int64_t node, uint32_t stream) {
  const auto v = static_cast<uint64_t>(node);
  const auto r = philox4x32(seed, {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32), stream, 0});
  return (static_cast<uint64_t>(r[0]) << 32) | r[1];
}

data::Dataset synthetic_dataset(Graph graph, int64_t features, int64_t classes, uint64_t seed) {
  data::Dataset ds;
  ds.format = "synthetic";
  const int64_t n = graph.num_dst();
  ds.graph = std::move(graph);
  ds.features = data::Features(gaussian_tensor({n, features}, seed, kStreamFeatures));
  ds.labels.num_classes = classes;
  ds.labels.classes.resize(static_cast<size_t>(n));
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      ds.labels.classes[static_cast<size_t>(i)] =
          static_cast<int32_t>(node_key(seed, i, kStreamLabels) % static_cast<uint64_t>(classes));
  });
  std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) keyed[static_cast<size_t>(i)] = {node_key(seed, i, kStreamSplit), i};
  std::ranges::sort(keyed);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = keyed[static_cast<size_t>(i)].second;
  const int64_t train = std::min(20 * classes, n * 6 / 10);
  const int64_t val = std::min<int64_t>(500, (n - train) / 2);
  const int64_t test = std::min<int64_t>(1000, n - train - val);
  ds.splits["default"] = data::Split{sorted_part(order, 0, train), sorted_part(order, train, train + val),
                                     sorted_part(order, train + val, train + val + test)};
  ds.default_split = "default";
  return ds;
}

}  // namespace

int run_bench_write_inputs(std::span<const std::string> argv) {
  Args args("edgeattn bench write-inputs", kWriteSummary);
  args.option("out", "FILE", "", "the .npz file to write (required)")
      .option("graph", "G", "uniform", "uniform | rmat | cora | complete | causal | window:W")
      .option("nodes", "N", "", "number of nodes (required except for cora)")
      .option("edges", "E", "16 * nodes", "edges to draw for uniform and rmat; duplicates are merged")
      .option("features", "F", "64", "features per node (F = H * d for the kernel workloads)")
      .option("classes", "C", "8", "number of classes of the seeded labels")
      .option("heads", "H", "8", "heads of att_src / att_dst (written when H divides F)")
      .option("seed", "S", "1", "seed of the graph, features, labels and split")
      .option("threads", "T", "all cores", "worker threads");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  if (!args.given("out")) throw UsageError("--out FILE is required");
  check_output_options(args, {"out"});
  std::optional<ThreadLimit> limit;
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));
  const std::string graph_kind = args.str("graph");
  const auto seed = static_cast<uint64_t>(args.integer("seed", 0));
  const int64_t heads = args.integer("heads", 1, 4096);

  data::Dataset ds;
  const double seconds =
      time_ms([&] {
        if (graph_kind == "cora") {
          for (const char* o : {"nodes", "edges", "features", "classes"})
            if (args.given(o)) throw UsageError(std::string("--") + o + " does not apply to --graph cora");
          ds = data::load_dataset("cora");
          data::normalize_features(ds.features);
          ds.features = data::Features(ds.features.to_dense());
          return;
        }
        const bool known = graph_kind == "uniform" || graph_kind == "rmat" || graph_kind == "complete" ||
                           graph_kind == "causal" || graph_kind.starts_with("window:");
        if (!known)
          throw UsageError("--graph is '" + graph_kind +
                           "': expected uniform, rmat, cora, complete, causal or window:W");
        const PatternSpec spec = parse_pattern(graph_kind);
        if (!args.given("nodes")) throw UsageError("--nodes N is required for --graph " + graph_kind);
        const int64_t nodes = args.integer("nodes", 1, (int64_t{1} << 31) - 1);
        if (args.given("edges") && !takes_edge_count(spec))
          throw UsageError("--edges applies to --graph uniform and rmat only");
        const int64_t edges = args.given("edges") ? args.integer("edges", 0) : 16 * nodes;
        const int64_t features = args.integer("features", 1, 1 << 20);
        const int64_t classes = args.integer("classes", 1, 1 << 20);
        const Pattern pattern = make_pattern(spec, nodes, edges, seed);
        ds = synthetic_dataset(
            std::holds_alternative<Graph>(pattern) ? std::get<Graph>(pattern) : materialize(pattern),
            features, classes, seed);
        ds.name = graph_kind;
      }) /
      1e3;

  data::NpzWriteOptions options;
  const int64_t f = ds.num_features();
  const bool att = f % heads == 0;
  if (att) {
    const int64_t d = f / heads;
    const float scale = 1.f / std::sqrt(static_cast<float>(d));
    options.extra.push_back({"att_src", {}});
    options.extra.push_back({"att_dst", {}});
    for (auto& [key, array] : options.extra) {
      const Tensor t =
          gaussian_tensor({heads, d}, seed, key == "att_src" ? kStreamAttSrc : kStreamAttDst, scale);
      array = data::make_npy(std::span<const float>(t.data(), static_cast<size_t>(t.numel())), {heads, d});
    }
  }
  const std::string out = args.str("out");
  const double write_s = time_ms([&] { data::write_npz(ds, out, options); }) / 1e3;

  JsonObject json;
  json.field("library", "edgeattn")
      .field("version", tool_version())
      .field("path", out)
      .field("graph", graph_kind)
      .field("nodes", ds.num_nodes())
      .field("edges", ds.num_edges())
      .field("features", f)
      .field("classes", ds.num_classes())
      .field("heads", heads)
      .field("seed", static_cast<int64_t>(seed))
      .field("att", att)
      .field("threads", max_threads())
      .field("train", static_cast<int64_t>(ds.split().train.size()))
      .field("val", static_cast<int64_t>(ds.split().val.size()))
      .field("test", static_cast<int64_t>(ds.split().test.size()))
      .field("generate_seconds", seconds)
      .field("write_seconds", write_s)
      .field("seconds", seconds + write_s)
      .field("peak_rss_mb", peak_rss_mb());
  std::cout << json.str() << std::endl;
  return 0;
}

// Below this fraction of the FMA peak the BLAS GEMM rate means mis-chosen kernels: OpenBLAS's own
// kernels reach 0.6-0.85 of the peak on the hosts of bench/RESULTS.md, an AVX2 kernel set on an
// AVX-512 machine about 0.4, an SSE one well under 0.2.
constexpr double kBlasWarnFraction = 0.3;

int run_bench_limits(std::span<const std::string> argv) {
  Args args("edgeattn bench limits",
            "Measures the machine's limits on --threads threads and prints one JSON object:\n"
            "stream_triad_gbps (best STREAM triad), fma_peak_gflops (float32 FMA, all threads),\n"
            "random_gather_gbps (random 256-byte rows from a 256 MiB table), blas_core (the kernel\n"
            "set OpenBLAS chose for this CPU), blas_gemm_gflops (a 1024^3 float product on OpenBLAS\n"
            "tiles, all threads) and blas_fraction (of the FMA peak), threads, cpu_model.\n"
            "Where blas_fraction is below 0.3, a warning on stderr says OpenBLAS has likely taken an\n"
            "older core's kernels and how to choose others (OPENBLAS_CORETYPE).");
  args.option("threads", "T", "all cores", "worker threads");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  std::optional<ThreadLimit> limit;
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));
  const bench::MachineLimits m = bench::measure_machine_limits(max_threads());
  JsonObject json;
  json.field("library", "edgeattn")
      .field("version", tool_version())
      .field("stream_triad_gbps", m.stream_triad_gbps)
      .field("fma_peak_gflops", m.fma_peak_gflops)
      .field("random_gather_gbps", m.random_gather_gbps)
      .field("blas_core", m.blas_core)
      .field("blas_gemm_gflops", m.blas_gemm_gflops)
      .field("blas_fraction", m.blas_gemm_gflops / m.fma_peak_gflops)
      .field("threads", m.threads)
      .field("cpu_model", m.cpu_model)
      .field("peak_rss_mb", peak_rss_mb());
  std::cout << json.str() << std::endl;
  if (m.blas_gemm_gflops < kBlasWarnFraction * m.fma_peak_gflops)
    std::cerr << "warning: OpenBLAS runs sgemm at " << m.blas_gemm_gflops << " GFLOP/s, "
              << 100.0 * m.blas_gemm_gflops / m.fma_peak_gflops << "% of this machine's FMA peak ("
              << m.fma_peak_gflops << " GFLOP/s), with the kernels of core '" << m.blas_core
              << "': it has likely taken an older core's kernels for this CPU. The dense attention path "
                 "and wide products run at that rate. Set OPENBLAS_CORETYPE to this CPU's core (names "
                 "this OpenBLAS accepts include Haswell, SkylakeX and Zen; OPENBLAS_VERBOSE=2 prints "
                 "what it chose) and compare blas_gemm_gflops.\n";
  return 0;
}

}  // namespace edgeattn::cli
