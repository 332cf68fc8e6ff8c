// build_graph: COO edge list -> CSR by destination, applying the self-loop, duplicate and
// symmetrize policies and recording where every input edge went.
//
// Algorithm, O(E + N) plus a per-row sort that is skipped when a row arrives sorted:
//  1. Candidates are enumerated in a fixed order and tagged so that tag order is that order:
//       input edge k (kept by the self-loop policy)   tag k              in [0, M)
//       reverse of input edge k (symmetrize)          tag M + k          in [M, 2M)
//       self-loop of node i (SelfLoops::add)          tag 2M + i
//  2. Counting sort of the candidates by destination (stable, so each row's tags ascend).
//  3. Each row is sorted by (source, tag). Rows are independent and every key is unique, so this
//     step runs in parallel and its result does not depend on the thread count.
//  4. A serial pass walks each run of equal (dst, src): inputs come first (in input order), then
//     reverse edges, then an added self-loop. Under `keep` the run emits its inputs plus as many
//     reverse edges as exceed them (a reverse edge pairs with a coinciding input edge); under
//     `merge` it emits one edge, attributed to its first input edge if any.
#include "edgeattn/graph/build.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn {
namespace {

constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();

template <class Index>
Graph build_graph_impl(int64_t num_dst, int64_t num_src, std::span<const Index> src,
                       std::span<const Index> dst, const BuildOptions& options) {
  if (num_dst < 0 || num_dst > kMaxNodes)
    raise<GraphError>("build_graph: num_dst is ", num_dst, ", expected in [0, ", kMaxNodes, "]");
  if (num_src < 0 || num_src > kMaxNodes)
    raise<GraphError>("build_graph: num_src is ", num_src, ", expected in [0, ", kMaxNodes, "]");
  if (src.size() != dst.size())
    raise<GraphError>("build_graph: src has ", src.size(), " entries and dst has ", dst.size(),
                      ", expected the same length");
  if (options.self_loops == SelfLoops::add && num_dst != num_src)
    raise<GraphError>("build_graph: SelfLoops::add needs a square graph, got num_dst=", num_dst,
                      " != num_src=", num_src);
  if (options.symmetrize && num_dst != num_src)
    raise<GraphError>("build_graph: symmetrize needs a square graph, got num_dst=", num_dst,
                      " != num_src=", num_src);

  const auto M = static_cast<int64_t>(src.size());
  for (int64_t k = 0; k < M; ++k) {
    const auto s = static_cast<int64_t>(src[static_cast<size_t>(k)]);
    const auto d = static_cast<int64_t>(dst[static_cast<size_t>(k)]);
    if (s < 0 || s >= num_src)
      raise<GraphError>("build_graph: src[", k, "] is ", s, ", expected in [0, num_src=", num_src, ")");
    if (d < 0 || d >= num_dst)
      raise<GraphError>("build_graph: dst[", k, "] is ", d, ", expected in [0, num_dst=", num_dst, ")");
  }

  std::vector<int64_t> csr_edge_of_input(static_cast<size_t>(M), -1);
  const bool drop_given_loops = options.self_loops != SelfLoops::keep;
  auto kept = [&](int64_t k) {
    return !drop_given_loops || src[static_cast<size_t>(k)] != dst[static_cast<size_t>(k)];
  };
  // Calls f(tag, src, dst) for every candidate edge, in tag order.
  auto for_each_candidate = [&](auto&& f) {
    for (int64_t k = 0; k < M; ++k)
      if (kept(k))
        f(k, static_cast<int32_t>(src[static_cast<size_t>(k)]),
          static_cast<int32_t>(dst[static_cast<size_t>(k)]));
    if (options.symmetrize)
      for (int64_t k = 0; k < M; ++k)
        if (src[static_cast<size_t>(k)] != dst[static_cast<size_t>(k)])  // a self-loop is its own reverse
          f(M + k, static_cast<int32_t>(dst[static_cast<size_t>(k)]),
            static_cast<int32_t>(src[static_cast<size_t>(k)]));
    if (options.self_loops == SelfLoops::add)
      for (int64_t i = 0; i < num_dst; ++i) f(2 * M + i, static_cast<int32_t>(i), static_cast<int32_t>(i));
  };

  // 2. Counting sort by destination.
  std::vector<int64_t> row_start(static_cast<size_t>(num_dst) + 1, 0);
  for_each_candidate([&](int64_t, int32_t, int32_t d) { ++row_start[static_cast<size_t>(d) + 1]; });
  std::partial_sum(row_start.begin(), row_start.end(), row_start.begin());
  const int64_t num_candidates = row_start.back();
  std::vector<int64_t> tags(static_cast<size_t>(num_candidates));
  std::vector<int32_t> cols(static_cast<size_t>(num_candidates));
  {
    std::vector<int64_t> next(row_start.begin(), row_start.end() - 1);
    for_each_candidate([&](int64_t tag, int32_t s, int32_t d) {
      const auto p = static_cast<size_t>(next[static_cast<size_t>(d)]++);
      tags[p] = tag;
      cols[p] = s;
    });
  }

  // 3. Sort each row by (source, tag); tags already ascend within a row.
  parallel_for(0, num_dst, 4096, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<int32_t, int64_t>> scratch;
    for (int64_t i = begin; i < end; ++i) {
      const auto b = static_cast<size_t>(row_start[static_cast<size_t>(i)]);
      const auto e = static_cast<size_t>(row_start[static_cast<size_t>(i) + 1]);
      if (std::is_sorted(cols.begin() + static_cast<std::ptrdiff_t>(b),
                         cols.begin() + static_cast<std::ptrdiff_t>(e)))
        continue;
      scratch.clear();
      for (size_t p = b; p < e; ++p) scratch.emplace_back(cols[p], tags[p]);
      std::sort(scratch.begin(), scratch.end());
      for (size_t p = b; p < e; ++p) {
        cols[p] = scratch[p - b].first;
        tags[p] = scratch[p - b].second;
      }
    }
  });

  // 4. Apply the duplicate policy run by run, compacting in place (output never overtakes input).
  std::vector<int64_t> row_ptr(static_cast<size_t>(num_dst) + 1, 0);
  std::vector<int64_t> input_edge_of_csr(static_cast<size_t>(num_candidates));
  const Duplicates dup = options.duplicates;
  int64_t out = 0;
  // Duplicates::error reports the repeated pair whose second occurrence comes first in the input.
  int64_t err_first = -1, err_second = std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < num_dst; ++i) {
    const int64_t end = row_start[static_cast<size_t>(i) + 1];
    int64_t p = row_start[static_cast<size_t>(i)];
    while (p < end) {
      const int32_t s = cols[static_cast<size_t>(p)];
      int64_t q = p;
      int64_t num_inputs = 0, num_reverse = 0;
      for (; q < end && cols[static_cast<size_t>(q)] == s; ++q) {
        const int64_t tag = tags[static_cast<size_t>(q)];
        if (tag < M)
          ++num_inputs;
        else if (tag < 2 * M)
          ++num_reverse;
      }
      // Run [p, q): inputs at [p, p + num_inputs), then reverse edges, then at most one added loop.
      if (dup == Duplicates::keep) {
        for (int64_t r = p; r < p + num_inputs; ++r) {
          const int64_t k = tags[static_cast<size_t>(r)];
          cols[static_cast<size_t>(out)] = s;
          input_edge_of_csr[static_cast<size_t>(out)] = k;
          csr_edge_of_input[static_cast<size_t>(k)] = out++;
        }
        const int64_t extra =
            std::max<int64_t>(num_reverse - num_inputs, 0) + (q - p - num_inputs - num_reverse);
        for (int64_t r = 0; r < extra; ++r) {
          cols[static_cast<size_t>(out)] = s;
          input_edge_of_csr[static_cast<size_t>(out)] = -1;
          ++out;
        }
      } else {
        if (dup == Duplicates::error && num_inputs > 1 && tags[static_cast<size_t>(p) + 1] < err_second) {
          err_first = tags[static_cast<size_t>(p)];
          err_second = tags[static_cast<size_t>(p) + 1];
        }
        const int64_t first = num_inputs > 0 ? tags[static_cast<size_t>(p)] : -1;
        for (int64_t r = p; r < p + num_inputs; ++r)
          csr_edge_of_input[static_cast<size_t>(tags[static_cast<size_t>(r)])] = out;
        cols[static_cast<size_t>(out)] = s;
        input_edge_of_csr[static_cast<size_t>(out)] = first;
        ++out;
      }
      p = q;
    }
    row_ptr[static_cast<size_t>(i) + 1] = out;
  }
  if (err_first >= 0)
    raise<GraphError>("build_graph: edge (src=", src[static_cast<size_t>(err_first)],
                      ", dst=", dst[static_cast<size_t>(err_first)], ") appears at k=", err_first,
                      " and k=", err_second, " (Duplicates::error)");

  tags = {};
  cols.resize(static_cast<size_t>(out));
  cols.shrink_to_fit();
  input_edge_of_csr.resize(static_cast<size_t>(out));
  input_edge_of_csr.shrink_to_fit();
  // Rows are sorted (non-decreasing; repeated columns only under Duplicates::keep), so
  // CsrCheck::sort only verifies them here.
  return Graph::from_csr(num_dst, num_src, std::move(row_ptr), std::move(cols), CsrCheck::sort)
      .with_input_maps(std::move(input_edge_of_csr), std::move(csr_edge_of_input));
}

}  // namespace

Graph build_graph(int64_t num_dst, int64_t num_src, std::span<const int64_t> src,
                  std::span<const int64_t> dst, const BuildOptions& options) {
  return build_graph_impl<int64_t>(num_dst, num_src, src, dst, options);
}

Graph build_graph(int64_t num_dst, int64_t num_src, std::span<const int32_t> src,
                  std::span<const int32_t> dst, const BuildOptions& options) {
  return build_graph_impl<int32_t>(num_dst, num_src, src, dst, options);
}

}  // namespace edgeattn
