// Distributed training's one-process case (SelfCommunicator; the multi-process runs are
// tests/dist/mpi/, under mpirun): the communicator helpers, and fit_distributed with one part
// against fit() on the whole graph.
#include "edgeattn/dist/distributed_training.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "edgeattn/data/planetoid.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/dist/halo_exchange.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::dist {
namespace {

TEST(SelfCommunicator, SumsGathersAndExchangesAsOneRank) {
  SelfCommunicator comm;
  std::vector<float> v{1.f, 2.f};
  sum_in_rank_order(comm, std::span<float>(v));
  EXPECT_EQ(v, (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(allgather_value(comm, 7), (std::vector<int64_t>{7}));
  const std::vector<float> send{1, 2, 3, 4};
  std::vector<float> recv(4);
  const std::vector<int64_t> rows{2};
  comm.alltoallv_rows(send.data(), rows, recv.data(), rows, 2);
  EXPECT_EQ(recv, send);
  // Nothing went to another rank; the exchange is counted.
  EXPECT_EQ(comm.traffic().row_bytes, 0);
  EXPECT_EQ(comm.traffic().gathered_bytes, 0);
  EXPECT_EQ(comm.traffic().exchanges, 1);
}

data::Dataset cora() {
  data::Dataset ds =
      data::load_planetoid(std::filesystem::path(EDGEATTN_SOURCE_DIR) / "datasets/cora/planetoid", "cora");
  data::normalize_features(ds.features);
  return ds;
}

TEST(FitDistributed, OnePartIsFitOnTheWholeGraphBitForBit) {
  const data::Dataset ds = cora();
  nn::ModelConfig cfg{
      .kind = nn::ModelKind::gat, .in_channels = ds.num_features(), .num_classes = ds.num_classes()};
  cfg.dropout = cfg.attention_dropout = 0.f;
  cfg.seed = 3;
  train::TrainConfig tc;
  tc.epochs = 15;
  tc.patience = 0;

  nn::Model reference(cfg);
  const Graph g = reference.prepare_graph(ds.graph);
  const data::Features x = reference.prepare_features(ds.graph, ds.features);
  const auto forward = [&](autograd::Tape& t, uint64_t s) { return reference.forward(t, g, x, s); };
  const train::TrainResult want = train::fit(forward, reference.parameters(), ds.labels, ds.split(), tc);

  SelfCommunicator comm;
  nn::Model model(cfg);
  const DistributedInputs in =
      distribute(model, ds, ds.split(), comm, {.method = PartitionMethod::contiguous});
  EXPECT_EQ(in.part.num_halo(), 0);
  EXPECT_EQ(in.part.num_owned(), ds.num_nodes());
  // The prepared part keeps no per-edge arrays the layers do not read: the cut's edge positions
  // are freed (not just cleared) and the graph has no input-order maps (16 bytes an edge).
  EXPECT_EQ(in.part.edge_ids.capacity(), 0u);
  EXPECT_TRUE(in.part.graph.input_edge_of_csr().empty());
  EXPECT_TRUE(in.part.graph.csr_edge_of_input().empty());
  const train::TrainResult got = fit_distributed(model, comm, in, tc);
  ASSERT_EQ(got.history.size(), want.history.size());
  for (size_t e = 0; e < want.history.size(); ++e) {
    EXPECT_NEAR(got.history[e].train_loss, want.history[e].train_loss, 1e-4 * want.history[e].train_loss)
        << e;
    EXPECT_NEAR(got.history[e].val_loss, want.history[e].val_loss, 1e-4 * want.history[e].val_loss) << e;
    EXPECT_NEAR(got.history[e].test_accuracy, want.history[e].test_accuracy, 0.003) << e;
  }
  // Predictions of the owned nodes, gathered.
  const Tensor logits = gather_owned_rows(comm, in.part, predict_distributed(model, comm, in));
  autograd::Tape t;
  t.training = false;
  EXPECT_EQ(max_abs_diff(logits, t.value(reference.forward(t, g, x, 0))), 0.f);
}

TEST(PreparePart, HaloInputProjectionKeepsTheOwnedRowsDenseAndNeedsAGatFirstLayer) {
  const data::Dataset ds = cora();
  const std::vector<int32_t> part =
      partition_nodes(ds.graph, {.parts = 2, .method = PartitionMethod::contiguous});
  const nn::ModelConfig gat{
      .kind = nn::ModelKind::gat, .in_channels = ds.num_features(), .num_classes = ds.num_classes()};
  const nn::Model model(gat);
  const DatasetPart p = make_dataset_part(ds, ds.split(), part, 2, 1);
  ASSERT_GT(p.part.num_halo(), 0);
  const DistributedInputs kept = prepare_part(model, p, false);
  EXPECT_EQ(kept.x_src.rows(), p.part.num_src());
  const DistributedInputs dropped = prepare_part(model, p, false, HaloInput::projection);
  // Cora's bag of words is sparse; the owned rows come dense (the fused projection reads those).
  ASSERT_FALSE(dropped.x_src.is_sparse());
  ASSERT_EQ(dropped.x_src.rows(), p.part.num_owned());
  const Tensor all = kept.x_src.to_dense();
  for (int64_t i = 0; i < dropped.x_src.dense().numel(); ++i)
    ASSERT_EQ(dropped.x_src.dense().data()[i], all.data()[i]) << i;
  for (const nn::ModelConfig& other :
       {nn::ModelConfig{.kind = nn::ModelKind::gatv2, .in_channels = gat.in_channels, .num_classes = 7},
        nn::ModelConfig{.kind = nn::ModelKind::gat,
        .in_channels = gat.in_channels,
        .num_classes = 7,
        .residual = true}}) {
    const nn::Model m(other);
    testing::expect_throw_naming<InvalidArgument>(
        [&] { (void)prepare_part(m, p, false, HaloInput::projection); },
        {"projection", nn::to_string(other.kind)});
  }
  EXPECT_EQ(parse_halo_input("projection"), HaloInput::projection);
  EXPECT_STREQ(to_string(HaloInput::features), "features");
  testing::expect_throw_naming<InvalidArgument>([] { (void)parse_halo_input("halo"); },
                                                {"'halo'", "features", "projection"});
}

TEST(FitDistributed, InputsOfAnotherCommunicatorAreRefused) {
  SelfCommunicator comm;
  DistributedInputs in;
  in.part.parts = 2;
  in.part.rank = 1;
  const data::Dataset ds = cora();
  nn::Model model(
      {.kind = nn::ModelKind::gat, .in_channels = ds.num_features(), .num_classes = ds.num_classes()});
  testing::expect_throw_naming<InvalidArgument>([&] { fit_distributed(model, comm, in, {}); },
                                                {"rank 1 of 2", "one process"});
  LocalPartition p;
  p.owned = {0, 1};
  p.num_nodes = 2;
  autograd::Tape tape;
  testing::expect_throw_naming<ShapeError>(
      [&] {
        halo_exchange(tape, tape.constant(Tensor({3, 2})), p, comm);
      },
      {"[3, 2]", "num_owned=2"});
}

}  // namespace
}  // namespace edgeattn::dist
