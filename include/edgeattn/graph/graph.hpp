// Graph: the sparsity pattern of attention, stored as CSR by destination.
//
// Row i lists the source nodes j whose values node i attends to (edge j -> i, stored at row i).
// Offsets are 64-bit, column indices 32-bit; num_dst and num_src may differ (bipartite attention,
// e.g. queries over a different key set). Column indices are sorted within each row.
//
// A Graph is immutable after construction and cheap to copy (it shares its storage). What kernels
// need beyond the CSR is prepared once, on first use, and cached on the graph (thread-safe):
//   transpose()      CSC by source, for source-parallel backward
//   transpose_edges() the CSR position of each transpose entry (only kernels with per-edge data
//                    in CSR order need it: edge bias, edge records; built separately so others do
//                    not pay for it; 4 bytes an edge up to 2^31 - 1 edges, 8 beyond)
//   degree_stats()   in-degree summary
//   partition()      row ranges balanced by edge count, for load balance
//   source_partition() column ranges balanced by in-edge count (the backward's source passes)
//
// Example:
//   // 3 nodes; edges 0->1, 2->1, 1->2 (src -> dst); node 0 attends to nothing
//   auto g = edgeattn::Graph::from_csr(3, 3, {0, 0, 2, 3}, {0, 2, 1});
//   g.row(1);                      // {0, 2}
//   const auto& t = g.transpose(); // t.col_ptr {0, 1, 2, 3}, t.row_idx {1, 2, 1}
//   g.transpose_edges()[1];        // 2: transpose entry 1 is CSR edge 2 (entries {0, 2, 1})
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace edgeattn {

namespace detail {
struct TrustedCsr;  // lib/graph/trusted_csr.hpp: the builders' unchecked constructor
}  // namespace detail

/// How strictly `Graph::from_csr` checks its input.
enum class CsrCheck {
  require_sorted,  ///< throw GraphError if a row's columns are not strictly increasing
  sort,            ///< sort each row's columns (edge ids follow); duplicates are kept. If no
                   ///< input_edge_of_csr was given and some row had to move, input_edge_of_csr()
                   ///< then gives each edge's position in the col_idx passed in.
};

/// The cached transpose: CSC by source. Column j's in-edges in the forward view are
/// row_idx[col_ptr[j] .. col_ptr[j+1]) (destinations, ascending). Graph::transpose_edges()[p] is
/// the CSR position of entry p, so per-edge data stored in CSR order is reachable from either side.
struct Transpose {
  std::vector<int64_t> col_ptr;  // [num_src + 1]
  std::vector<int32_t> row_idx;  // [num_edges] destination of each edge, grouped by source
};

/// Graph::transpose_edges(): the CSR position of each transpose entry, [num_edges]. Stored in 32
/// bits while the graph has at most INT32_MAX edges (`narrow`), in 64 bits beyond (`wide`, then
/// non-empty): only one of them is filled. Kernels loop over it with visit, which passes the span
/// in use, so the index type is fixed inside their loops.
struct TransposeEdges {
  std::span<const int32_t> narrow;
  std::span<const int64_t> wide;

  bool is_wide() const { return !wide.empty(); }
  size_t size() const { return is_wide() ? wide.size() : narrow.size(); }
  int64_t operator[](size_t p) const { return is_wide() ? wide[p] : narrow[p]; }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return is_wide() ? f(wide) : f(narrow);
  }
};

/// In-degree (edges per destination row) summary.
struct DegreeStats {
  int64_t min_degree = 0;
  int64_t max_degree = 0;
  double mean_degree = 0.0;
  int64_t isolated_rows = 0;    ///< rows with no edge (their attention output is zero)
  int64_t self_loops = 0;       ///< edges with src == dst (meaningful when num_src == num_dst)
  int64_t duplicate_edges = 0;  ///< edges whose source repeats the previous edge's in its row
                                ///< (only a CsrCheck::sort graph keeps such duplicates)
  /// Sum over non-empty rows of last source - first source + 1: the columns the rows' hulls span.
  /// num_edges / row_extent is how full the hulls are (1 for contiguous rows).
  int64_t row_extent = 0;
};

class Graph {
 public:
  /// The empty graph: 0 destinations, 0 sources, no edges.
  Graph();

  /// Builds from CSR arrays (taken by value; move them in to avoid a copy). Validates that
  /// row_ptr has num_dst+1 non-decreasing entries from 0 to col_idx.size(), that every column is
  /// in [0, num_src), and (per `check`) that rows are sorted. `input_edge_of_csr`, if given, has one
  /// entry per edge: the index of that edge in the caller's own edge list, or -1 for an edge the
  /// caller did not list (e.g. an added self-loop). Throws GraphError naming the offending entry.
  static Graph from_csr(int64_t num_dst, int64_t num_src, std::vector<int64_t> row_ptr,
                        std::vector<int32_t> col_idx, CsrCheck check = CsrCheck::require_sorted,
                        std::vector<int64_t> input_edge_of_csr = {});

  int64_t num_dst() const;
  int64_t num_src() const;
  int64_t num_edges() const;
  /// num_edges / (num_dst * num_src); 0 for an empty graph.
  double density() const;

  std::span<const int64_t> row_ptr() const;  // [num_dst + 1]
  std::span<const int32_t> col_idx() const;  // [num_edges]
  /// Sources of row i, ascending.
  std::span<const int32_t> row(int64_t i) const;
  int64_t degree(int64_t i) const;

  /// For each CSR edge, its index in the edge list the graph was built from (-1: added by the
  /// builder). Empty when the graph was built from CSR without such a mapping.
  std::span<const int64_t> input_edge_of_csr() const;
  /// For each edge of the list the graph was built from, its CSR position (-1: dropped by the
  /// builder, e.g. a removed self-loop). Duplicates that were merged map to the kept edge.
  /// Empty when the graph was built from CSR.
  std::span<const int64_t> csr_edge_of_input() const;

  /// Cached, computed on first call (thread-safe).
  const Transpose& transpose() const;
  /// [num_edges]: the CSR position of each transpose entry (same order as transpose().row_idx).
  /// Cached apart from the transpose (4 bytes an edge, 8 beyond INT32_MAX edges), so it exists
  /// only where per-edge data is read from the source side.
  TransposeEdges transpose_edges() const;
  const DegreeStats& degree_stats() const;
  /// Row boundaries [0 = b_0 < b_1 < ... < b_k = num_dst] of chunks holding about the same
  /// number of edges (+ rows). Depends only on the graph, never on the thread count.
  std::span<const int64_t> partition() const;
  /// The same for the sources: column boundaries [0 = b_0 < ... < b_k = num_src] of chunks holding
  /// about the same number of in-edges (+ columns), from the transpose (built if need be). The
  /// backward's source passes run over them.
  std::span<const int64_t> source_partition() const;

  /// "Graph(num_dst=..., num_src=..., num_edges=...)"
  std::string describe() const;

  /// Internal: attaches the input-order maps (used by the builders).
  Graph with_input_maps(std::vector<int64_t> input_edge_of_csr, std::vector<int64_t> csr_edge_of_input) const;

 private:
  friend struct detail::TrustedCsr;
  struct Data;
  explicit Graph(std::shared_ptr<const Data> data);
  std::shared_ptr<const Data> data_;
};

/// Row boundaries splitting rows [0, num_rows) into chunks of about `target` units of work, where
/// row i costs (row_offset[i+1] - row_offset[i]) + 1. `row_offset` has num_rows + 1 entries.
/// Used by Graph::partition() and by the structured patterns.
std::vector<int64_t> balanced_row_chunks(std::span<const int64_t> row_offset, int64_t target);

}  // namespace edgeattn
