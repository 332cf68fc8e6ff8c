// Node partitions: contiguous ranges, degree-balanced ranges, and METIS k-way (see the header).
#include "edgeattn/graph/partition.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "edgeattn/core/error.hpp"
#include "undirected_pattern.hpp"

#if EDGEATTN_HAVE_METIS
#include <metis.h>
#endif

namespace edgeattn {

const char* to_string(PartitionMethod method) {
  switch (method) {
    case PartitionMethod::contiguous:
      return "contiguous";
    case PartitionMethod::degree_balanced:
      return "degree_balanced";
    case PartitionMethod::metis:
      return "metis";
  }
  return "?";
}

PartitionMethod parse_partition_method(const std::string& name) {
  if (name == "contiguous") return PartitionMethod::contiguous;
  if (name == "degree_balanced" || name == "degree") return PartitionMethod::degree_balanced;
  if (name == "metis") return PartitionMethod::metis;
  raise<InvalidArgument>("partition method '", name,
                         "' is unknown; expected contiguous, degree_balanced or metis");
}

bool metis_available() { return EDGEATTN_HAVE_METIS != 0; }

PartitionMethod default_partition_method() {
  return metis_available() ? PartitionMethod::metis : PartitionMethod::degree_balanced;
}

namespace {

// Contiguous ranges of rows with about equal total weight; row i weighs weight(i) >= 1.
template <class Weight>
std::vector<int32_t> balanced_ranges(int64_t n, int64_t parts, Weight weight) {
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + weight(i);
  const int64_t total = prefix.back();
  std::vector<int32_t> part(static_cast<size_t>(n));
  // Part k ends at the first row whose prefix reaches (k + 1) / parts of the total, but leaves at
  // least one row to every later part and takes at least one itself.
  int64_t begin = 0;
  for (int64_t k = 0; k < parts; ++k) {
    int64_t end = n;
    if (k + 1 < parts) {
      const int64_t target = total / parts * (k + 1) + total % parts * (k + 1) / parts;  // no overflow
      end = std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
      end = std::clamp(end, begin + 1, n - (parts - k - 1));
    }
    for (int64_t i = begin; i < end; ++i) part[static_cast<size_t>(i)] = static_cast<int32_t>(k);
    begin = end;
  }
  return part;
}

#if EDGEATTN_HAVE_METIS
std::vector<int32_t> metis_parts(const Graph& graph, int64_t parts, uint64_t seed) {
  const Graph sym = detail::undirected_pattern(graph);
  const int64_t n = sym.num_dst();
  constexpr int64_t kMax = std::numeric_limits<idx_t>::max();
  if (sym.num_edges() > kMax)
    raise<InvalidArgument>("partition_nodes: METIS (", sizeof(idx_t) * 8, "-bit indices) cannot take the ",
                           sym.num_edges(), " symmetrized edges of ", graph.describe(),
                           "; use degree_balanced");
  std::vector<idx_t> xadj(sym.row_ptr().begin(), sym.row_ptr().end());
  std::vector<idx_t> adjncy(sym.col_idx().begin(), sym.col_idx().end());
  if (adjncy.empty()) adjncy.push_back(0);
  // Two balance constraints, as DistDGL's partitioner: nodes (a GAT layer's projections,
  // activations and their gradients are per node) and in-edges (its attention is per edge), each
  // within METIS's default tolerance of the mean (3%). A single weight of 1 + in-degree balances
  // their sum only: on R-MAT it left one of two parts 1.54M of 2.45M nodes (bench/RESULTS.md,
  // issue 22). A graph without edges has nothing for the second constraint to weigh: nodes only.
  idx_t ncon = graph.num_edges() > 0 ? 2 : 1;
  std::vector<idx_t> vwgt(static_cast<size_t>(n * ncon));
  for (int64_t i = 0; i < n; ++i) {
    vwgt[static_cast<size_t>(i * ncon)] = 1;
    if (ncon == 2) vwgt[static_cast<size_t>(i * ncon + 1)] = static_cast<idx_t>(graph.degree(i));
  }
  idx_t nvtxs = static_cast<idx_t>(n), nparts = static_cast<idx_t>(parts), objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> out(static_cast<size_t>(n));
  const int status = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                                         nullptr, &nparts, nullptr, nullptr, options, &objval, out.data());
  if (status != METIS_OK)
    raise<Error>("partition_nodes: METIS_PartGraphKway returned ", status, " for ", graph.describe(),
                 " into ", parts, " parts, expected METIS_OK");
  std::vector<int32_t> part(out.begin(), out.end());
  std::vector<int64_t> count(static_cast<size_t>(parts), 0);
  for (int32_t p : part) ++count[static_cast<size_t>(p)];
  for (int64_t k = 0; k < parts; ++k)
    if (count[static_cast<size_t>(k)] == 0)
      raise<Error>("partition_nodes: METIS left part ", k, " of ", parts, " empty for ", graph.describe(),
                   "; use degree_balanced on so small a graph");
  return part;
}
#endif

}  // namespace

std::vector<int32_t> partition_nodes(const Graph& graph, const PartitionOptions& options) {
  if (graph.num_dst() != graph.num_src())
    raise<GraphError>("partition_nodes: needs a square graph, got num_dst=", graph.num_dst(),
                      ", num_src=", graph.num_src());
  const int64_t n = graph.num_dst(), parts = options.parts;
  if (parts < 1 || parts > n || parts > std::numeric_limits<int32_t>::max())
    raise<InvalidArgument>("partition_nodes: parts is ", parts, ", expected 1 <= parts <= num_nodes = ", n,
                           " (every part owns at least one node)");
  if (parts == 1) return std::vector<int32_t>(static_cast<size_t>(n), 0);
  switch (options.method) {
    case PartitionMethod::contiguous:
      return balanced_ranges(n, parts, [](int64_t) { return int64_t{1}; });
    case PartitionMethod::degree_balanced:
      return balanced_ranges(n, parts, [&](int64_t i) { return 1 + graph.degree(i); });
    case PartitionMethod::metis:
#if EDGEATTN_HAVE_METIS
      return metis_parts(graph, parts, options.seed);
#else
      raise<InvalidArgument>(
          "partition_nodes: this build has no METIS (install libmetis-dev and reconfigure with "
          "-DEDGEATTN_METIS=ON); use degree_balanced or contiguous");
#endif
  }
  raise<InvalidArgument>("partition_nodes: unknown method");
}

PartitionQuality partition_quality(const Graph& graph, std::span<const int32_t> part, int64_t parts) {
  const int64_t n = graph.num_dst();
  if (graph.num_src() != n || static_cast<int64_t>(part.size()) != n)
    raise<InvalidArgument>("partition_quality: part has ", part.size(), " entries for ", graph.describe(),
                           ", expected one per node of a square graph");
  PartitionQuality q;
  q.parts = parts;
  q.nodes.assign(static_cast<size_t>(parts), 0);
  q.edges.assign(static_cast<size_t>(parts), 0);
  q.halo_nodes.assign(static_cast<size_t>(parts), 0);
  // A remote source counts once per part: mark it with the last part that counted it. Rows are
  // visited part by part so one mark array suffices.
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(parts));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t p = part[static_cast<size_t>(i)];
    if (p < 0 || p >= parts)
      raise<InvalidArgument>("partition_quality: part[", i, "] is ", p, ", expected in [0, ", parts, ")");
    rows_of[static_cast<size_t>(p)].push_back(i);
  }
  std::vector<int32_t> seen(static_cast<size_t>(n), -1);
  for (int64_t p = 0; p < parts; ++p) {
    for (int64_t i : rows_of[static_cast<size_t>(p)]) {
      ++q.nodes[static_cast<size_t>(p)];
      q.edges[static_cast<size_t>(p)] += graph.degree(i);
      for (int32_t j : graph.row(i)) {
        if (part[static_cast<size_t>(j)] == p) continue;
        ++q.edge_cut;
        if (seen[static_cast<size_t>(j)] != p) {
          seen[static_cast<size_t>(j)] = static_cast<int32_t>(p);
          ++q.halo_nodes[static_cast<size_t>(p)];
        }
      }
    }
  }
  const int64_t total_edges = std::accumulate(q.edges.begin(), q.edges.end(), int64_t{0});
  const int64_t max_edges = *std::max_element(q.edges.begin(), q.edges.end());
  q.edge_imbalance = total_edges > 0 ? static_cast<double>(max_edges) * static_cast<double>(parts) /
                                           static_cast<double>(total_edges)
                                     : 1.0;
  const int64_t max_nodes = *std::max_element(q.nodes.begin(), q.nodes.end());
  q.node_imbalance =
      n > 0 ? static_cast<double>(max_nodes) * static_cast<double>(parts) / static_cast<double>(n) : 1.0;
  q.halo_fraction =
      n > 0 ? static_cast<double>(std::accumulate(q.halo_nodes.begin(), q.halo_nodes.end(), int64_t{0})) /
                  static_cast<double>(n)
            : 0.0;
  return q;
}

}  // namespace edgeattn
