// edgeattn bench graphblas: the peer suite's SuiteSparse:GraphBLAS baseline on one input
// (bench/graphblas/graphblas_attention.hpp), compared with edgeattn's dot-product forward.
#include <iostream>
#include <optional>

#include "args.hpp"
#include "commands.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "json.hpp"
#include "peer_inputs.hpp"
#include "timing.hpp"
#ifdef EDGEATTN_HAVE_GRAPHBLAS
#include "graphblas_attention.hpp"
#endif

namespace edgeattn::cli {

int run_bench_graphblas(std::span<const std::string> argv) {
  Args args(
      "edgeattn bench graphblas",
      "Times SuiteSparse:GraphBLAS on an input of `bench write-inputs`: per head, the masked GrB_mxm\n"
      "(SDDMM, PLUS_TIMES, the graph as a structural mask) of q k', scaling by 1/sqrt(d), the row\n"
      "softmax (GrB_reduce MAX and PLUS to vectors, diagonal-matrix GrB_mxm row scaling, GrB_apply\n"
      "exp) and the SpMM GrB_mxm with v, where q = k = v = attr_matrix viewed [N, H, d]. GxB_NTHREADS\n"
      "is --threads. Prints one JSON object: library (\"graphblas\"), version, input, nodes, edges,\n"
      "heads, head_dim, threads, repeat, setup_ms, forward_ms (median of --repeat after one warm-up),\n"
      "edgeattn_forward_ms (edgeattn's sparse dot-product forward on the same input and threads),\n"
      "max_abs_diff (GraphBLAS vs edgeattn outputs), peak_rss_mb (the whole process: the input, GraphBLAS\n"
      "and the edgeattn comparison run after it).");
  args.option("input", "FILE", "", "an .npz written by `edgeattn bench write-inputs` (required)")
      .option("heads", "H", "8", "attention heads")
      .option("head-dim", "D", "8", "features per head; H * D must equal the input's features")
      .option("threads", "T", "all cores", "threads of GraphBLAS (GxB_NTHREADS) and edgeattn")
      .option("repeat", "R", "5", "timed runs; the median is reported");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  if (!args.given("input")) throw UsageError("--input FILE is required");
#ifndef EDGEATTN_HAVE_GRAPHBLAS
  raise<Error>(
      "this edgeattn was built without SuiteSparse:GraphBLAS (apt-get install libgraphblas-dev, "
      "then reconfigure)");
#else
  std::optional<ThreadLimit> limit;
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));
  const int64_t heads = args.integer("heads", 1, 4096);
  const int64_t dim = args.integer("head-dim", 1, 1 << 16);
  const int repeat = static_cast<int>(args.integer("repeat", 1, 1000));
  const PeerInput input = load_peer_input(args.str("input"));
  const ConstView x = features_as_heads(input, heads, dim);
  const Graph& g = input.dataset.graph;

  std::optional<bench::GraphblasAttention> gb;
  const double setup_ms = time_ms([&] { gb.emplace(g, x, max_threads()); });
  const double forward_ms = median_ms(repeat, [&] { gb->forward(); });
  const Tensor out = gb->output();

  AttentionConfig config;
  config.path = AttentionPath::sparse;
  AttentionResult ours;
  const double ours_ms =
      median_ms(repeat, [&] { ours = attention_forward(g, {.query = x, .key = x, .value = x}, config); });
  float diff = 0.f;
  for (int64_t i = 0; i < out.numel(); ++i)
    diff = std::max(diff, std::abs(out.data()[i] - ours.out.data()[i]));

  JsonObject json;
  json.field("library", "graphblas")
      .field("version", bench::graphblas_version())
      .field("input", input.path)
      .field("nodes", g.num_dst())
      .field("edges", g.num_edges())
      .field("heads", heads)
      .field("head_dim", dim)
      .field("threads", max_threads())
      .field("repeat", repeat)
      .field("setup_ms", setup_ms)
      .field("forward_ms", forward_ms)
      .field("edgeattn_forward_ms", ours_ms)
      .field("max_abs_diff", static_cast<double>(diff))
      .field("peak_rss_mb", peak_rss_mb());
  std::cout << json.str() << std::endl;
  return 0;
#endif
}

}  // namespace edgeattn::cli
