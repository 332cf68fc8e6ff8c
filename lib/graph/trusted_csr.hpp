// Internal: a Graph from CSR arrays that its builder guarantees, without the public checks.
//
// Graph::from_csr and Graph::with_input_maps validate every offset, column and map entry, a pass
// over all of them. build_graph constructs its arrays so that they hold by construction (and the
// tests check its results against brute force), so it hands them over here instead. Sanitizer
// builds (EDGEATTN_CHECK_INTERNAL) still run the public checks and throw std::logic_error if a
// row is out of order.
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn::detail {

struct TrustedCsr {
  /// row_ptr [num_dst + 1] from 0, non-decreasing, ending at col_idx.size(); columns in
  /// [0, num_src), non-decreasing per row; input_edge_of_csr [num_edges] in [-1, M);
  /// csr_edge_of_input [M] in [-1, num_edges).
  static Graph make(int64_t num_dst, int64_t num_src, std::vector<int64_t> row_ptr,
                    std::vector<int32_t> col_idx, std::vector<int64_t> input_edge_of_csr,
                    std::vector<int64_t> csr_edge_of_input);
};

}  // namespace edgeattn::detail
