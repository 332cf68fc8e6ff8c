// edgeattn bench attention: times one attention configuration and prints one JSON object.
//
// The main measurement runs on --path (sparse by default): forward, and forward + backward, each
// the median of --repeat runs after one untimed warm-up. The dense path is timed as well when it
// can run (dot or bilinear score), the graph is small enough for it to finish quickly (at most
// 16384 nodes) and --no-dense is absent; the report then includes the largest difference between
// the two outputs.
//
// bytes_moved and forward_gflops use the benchmarks' models (bench/support/traffic_model.hpp), so
// the tool and the Google Benchmark suite report the same figures: the compulsory traffic of the
// fused forward when no gathered source row is reused, in float32,
//   per edge:            4 B column index + the source's key row (H*D*4 B; additive: its score
//                        scalars, H*4 B) + the source's value row (H*D*4 B)
//   per destination row: its query row (H*D*4 B; additive: H*4 B) + its output row (H*D*4 B)
//                        + 8 B row offset + H*4 B row log-sum-exp
// and 2 * (D + D) useful flops per edge and head (2 + 2D for additive). The projections that
// bilinear and perceptron scores run first (GEMMs over nodes) are not counted.
#include <cstdio>
#include <iostream>
#include <optional>
#include <variant>

#include "args.hpp"
#include "commands.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "inputs.hpp"
#include "json.hpp"
#include "patterns.hpp"
#include "peer_inputs.hpp"
#include "support/machine_limits.hpp"
#include "support/traffic_model.hpp"
#include "timing.hpp"

namespace edgeattn::cli {
namespace {

constexpr int64_t kMaxDenseNodes = 16384;

const char* kSummary =
    "Times graph-masked multi-head attention (forward, and forward + backward) and prints one JSON\n"
    "object: edges, nodes, heads, head_dim, score, pattern, threads, path, forward_ms,\n"
    "forward_backward_ms (medians of --repeat runs), peak_rss_mb, edges_per_s and achieved_gbps of the\n"
    "forward, bytes_moved, and dense_forward_ms, dense_forward_backward_ms and max_abs_diff_dense\n"
    "when the dense path also ran (dot or bilinear score, at most 16384 nodes, no --no-dense).\n"
    "With --limits also the machine's STREAM triad bandwidth and FMA peak, and the fractions of them\n"
    "the forward reached.\n"
    "\n"
    "bytes_moved models the compulsory traffic of the fused forward, every gathered row counted\n"
    "once per edge (as bench/README.md): per edge 4 B of column index + the source's key row\n"
    "(additive: its score scalars) + its value row; per destination its query row (additive: score\n"
    "scalars) + its output row + 8 B row offset + 4 B per head of log-sum-exp.\n"
    "\n"
    "peak_rss_mb is the process's peak right after the main measurement (before --limits and the\n"
    "dense path); held_mb what the caller holds at the peak of forward + backward (the pattern with\n"
    "its transpose, the distinct inputs, out and lse, grad_out and the gradients); peak_over_held =\n"
    "(peak_rss_mb - baseline_rss_mb) / held_mb, with baseline_rss_mb the resident size at start.\n"
    "\n"
    "--input FILE (an .npz of `edgeattn bench write-inputs`) replaces --pattern, --nodes and --edges:\n"
    "the graph is the file's, and q = k = v = attr_matrix [N, F] viewed [N, H, d] (F must equal\n"
    "--heads x --head-dim). --score dot, or additive: score_src[j, h] = sum_k x[j, h, k] att_src[h, k]\n"
    "and score_dst[i, h] = sum_k x[i, h, k] att_dst[h, k] with the file's att_src, att_dst [H, d],\n"
    "e_ij = LeakyReLU_0.2(score_dst[i] + score_src[j]). The report's input field is the\n"
    "file (null without --input).";

Score parse_score_option(const std::string& text) {
  try {
    return parse_score(text);
  } catch (const InvalidArgument&) {
    throw UsageError("--score is '" + text + "', expected dot, additive, gatv2, bilinear or perceptron");
  }
}

AttentionPath parse_path_option(const std::string& text) {
  if (text == "auto" || text == "automatic") return AttentionPath::automatic;
  if (text == "sparse") return AttentionPath::sparse;
  if (text == "dense") return AttentionPath::dense;
  throw UsageError("--path is '" + text + "', expected auto, sparse or dense");
}

bool dense_capable(Score s) { return s == Score::dot_product || s == Score::bilinear; }

struct Timings {
  double forward_ms = 0, forward_backward_ms = 0;
  AttentionResult result;  // the last forward, for comparing paths
  int64_t grad_bytes = 0;  // the gradients' storage
};

int64_t bytes_of(const Tensor& t) { return t.absent() ? 0 : t.numel() * static_cast<int64_t>(sizeof(float)); }

// Forward + backward first, then the forward alone, so that no earlier result is alive while the
// backward runs (peak memory is what one call holds); each forward drops the previous result
// before it allocates its own.
Timings time_path(const Pattern& pattern, const Operands& ops, const AttentionConfig& config,
                  ConstView grad_out, int repeat) {
  Timings t;
  t.forward_backward_ms = median_ms(repeat, [&] {
    const AttentionResult fwd = attention_forward(pattern, ops.inputs, config);
    const AttentionGrads g = attention_backward(pattern, ops.inputs, config, fwd, grad_out);
    t.grad_bytes = 0;
    for (const Tensor* x : {&g.query, &g.key, &g.value, &g.score_dst, &g.score_src, &g.weight, &g.key_weight,
                            &g.att, &g.edge_bias})
      t.grad_bytes += bytes_of(*x);
  });
  t.forward_ms = median_ms(repeat, [&] {
    t.result = AttentionResult{};
    t.result = attention_forward(pattern, ops.inputs, config);
  });
  return t;
}

// Bytes the caller holds at the peak of forward + backward: the pattern (an explicit graph with
// the transpose the backward builds: row offsets and indices both ways; a structured pattern: its
// row offsets), the distinct input operands, the forward's results, grad_out and the gradients.
int64_t held_bytes(const Pattern& pattern, const AttentionInputs& in, const Timings& t, ConstView grad_out) {
  const int64_t nd = num_dst(pattern), ns = num_src(pattern), ne = num_edges(pattern);
  int64_t bytes = std::holds_alternative<Graph>(pattern) ? (nd + 1 + ns + 1) * 8 + 2 * ne * 4 : (nd + 1) * 8;
  std::vector<const float*> seen;
  for (const ConstView* v : {&in.query, &in.key, &in.value, &in.score_dst, &in.score_src, &in.weight,
                             &in.key_weight, &in.att, &in.edge_bias}) {
    if (v->empty() || std::ranges::find(seen, v->data()) != seen.end()) continue;
    seen.push_back(v->data());
    bytes += v->numel() * static_cast<int64_t>(sizeof(float));
  }
  bytes += bytes_of(t.result.out) + bytes_of(t.result.row_stats) + bytes_of(t.result.attention);
  return bytes + grad_out.numel() * static_cast<int64_t>(sizeof(float)) + t.grad_bytes;
}

/// q = k = v = the input's features viewed [N, H, d]; additive scores from its att_src / att_dst.
Operands input_operands(const PeerInput& in, Score score, int64_t heads, int64_t dim) {
  if (score != Score::dot_product && score != Score::additive)
    throw UsageError("--input supports --score dot and additive, got '" + std::string(to_string(score)) +
                     "'");
  const ConstView x = features_as_heads(in, heads, dim);
  Operands o;
  o.inputs.value = x;
  if (score == Score::dot_product) {
    o.inputs.query = x;
    o.inputs.key = x;
    return o;
  }
  for (const Tensor* a : {&in.att_src, &in.att_dst})
    if (a->absent() || a->shape() != Shape{heads, dim})
      raise<InvalidArgument>(in.path, ": --score additive needs att_src and att_dst of shape [", heads, ", ",
                             dim, "] (write the input with --heads ", heads, ")");
  const int64_t n = x.dim(0);
  const auto scores = [&](const Tensor& att) {
    Tensor s({n, heads});
    parallel_for(0, n, 1024, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t h = 0; h < heads; ++h) {
          float acc = 0.f;
          for (int64_t k = 0; k < dim; ++k)
            acc += x.data()[(i * heads + h) * dim + k] * att.data()[h * dim + k];
          s.data()[i * heads + h] = acc;
        }
    });
    return s;
  };
  o.score_src = scores(in.att_src);
  o.score_dst = scores(in.att_dst);
  o.inputs.score_src = o.score_src.view();
  o.inputs.score_dst = o.score_dst.view();
  return o;
}

}  // namespace

int run_bench_attention(std::span<const std::string> argv) {
  const double baseline_mb = current_rss_mb();  // the libraries, before any operand exists
  Args args("edgeattn bench attention", kSummary);
  args.option("pattern", "P", "uniform",
              "uniform | rmat | complete | causal | window:W | PATH of an edge list ('src dst' lines, # "
              "comments)")
      .option("nodes", "N", "65536", "number of nodes (edge list: max id + 1 unless given)")
      .option("edges", "E", "16 * nodes", "edges to draw for uniform and rmat; duplicates are merged")
      .option("heads", "H", "4", "attention heads")
      .option("head-dim", "D", "64", "features per head of query, key and value")
      .option("score", "S", "dot", "dot | additive | gatv2 | bilinear | perceptron")
      .option("threads", "T", "all cores", "worker threads")
      .option("seed", "S", "1", "seed of the graph and the operands")
      .option("repeat", "R", "5", "timed runs per measurement; the median is reported")
      .option("path", "P", "sparse", "auto | sparse | dense: the path of the main measurement")
      .option("input", "FILE", "", "an .npz of `bench write-inputs` instead of --pattern/--nodes/--edges")
      .flag("no-dense", "do not time the dense path for comparison")
      .flag("limits", "also measure STREAM triad, FMA peak and the BLAS GEMM rate (about a second)");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }

  const bool from_input = args.given("input");
  if (from_input)
    for (const char* o : {"pattern", "nodes", "edges"})
      if (args.given(o)) throw UsageError(std::string("--") + o + " does not apply with --input");
  const PatternSpec spec = parse_pattern(from_input ? std::string("uniform") : args.str("pattern"));
  const bool from_file = spec.kind == PatternSpec::Kind::file;
  const int64_t nodes =
      (args.given("nodes") || !from_file) ? args.integer("nodes", 1, (int64_t{1} << 31) - 1) : 0;
  if (args.given("edges") && !takes_edge_count(spec))
    throw UsageError("--edges applies to --pattern uniform and rmat only; '" + spec.text +
                     "' determines its own edges");
  const int64_t edges = args.given("edges") ? args.integer("edges", 0) : 16 * nodes;
  const int64_t heads = args.integer("heads", 1, 4096);
  const int64_t dim = args.integer("head-dim", 1, 1 << 16);
  const Score score = parse_score_option(args.str("score"));
  const auto seed = static_cast<uint64_t>(args.integer("seed", 0));
  const int repeat = static_cast<int>(args.integer("repeat", 1, 1000));
  const AttentionPath path = parse_path_option(args.str("path"));
  if (path == AttentionPath::dense && !dense_capable(score))
    throw UsageError("--path dense supports --score dot and bilinear, got '" + args.str("score") + "'");
  std::optional<ThreadLimit> limit;
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));

  Pattern pattern;
  std::optional<PeerInput> input;
  double pattern_ms = 0;
  if (from_input) {
    input.emplace(load_peer_input(args.str("input")));
    pattern_ms = time_ms([&] { pattern = input->dataset.graph; });
  } else {
    pattern_ms = time_ms([&] { pattern = make_pattern(spec, nodes, edges, seed); });
  }
  const int64_t nd = num_dst(pattern), ns = num_src(pattern), ne = num_edges(pattern);
  const Operands ops =
      from_input ? input_operands(*input, score, heads, dim) : make_operands(score, nd, ns, heads, dim, seed);
  const Tensor grad_out = random_tensor({nd, heads, dim}, seed, 99);

  AttentionConfig config;
  config.score = score;
  config.path = path;
  const Timings main_run = time_path(pattern, ops, config, grad_out, repeat);
  // Memory of the main measurement, before the machine limits and the dense path allocate theirs.
  const double peak_mb = peak_rss_mb();
  const double held_mb =
      static_cast<double>(held_bytes(pattern, ops.inputs, main_run, grad_out)) / (1024.0 * 1024.0);

  JsonObject json;
  json.field("pattern", from_input ? std::string("input") : spec.text)
      .field("nodes", nd)
      .field("edges", ne)
      .field("density", density(pattern))
      .field("heads", heads)
      .field("head_dim", dim)
      .field("score", to_string(score))
      .field("threads", max_threads())
      .field("seed", static_cast<int64_t>(seed))
      .field("repeat", repeat)
      .field("path", to_string(main_run.result.path))
      .field("pattern_build_ms", pattern_ms)
      .field("library", "edgeattn")
      .field("version", tool_version());
  if (from_input)
    json.field("input", input->path);
  else
    json.raw_field("input", "null");
  json.field("forward_ms", main_run.forward_ms).field("forward_backward_ms", main_run.forward_backward_ms);
  const bench::AttentionShape shape{.num_dst = nd,
                                    .num_src = ns,
                                    .num_edges = ne,
                                    .heads = heads,
                                    .qk_dim = score == Score::additive ? 0 : dim,
                                    .value_dim = dim};
  const double bytes = bench::attention_forward_bytes(shape);
  const double forward_s = main_run.forward_ms / 1e3;
  const double gbps = bytes / forward_s / 1e9,
               gflops = bench::attention_forward_flops(shape) / forward_s / 1e9;
  json.field("edges_per_s", static_cast<double>(ne) / forward_s)
      .field("bytes_moved", static_cast<int64_t>(bytes))
      .field("achieved_gbps", gbps)
      .field("forward_gflops", gflops);
  if (args.flag_set("limits")) {
    const bench::MachineLimits limits = bench::measure_machine_limits(max_threads());
    json.field("stream_triad_gbps", limits.stream_triad_gbps)
        .field("stream_fraction", gbps / limits.stream_triad_gbps)
        .field("random_gather_gbps", limits.random_gather_gbps)
        .field("random_gather_fraction", gbps / limits.random_gather_gbps)
        .field("fma_peak_gflops", limits.fma_peak_gflops)
        .field("fma_fraction", gflops / limits.fma_peak_gflops)
        .field("blas_core", limits.blas_core)
        .field("blas_gemm_gflops", limits.blas_gemm_gflops);
  }

  const bool run_dense = dense_capable(score) && nd <= kMaxDenseNodes && !args.flag_set("no-dense") &&
                         main_run.result.path != AttentionPath::dense;
  if (run_dense) {
    config.path = AttentionPath::dense;
    const Timings dense = time_path(pattern, ops, config, grad_out, repeat);
    json.field("dense_forward_ms", dense.forward_ms)
        .field("dense_forward_backward_ms", dense.forward_backward_ms)
        .field("max_abs_diff_dense",
               static_cast<double>(max_abs_diff(main_run.result.out, dense.result.out)));
  }
  json.field("peak_rss_mb", peak_mb)
      .field("baseline_rss_mb", baseline_mb)
      .field("held_mb", held_mb)
      .field("peak_over_held", held_mb > 0 ? (peak_mb - baseline_mb) / held_mb : 0.0);
  std::cout << json.str() << std::endl;
  return 0;
}

}  // namespace edgeattn::cli
