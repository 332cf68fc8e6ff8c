// One rank's part of a partitioned graph, checked across all ranks at once (no MPI needed: the
// parts are pure functions of graph, partition and rank): every edge lands on exactly one rank
// with the right endpoints, and what rank q sends to rank r is exactly r's halo block from q, in
// the same order.
#include "edgeattn/dist/local_partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/partition.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::dist {
namespace {

void check_parts(const Graph& g, const std::vector<int32_t>& part, int parts) {
  std::vector<LocalPartition> p;
  for (int r = 0; r < parts; ++r) p.push_back(make_local_partition(g, part, parts, r));
  std::vector<int> edge_seen(static_cast<size_t>(g.num_edges()), 0);
  std::vector<int> node_seen(static_cast<size_t>(g.num_dst()), 0);
  for (int r = 0; r < parts; ++r) {
    const LocalPartition& lp = p[static_cast<size_t>(r)];
    ASSERT_EQ(lp.graph.num_dst(), lp.num_owned());
    ASSERT_EQ(lp.graph.num_src(), lp.num_src());
    ASSERT_EQ(static_cast<int64_t>(lp.edge_ids.size()), lp.graph.num_edges());
    EXPECT_TRUE(std::is_sorted(lp.owned.begin(), lp.owned.end()));
    for (int64_t v : lp.owned) {
      EXPECT_EQ(part[static_cast<size_t>(v)], r);
      ++node_seen[static_cast<size_t>(v)];
    }
    const std::vector<int64_t> src = lp.sources();
    for (int64_t k = 0; k < lp.num_owned(); ++k) {
      const int64_t i = lp.owned[static_cast<size_t>(k)];
      for (int64_t e = lp.graph.row_ptr()[static_cast<size_t>(k)];
           e < lp.graph.row_ptr()[static_cast<size_t>(k) + 1]; ++e) {
        const int64_t ge = lp.edge_ids[static_cast<size_t>(e)];
        ASSERT_GE(ge, g.row_ptr()[static_cast<size_t>(i)]) << "edge of another row";
        ASSERT_LT(ge, g.row_ptr()[static_cast<size_t>(i) + 1]) << "edge of another row";
        EXPECT_EQ(g.col_idx()[static_cast<size_t>(ge)],
                  src[static_cast<size_t>(lp.graph.col_idx()[static_cast<size_t>(e)])]);
        ++edge_seen[static_cast<size_t>(ge)];
      }
    }
    // The halo: remote, grouped by owner in rank order, ascending within.
    int64_t at = 0;
    for (int q = 0; q < parts; ++q) {
      if (q == r) {
        EXPECT_EQ(lp.recv_rows[static_cast<size_t>(q)], 0);
      }
      for (int64_t k = 0; k < lp.recv_rows[static_cast<size_t>(q)]; ++k, ++at) {
        EXPECT_EQ(part[static_cast<size_t>(lp.halo[static_cast<size_t>(at)])], q);
        if (k > 0) {
          EXPECT_LT(lp.halo[static_cast<size_t>(at) - 1], lp.halo[static_cast<size_t>(at)]);
        }
      }
    }
    EXPECT_EQ(at, lp.num_halo());
  }
  for (int c : edge_seen) EXPECT_EQ(c, 1);
  for (int c : node_seen) EXPECT_EQ(c, 1);
  // What q sends r is r's halo block from q.
  for (int r = 0; r < parts; ++r)
    for (int q = 0; q < parts; ++q) {
      const LocalPartition& to = p[static_cast<size_t>(r)];
      const LocalPartition& from = p[static_cast<size_t>(q)];
      ASSERT_EQ(from.send_rows[static_cast<size_t>(r)], to.recv_rows[static_cast<size_t>(q)])
          << q << " -> " << r;
      int64_t send_at = 0, recv_at = 0;
      for (int k = 0; k < r; ++k) send_at += from.send_rows[static_cast<size_t>(k)];
      for (int k = 0; k < q; ++k) recv_at += to.recv_rows[static_cast<size_t>(k)];
      for (int64_t k = 0; k < to.recv_rows[static_cast<size_t>(q)]; ++k)
        EXPECT_EQ(from.owned[static_cast<size_t>(from.send_index[static_cast<size_t>(send_at + k)])],
                  to.halo[static_cast<size_t>(recv_at + k)]);
    }
}

TEST(LocalPartition, EveryEdgeOnceAndSendListsMatchHalos) {
  const Graph g = testing::power_law_graph(300, 3000, 5);
  for (int parts : {1, 2, 3, 5})
    for (auto m : {PartitionMethod::contiguous, PartitionMethod::degree_balanced, PartitionMethod::metis}) {
      if (m == PartitionMethod::metis && !metis_available()) continue;
      SCOPED_TRACE(std::string(to_string(m)) + " into " + std::to_string(parts));
      check_parts(g, partition_nodes(g, {.parts = parts, .method = m}), parts);
    }
}

TEST(LocalPartition, DuplicateEdgesAndScatteredPartsSurvive) {
  // Duplicates (kept by sort mode) and a partition that is not ranges.
  const Graph g = Graph::from_csr(5, 5, {0, 3, 4, 6, 6, 9}, {1, 1, 4, 0, 2, 3, 0, 4, 4}, CsrCheck::sort);
  check_parts(g, {1, 0, 2, 1, 0}, 3);
}

TEST(LocalPartition, TheFourNodeExampleByHand) {
  // row 0 <- {0, 1}, row 1 <- {0, 2}, row 2 <- {}, row 3 <- {1, 2, 3}; rank 0 owns {0, 1}.
  const LocalPartition p =
      make_local_partition(testing::four_node_graph(), std::vector<int32_t>{0, 0, 1, 1}, 2, 0);
  EXPECT_EQ(p.owned, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.halo, (std::vector<int64_t>{2}));
  EXPECT_EQ(p.recv_rows, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.send_rows, (std::vector<int64_t>{0, 1}));  // rank 1's row 3 reads node 1
  EXPECT_EQ(p.send_index, (std::vector<int32_t>{1}));
  EXPECT_EQ(std::vector<int32_t>(p.graph.col_idx().begin(), p.graph.col_idx().end()),
            (std::vector<int32_t>{0, 1, 0, 2}));
}

TEST(LocalPartition, BadInputsAreNamed) {
  const Graph g = testing::four_node_graph();
  testing::expect_throw_naming<InvalidArgument>(
      [&] {
        make_local_partition(g, std::vector<int32_t>{0, 0, 0}, 2, 0);
      },
      {"3 entries", "(4)"});
  testing::expect_throw_naming<InvalidArgument>(
      [&] {
        make_local_partition(g, std::vector<int32_t>{0, 0, 0, 0}, 2, 1);
      },
      {"rank 1 owns no node"});
  testing::expect_throw_naming<InvalidArgument>(
      [&] {
        make_local_partition(g, std::vector<int32_t>{0, 3, 0, 0}, 2, 0);
      },
      {"part[1] is 3"});
  testing::expect_throw_naming<InvalidArgument>(
      [&] {
        make_local_partition(g, std::vector<int32_t>{0, 1, 0, 0}, 2, 2);
      },
      {"rank 2 of 2"});
}

}  // namespace
}  // namespace edgeattn::dist
