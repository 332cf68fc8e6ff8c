// A rank's share of a dataset and its partition files: what is written reads back exactly, the
// split's nodes keep their positions, and a missing, foreign or corrupt file is refused with the
// file, the member and what was wrong.
#include "edgeattn/dist/dataset_part.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "edgeattn/core/error.hpp"
#include "edgeattn/data/npy.hpp"
#include "edgeattn/data/npz_writer.hpp"
#include "edgeattn/data/planetoid.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::dist {
namespace {

using testing::expect_throw_naming;

data::Dataset cora() {
  return data::load_planetoid(std::filesystem::path(EDGEATTN_SOURCE_DIR) / "datasets/cora/planetoid", "cora");
}

void expect_same(const DatasetPart& a, const DatasetPart& b) {
  EXPECT_EQ(a.part.owned, b.part.owned);
  EXPECT_EQ(a.part.halo, b.part.halo);
  EXPECT_EQ(a.part.recv_rows, b.part.recv_rows);
  EXPECT_EQ(a.part.send_rows, b.part.send_rows);
  EXPECT_EQ(a.part.send_index, b.part.send_index);
  EXPECT_EQ(a.part.edge_ids, b.part.edge_ids);
  EXPECT_TRUE(std::equal(a.part.graph.row_ptr().begin(), a.part.graph.row_ptr().end(),
                         b.part.graph.row_ptr().begin(), b.part.graph.row_ptr().end()));
  EXPECT_TRUE(std::equal(a.part.graph.col_idx().begin(), a.part.graph.col_idx().end(),
                         b.part.graph.col_idx().begin(), b.part.graph.col_idx().end()));
  EXPECT_EQ(max_abs_diff(a.features.to_dense(), b.features.to_dense()), 0.f);
  EXPECT_EQ(a.labels.classes, b.labels.classes);
  EXPECT_EQ(a.labels.num_classes, b.labels.num_classes);
  for (auto [x, y] :
       {std::pair{&a.train, &b.train}, std::pair{&a.val, &b.val}, std::pair{&a.test, &b.test}}) {
    EXPECT_EQ(x->rows, y->rows);
    EXPECT_EQ(x->positions, y->positions);
    EXPECT_EQ(x->total, y->total);
  }
}

TEST(DatasetPart, SplitNodesKeepTheirPositionsAndLabels) {
  const data::Dataset ds = cora();
  const auto owner = partition_nodes(ds.graph, {.parts = 3, .method = PartitionMethod::degree_balanced});
  int64_t seen_val = 0;
  for (int r = 0; r < 3; ++r) {
    const DatasetPart d = make_dataset_part(ds, ds.split(), owner, 3, r);
    EXPECT_EQ(d.features.rows(), d.part.num_src());
    EXPECT_EQ(static_cast<int64_t>(d.labels.classes.size()), d.part.num_owned());
    for (size_t k = 0; k < d.val.rows.size(); ++k) {
      const int64_t v = d.part.owned[static_cast<size_t>(d.val.rows[k])];
      EXPECT_EQ(ds.split().val[static_cast<size_t>(d.val.positions[k])], v);
      EXPECT_EQ(d.labels.classes[static_cast<size_t>(d.val.rows[k])],
                ds.labels.classes[static_cast<size_t>(v)]);
    }
    EXPECT_EQ(d.val.total, static_cast<int64_t>(ds.split().val.size()));
    seen_val += static_cast<int64_t>(d.val.rows.size());
  }
  EXPECT_EQ(seen_val, static_cast<int64_t>(ds.split().val.size()));
}

TEST(DatasetPart, PartitionFilesReadBackExactly) {
  const data::Dataset ds = cora();
  const auto owner = partition_nodes(ds.graph, {.parts = 2, .method = PartitionMethod::contiguous});
  const testing::TempDir dir;
  const PartitionQuality q = write_partitions(dir.path(), ds, "", owner, 2, PartitionMethod::contiguous);
  EXPECT_TRUE(std::filesystem::exists(dir / "partitions.txt"));
  for (int r = 0; r < 2; ++r) {
    const DatasetPart back = read_partition(dir.path(), 2, r);
    expect_same(make_dataset_part(ds, ds.split(), owner, 2, r), back);
    EXPECT_EQ(back.name, "cora");
    EXPECT_EQ(back.split, "public");
    EXPECT_EQ(back.method, "contiguous");
    EXPECT_EQ(back.quality.edge_cut, q.edge_cut);
  }
}

TEST(DatasetPart, MissingForeignAndCorruptFilesAreNamed) {
  const data::Dataset ds = cora();
  const auto owner = partition_nodes(ds.graph, {.parts = 2, .method = PartitionMethod::contiguous});
  const testing::TempDir dir;
  expect_throw_naming<IoError>([&] { read_partition(dir.path(), 2, 0); }, {"partitions.txt does not exist"});
  write_partitions(dir.path(), ds, "", owner, 2, PartitionMethod::contiguous);
  expect_throw_naming<InvalidArgument>([&] { read_partition(dir.path(), 3, 0); },
                                       {"holds 2 parts", "3 ranks"});

  // A part file whose offsets run past its edges, and one that is rank 0's file under rank 1's name.
  auto arrays = data::read_npz(partition_file(dir.path(), 2, 1));
  std::vector<data::NpzMember> members;
  for (auto& [key, a] : arrays) {
    if (key == "indptr") {
      std::vector<int64_t> v = a.to_int64s();
      v.back() += 5;
      members.push_back({key, data::make_npy(std::span<const int64_t>(v), {static_cast<int64_t>(v.size())})});
    } else {
      members.push_back({key, a});
    }
  }
  data::write_npz_arrays(partition_file(dir.path(), 2, 1), members);
  expect_throw_naming<ParseError>([&] { read_partition(dir.path(), 2, 1); },
                                  {"part-1-of-2.npz", "member 'indptr'", "non-decreasing offsets"});
  std::filesystem::copy_file(partition_file(dir.path(), 2, 0), partition_file(dir.path(), 2, 1),
                             std::filesystem::copy_options::overwrite_existing);
  expect_throw_naming<ParseError>([&] { read_partition(dir.path(), 2, 1); },
                                  {"member 'sizes'", "expected rank 1 of 2", "found rank 0 of 2"});
  std::filesystem::remove(partition_file(dir.path(), 2, 1));
  expect_throw_naming<IoError>([&] { read_partition(dir.path(), 2, 1); },
                               {"part-1-of-2.npz for rank 1 does not exist"});
}

// Rewrites one int64 member of `file` through `change`, keeping the others as they are.
void change_member(const std::filesystem::path& file, const std::string& member,
                   const std::function<void(std::vector<int64_t>&)>& change) {
  std::vector<data::NpzMember> members;
  for (auto& [key, a] : data::read_npz(file)) {
    if (key != member) {
      members.push_back({key, a});
      continue;
    }
    std::vector<int64_t> v = a.to_int64s();
    change(v);
    members.push_back({key, data::make_npy(std::span<const int64_t>(v), {static_cast<int64_t>(v.size())})});
  }
  data::write_npz_arrays(file, members);
}

// Members that are well-formed each on its own but break the layout the exchange relies on
// (dist/local_partition.hpp): each is named with the entry and what was expected.
TEST(DatasetPart, HaloCountsAndEdgeIdsOutOfLayoutAreNamed) {
  const data::Dataset ds = cora();
  const auto owner = partition_nodes(ds.graph, {.parts = 2, .method = PartitionMethod::contiguous});
  const DatasetPart rank1 = make_dataset_part(ds, ds.split(), owner, 2, 1);
  ASSERT_GT(rank1.part.num_halo(), 2);
  const int64_t owned0 = rank1.part.owned[0];
  const std::string h0 = std::to_string(rank1.part.halo[0]), h1 = std::to_string(rank1.part.halo[1]);
  struct Case {
    std::string member;
    std::function<void(std::vector<int64_t>&)> change;
    std::vector<std::string> named;
  };
  const std::vector<Case> cases{
      {"halo",
       [&](auto& v) { v[1] = owned0; },
       {"member 'halo'", "entry 1 is node " + std::to_string(owned0), "which this rank owns"}},
      {"halo",
       [](auto& v) { std::swap(v[0], v[1]); },
       {"member 'halo'", "entry 1 is " + h0 + " after " + h1, "ascending ids within rank 0's block"}},
      {"recv_rows",
       [](auto& v) { v[0] -= 1, v[1] += 1; },
       {"member 'recv_rows'", "entry 1 is 1", "expected 0 (this rank's own)"}},
      // Counts past the total could wrap the sum back to it: each is bounded by it.
      {"send_rows",
       [](auto& v) { v[0] += int64_t{1} << 62, v[1] -= int64_t{1} << 62; },
       {"member 'send_rows'", "entry 0 is " + std::to_string(rank1.part.send_rows[0] + (int64_t{1} << 62)),
        "expected a count in [0, " + std::to_string(rank1.part.send_index.size()) + "]"}},
      {"edge_ids",
       [&](auto& v) { v.back() = ds.graph.num_edges(); },
       {"member 'edge_ids'", "is " + std::to_string(ds.graph.num_edges()),
        "expected in [0, " + std::to_string(ds.graph.num_edges()) + ")"}},
  };
  for (const Case& c : cases) {
    const testing::TempDir dir;
    write_partitions(dir.path(), ds, "", owner, 2, PartitionMethod::contiguous);
    ASSERT_NO_THROW(read_partition(dir.path(), 2, 1));
    change_member(partition_file(dir.path(), 2, 1), c.member, c.change);
    std::vector<std::string> named{"part-1-of-2.npz"};
    named.insert(named.end(), c.named.begin(), c.named.end());
    SCOPED_TRACE(c.member);
    expect_throw_naming<ParseError>([&] { read_partition(dir.path(), 2, 1); }, named);
  }
}

}  // namespace
}  // namespace edgeattn::dist
