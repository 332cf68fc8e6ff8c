// edgeattn demo: a guided tour of the library on a bundled default, printed for a human.
//
// Builds a synthetic Cora-sized graph (2,708 nodes, 10,556 uniform random directed edges plus one
// self-loop per node, as GAT adds them), runs multi-head dot-product attention forward and
// backward on the fused sparse path and on the dense (masked GEMM) path, checks that the two
// agree on the graph and on a complete graph, and prints one node's attention weights in the
// order its edges were given. Exits with status 1 if the paths disagree beyond float32 rounding.
#include <cstdio>
#include <iostream>
#include <optional>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/generators.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "inputs.hpp"
#include "timing.hpp"

namespace edgeattn::cli {
namespace {

// Largest |sparse - dense| accepted: both paths sum the same float32 terms in different orders,
// which moves results by about 1e-7 here; anything near 1e-4 is a bug, not rounding.
constexpr float kPathTolerance = 1e-4f;

struct PathRun {
  double forward_ms = 0, forward_backward_ms = 0;
  AttentionResult forward;
  AttentionGrads grads;
};

PathRun run_path(const Pattern& pattern, const Operands& ops, AttentionConfig config, AttentionPath path,
                 ConstView grad_out, int repeat) {
  config.path = path;
  PathRun r;
  r.forward_ms = median_ms(repeat, [&] { r.forward = attention_forward(pattern, ops.inputs, config); });
  r.forward_backward_ms = median_ms(repeat, [&] {
    const AttentionResult fwd = attention_forward(pattern, ops.inputs, config);
    r.grads = attention_backward(pattern, ops.inputs, config, fwd, grad_out);
  });
  return r;
}

// Largest difference over the output and the query, key and value gradients.
float max_diff(const PathRun& a, const PathRun& b) {
  return std::max({max_abs_diff(a.forward.out, b.forward.out), max_abs_diff(a.grads.query, b.grads.query),
                   max_abs_diff(a.grads.key, b.grads.key), max_abs_diff(a.grads.value, b.grads.value)});
}

int64_t busiest_node(const Graph& g) {
  int64_t best = 0;
  for (int64_t i = 1; i < g.num_dst(); ++i)
    if (g.degree(i) > g.degree(best)) best = i;
  return best;
}

// One node's weights (head 0) listed in input edge order, then the edges the builder added.
void print_node_weights(const Graph& g, const EdgeList& input, const AttentionResult& fwd, int64_t node) {
  const Tensor alpha_in = to_input_edge_order(g, fwd.attention);  // [num_input_edges, H]
  const auto csr_of_input = g.csr_edge_of_input();
  const auto input_of_csr = g.input_edge_of_csr();
  std::printf(
      "node %lld has %lld in-edges; its attention weights (head 0) in the order the edges were given:\n",
      static_cast<long long>(node), static_cast<long long>(g.degree(node)));
  std::printf("  %10s  %6s -> %-6s  %7s\n", "input edge", "src", "dst", "alpha");
  std::vector<bool> seen(static_cast<size_t>(g.num_edges()), false);
  double sum = 0;
  for (size_t k = 0; k < input.dst.size(); ++k) {
    if (input.dst[k] != node) continue;
    const int64_t e = csr_of_input[k];
    const char* note = "";
    if (e < 0) {
      note = "  (self-loop given in the input: dropped, one is added below)";
    } else if (seen[static_cast<size_t>(e)]) {
      note = "  (repeats an earlier edge: merged into it)";
    } else {
      seen[static_cast<size_t>(e)] = true;
      sum += alpha_in(static_cast<int64_t>(k), 0);
    }
    std::printf("  %10zu  %6d -> %-6d  %7.4f%s\n", k, input.src[k], input.dst[k],
                alpha_in(static_cast<int64_t>(k), 0), note);
  }
  const auto row = g.row(node);
  const int64_t first = g.row_ptr()[static_cast<size_t>(node)];
  for (size_t p = 0; p < row.size(); ++p) {
    const int64_t e = first + static_cast<int64_t>(p);
    if (input_of_csr[static_cast<size_t>(e)] >= 0) continue;
    sum += fwd.attention(e, 0);
    std::printf("  %10s  %6d -> %-6lld  %7.4f  (self-loop added by the builder)\n", "(added)", row[p],
                static_cast<long long>(node), fwd.attention(e, 0));
  }
  std::printf("  %10s  %17s  %7.4f  (softmax over the node's in-edges)\n", "sum", "", sum);
}

}  // namespace

int run_demo(std::span<const std::string> argv) {
  Args args("edgeattn demo",
            "Runs multi-head graph attention on a synthetic Cora-sized graph (uniform random edges plus\n"
            "self-loops), forward and backward, on the sparse and the dense path, and prints a summary.");
  args.option("nodes", "N", "2708", "nodes of the random graph")
      .option("edges", "E", "10556",
              "random directed edges before duplicates are merged and self-loops added")
      .option("heads", "H", "8", "attention heads")
      .option("head-dim", "D", "8", "features per head")
      .option("complete-nodes", "N", "1024", "size of the complete graph used to compare the paths")
      .option("node", "I", "busiest", "node whose attention weights are printed")
      .option("seed", "S", "0", "seed of the graph and the operands")
      .option("repeat", "R", "5", "timed runs per measurement; the median is reported")
      .option("threads", "T", "all cores", "worker threads");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  const int64_t n = args.integer("nodes", 1, 1 << 20);
  const int64_t m = args.integer("edges", 0, int64_t{1} << 32);
  const int64_t heads = args.integer("heads", 1, 256);
  const int64_t dim = args.integer("head-dim", 1, 4096);
  const int64_t complete_n = args.integer("complete-nodes", 1, 1 << 14);
  const auto seed = static_cast<uint64_t>(args.integer("seed", 0));
  const int repeat = static_cast<int>(args.integer("repeat", 1, 1000));
  std::optional<ThreadLimit> limit;
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));

  // The graph: uniform random edges, then GAT's convention of one self-loop per node.
  const EdgeList input = erdos_renyi_edges(n, m, seed);
  const Graph g = build_graph(n, n, std::span<const int32_t>(input.src), std::span<const int32_t>(input.dst),
                              {.self_loops = SelfLoops::add, .duplicates = Duplicates::merge});
  const DegreeStats& deg = g.degree_stats();
  std::printf("edgeattn demo: multi-head graph attention, sparse and dense paths\n\n");
  std::printf(
      "graph      %lld nodes, %lld edges: %lld uniform random directed edges (seed %llu, duplicates\n"
      "           merged) plus one self-loop per node. Synthetic and Cora-sized, not the Cora graph.\n"
      "           in-degree min %lld, mean %.2f, max %lld\n",
      static_cast<long long>(n), static_cast<long long>(g.num_edges()), static_cast<long long>(m),
      static_cast<unsigned long long>(seed), static_cast<long long>(deg.min_degree), deg.mean_degree,
      static_cast<long long>(deg.max_degree));
  std::printf(
      "attention  %lld heads x %lld features, scaled dot-product score, softmax over each node's "
      "in-edges\nthreads    %d\n\n",
      static_cast<long long>(heads), static_cast<long long>(dim), max_threads());

  const Operands ops = make_operands(Score::dot_product, n, n, heads, dim, seed);
  const Tensor grad_out = random_tensor({n, heads, dim}, seed, 99);
  AttentionConfig config;
  config.return_attention = true;
  const PathRun sparse = run_path(g, ops, config, AttentionPath::sparse, grad_out, repeat);
  const PathRun dense = run_path(g, ops, config, AttentionPath::dense, grad_out, repeat);
  std::printf("%-26s %12s %18s   (median of %d runs)\n", "path", "forward", "forward+backward", repeat);
  std::printf("%-26s %9.3f ms %15.3f ms\n", "sparse (fused, CSR rows)", sparse.forward_ms,
              sparse.forward_backward_ms);
  std::printf("%-26s %9.3f ms %15.3f ms\n", "dense (masked GEMM)", dense.forward_ms,
              dense.forward_backward_ms);
  const float graph_diff = max_diff(sparse, dense);
  std::printf("max |sparse - dense| over output and gradients on this graph: %.3g\n\n", graph_diff);

  // On the complete graph the sparse path computes ordinary dense attention.
  const CompletePattern complete(complete_n, complete_n);
  const Operands cops = make_operands(Score::dot_product, complete_n, complete_n, heads, dim, seed + 1);
  const Tensor cgrad = random_tensor({complete_n, heads, dim}, seed + 1, 99);
  config.return_attention = false;
  const PathRun csparse = run_path(complete, cops, config, AttentionPath::sparse, cgrad, 1);
  const PathRun cdense = run_path(complete, cops, config, AttentionPath::dense, cgrad, 1);
  const float complete_diff = max_diff(csparse, cdense);
  std::printf(
      "complete graph on %lld nodes (%lld edges): max |sparse - dense| over output and gradients = %.3g\n\n",
      static_cast<long long>(complete_n), static_cast<long long>(complete.num_edges()), complete_diff);

  const int64_t node = args.given("node") ? args.integer("node", 0, n - 1) : busiest_node(g);
  print_node_weights(g, input, sparse.forward, node);
  if (!(graph_diff <= kPathTolerance && complete_diff <= kPathTolerance)) {
    std::fflush(stdout);  // the error goes after the summary it refers to
    std::fprintf(stderr, "\nedgeattn demo: error: the sparse and dense paths disagree by more than %g\n",
                 static_cast<double>(kPathTolerance));
    return 1;
  }
  return 0;
}

}  // namespace edgeattn::cli
