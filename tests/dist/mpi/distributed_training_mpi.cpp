// Distributed training under mpirun (ctest label `mpi`: -np 2 and -np 3). Every rank runs every
// test; a failure on any rank fails the job. Compared with the one-process run that every rank
// also computes: the halo exchange (values and gradients), fit_distributed's per-epoch losses and
// metrics (float rounding apart: gradients are summed in another order) for GAT layers that
// exchange their projected rows and layers that exchange their input, identical parameters on
// all ranks, and a rank that fails ending the whole job (the Fault test, run on its own).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>

#include "edgeattn/autograd/ops/reduction.hpp"
#include "edgeattn/data/planetoid.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/dist/distributed_training.hpp"
#include "edgeattn/dist/halo_exchange.hpp"
#include "edgeattn/dist/mpi_communicator.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::dist {
namespace {

MpiCommunicator& world() {
  static MpiCommunicator comm(MPI_COMM_WORLD);
  return comm;
}

std::vector<PartitionMethod> methods() {
  std::vector<PartitionMethod> m{PartitionMethod::contiguous, PartitionMethod::degree_balanced};
  if (metis_available()) m.push_back(PartitionMethod::metis);
  return m;
}

TEST(HaloExchange, RowsArriveFromTheirOwnersAndGradientsGoBack) {
  MpiCommunicator& comm = world();
  const Graph g = testing::power_law_graph(500, 5000, 11);
  for (PartitionMethod m : methods()) {
    SCOPED_TRACE(to_string(m));
    const auto part = partition_nodes(g, {.parts = comm.size(), .method = m});
    const LocalPartition p = make_local_partition(g, part, comm.size(), comm.rank());
    // Row k of the owned block holds (global id, 2 * global id); after the exchange every source
    // row must hold its own global id.
    Tensor h({p.num_owned(), 2});
    for (int64_t k = 0; k < p.num_owned(); ++k) {
      h.data()[2 * k] = static_cast<float>(p.owned[static_cast<size_t>(k)]);
      h.data()[2 * k + 1] = 2.f * static_cast<float>(p.owned[static_cast<size_t>(k)]);
    }
    autograd::Tape tape;
    autograd::Parameter param{"h", h, {}};
    const Traffic before = comm.traffic();
    const autograd::Var x = halo_exchange(tape, tape.parameter(param), p, comm);
    // The communicator counts the rows this rank sent to the others: its send lists, 2 floats each.
    EXPECT_EQ((comm.traffic() - before).row_bytes, static_cast<int64_t>(p.send_index.size()) * 2 * 4);
    EXPECT_EQ((comm.traffic() - before).exchanges, 1);
    const std::vector<int64_t> src = p.sources();
    for (int64_t s = 0; s < p.num_src(); ++s) {
      ASSERT_EQ(tape.value(x).data()[2 * s], static_cast<float>(src[static_cast<size_t>(s)]));
      ASSERT_EQ(tape.value(x).data()[2 * s + 1], 2.f * static_cast<float>(src[static_cast<size_t>(s)]));
    }
    // d(sum of all source rows)/d(owned row) = 1 + the number of other ranks reading it.
    param.zero_grad();
    tape.backward(autograd::sum(tape, x));
    for (int64_t k = 0; k < p.num_owned(); ++k) {
      const int64_t v = p.owned[static_cast<size_t>(k)];
      std::vector<char> reads(static_cast<size_t>(comm.size()), 0);
      const Transpose& t = g.transpose();
      for (int64_t e = t.col_ptr[static_cast<size_t>(v)]; e < t.col_ptr[static_cast<size_t>(v) + 1]; ++e)
        reads[static_cast<size_t>(part[static_cast<size_t>(t.row_idx[static_cast<size_t>(e)])])] = 1;
      reads[static_cast<size_t>(comm.rank())] = 0;
      const float want = 1.f + static_cast<float>(std::count(reads.begin(), reads.end(), 1));
      ASSERT_EQ(param.grad.data()[2 * k], want) << "node " << v;
    }
  }
}

data::Dataset cora() {
  data::Dataset ds =
      data::load_planetoid(std::filesystem::path(EDGEATTN_SOURCE_DIR) / "datasets/cora/planetoid", "cora");
  data::normalize_features(ds.features);
  return ds;
}

void expect_same_training(nn::ModelConfig cfg, PartitionMethod method, int64_t epochs,
                          HaloInput halo_input = HaloInput::features,
                          const data::Dataset* dataset = nullptr) {
  MpiCommunicator& comm = world();
  const data::Dataset ds = dataset ? *dataset : cora();
  cfg.in_channels = ds.num_features();
  cfg.num_classes = ds.num_classes();
  train::TrainConfig tc;
  tc.epochs = epochs;
  tc.patience = 0;
  tc.seed = 5;

  nn::Model reference(cfg);
  const Graph g = reference.prepare_graph(ds.graph);
  const data::Features x = reference.prepare_features(ds.graph, ds.features);
  const auto forward = [&](autograd::Tape& t, uint64_t s) { return reference.forward(t, g, x, s); };
  const train::TrainResult want = train::fit(forward, reference.parameters(), ds.labels, ds.split(), tc);

  nn::Model model(cfg);
  const DistributedInputs in =
      distribute(model, ds, ds.split(), comm, {.method = method}, false, nullptr, halo_input);
  if (!dataset) EXPECT_GT(in.part.num_halo(), 0);
  EXPECT_EQ(in.x_src.rows(), halo_input == HaloInput::features ? in.part.num_src() : in.part.num_owned());
  const train::TrainResult got = fit_distributed(model, comm, in, tc);
  ASSERT_EQ(got.history.size(), want.history.size());
  for (size_t e = 0; e < want.history.size(); ++e) {
    const auto& a = got.history[e];
    const auto& b = want.history[e];
    EXPECT_NEAR(a.train_loss, b.train_loss, 1e-4 * b.train_loss) << "epoch " << e;
    EXPECT_NEAR(a.val_loss, b.val_loss, 1e-4 * b.val_loss) << "epoch " << e;
    EXPECT_NEAR(a.val_accuracy, b.val_accuracy, 0.004) << "epoch " << e;    // 2 of 500 nodes
    EXPECT_NEAR(a.test_accuracy, b.test_accuracy, 0.003) << "epoch " << e;  // 3 of 1000
  }
  // Every rank holds the same parameters, bit for bit.
  for (auto* p : model.parameters()) {
    const std::vector<float> all = allgather_concat(comm, p->value.span());
    for (int r = 1; r < comm.size(); ++r)
      ASSERT_EQ(std::memcmp(all.data(), all.data() + r * p->value.numel(),
                            sizeof(float) * static_cast<size_t>(p->value.numel())),
                0)
          << p->name << " differs between rank 0 and rank " << r;
  }
  // And they are the one-process parameters up to rounding.
  const auto mine = model.parameters(), theirs = reference.parameters();
  for (size_t k = 0; k < mine.size(); ++k)
    EXPECT_LT(max_abs_diff(mine[k]->value, theirs[k]->value), 1e-4f) << mine[k]->name;
}

TEST(FitDistributed, GatMatchesOneProcess) {
  for (PartitionMethod m : methods()) {
    SCOPED_TRACE(to_string(m));
    expect_same_training({.kind = nn::ModelKind::gat, .dropout = 0.f, .attention_dropout = 0.f, .seed = 2}, m,
                         20);
  }
}

// Cora with only its edges j -> i where j < i: a contiguous part's in-edges come from its own
// range and those before it, so the first part has no halo while the others do. Every part must
// still run the same sequence of collectives: the first used to take the one-process layers,
// whose GAT output layer exchanges differently, and the job hung (or failed with MPI_ERR_TRUNCATE).
TEST(FitDistributed, APartWithoutHaloBesideOthersWithOneTrainsAsOneProcess) {
  MpiCommunicator& comm = world();
  data::Dataset ds = cora();
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < ds.graph.num_dst(); ++i)
    for (const int32_t j : ds.graph.row(i))
      if (j < i) src.push_back(j), dst.push_back(i);
  ds.graph = build_graph(ds.num_nodes(), ds.num_nodes(), src, dst);
  const auto owner = partition_nodes(ds.graph, {.parts = comm.size(), .method = PartitionMethod::contiguous});
  EXPECT_EQ(make_local_partition(ds.graph, owner, comm.size(), 0).num_halo(), 0);
  EXPECT_GT(make_local_partition(ds.graph, owner, comm.size(), 1).num_halo(), 0);
  expect_same_training({.kind = nn::ModelKind::gat, .dropout = 0.f, .attention_dropout = 0.f, .seed = 4},
                       PartitionMethod::contiguous, 4, HaloInput::features, &ds);
}

// Cora's inputs on this rank (contiguous parts) after `change`: training and predicting on them
// both raise an edgeattn::Error on every rank (InvalidArgument, or ShapeError on a rank whose own
// x_src is wrong), before the first exchange, with every string that `expected` gives for the
// unchanged inputs.
void expect_refused_on_every_rank(
    const std::function<void(DistributedInputs&)>& change,
    const std::function<std::vector<std::string>(const DistributedInputs&)>& expected) {
  MpiCommunicator& comm = world();
  const data::Dataset ds = cora();
  nn::Model model({.kind = nn::ModelKind::gat,
                   .in_channels = ds.num_features(),
                   .num_classes = ds.num_classes(),
                   .dropout = 0.f,
                   .attention_dropout = 0.f});
  DistributedInputs in = distribute(model, ds, ds.split(), comm, {.method = PartitionMethod::contiguous});
  const std::vector<std::string> needles = expected(in);
  change(in);
  for (const bool predicting : {false, true}) {
    SCOPED_TRACE(predicting ? "predict_distributed" : "fit_distributed");
    try {
      if (predicting) {
        (void)predict_distributed(model, comm, in);
      } else {
        train::TrainConfig tc;
        tc.epochs = 1;
        (void)fit_distributed(model, comm, in, tc);
      }
      ADD_FAILURE() << "expected InvalidArgument or ShapeError";
    } catch (const Error& e) {
      EXPECT_TRUE(dynamic_cast<const ShapeError*>(&e) != nullptr ||
                  dynamic_cast<const InvalidArgument*>(&e) != nullptr)
          << e.what();
      for (const std::string& n : needles)
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }
}

// Parts whose exchange plans disagree (a changed part file, or parts of two partitions): every
// rank refuses before the first exchange, naming both ranks, instead of corrupting the heap.
TEST(FitDistributed, PartsWhoseRowCountsDisagreeAreRefusedOnEveryRank) {
  expect_refused_on_every_rank(
      [](DistributedInputs& in) {
        if (in.part.rank == 1) {  // one row fewer for rank 0, consistently within the part
          in.part.send_rows[0] -= 1;
          in.part.send_index.pop_back();
        }
      },
      [](const DistributedInputs&) {
        return std::vector<std::string>{"rank 1 sends", "to rank 0, which expects"};
      });
}

// Counts that agree but rows that do not: rank 1 sends rank 0 another node in the last place of
// its halo. Every rank refuses before training; rank 0 names the entry, the node it expected and
// the node it was sent.
TEST(FitDistributed, PartsWhoseHaloNodesDisagreeAreRefusedOnEveryRank) {
  expect_refused_on_every_rank(
      [](DistributedInputs& in) {
        if (in.part.rank == 1) {  // the row before the last to rank 0, twice
          const auto end = static_cast<size_t>(in.part.send_rows[0]);
          ASSERT_GT(end, 1u);
          in.part.send_index[end - 1] = in.part.send_index[end - 2];
        }
      },
      [](const DistributedInputs& in) {
        std::string expected = "rank 0's halo entry ";
        if (in.part.rank == 0) {
          const auto last =
              static_cast<size_t>(in.part.recv_rows[0] + in.part.recv_rows[1] - 1);  // rank 1's block
          expected += std::to_string(last) + " is node " + std::to_string(in.part.halo[last]) +
                      ", but rank 1 sends node " + std::to_string(in.part.halo[last - 1]);
        }
        return std::vector<std::string>{expected, "different partitions, or a changed one"};
      });
}

// A rank whose plan sends a row to itself (consistent counts otherwise): refused before the
// exchange would fail on that rank alone.
TEST(FitDistributed, APlanThatSendsARankItsOwnRowsIsRefusedOnEveryRank) {
  expect_refused_on_every_rank(
      [](DistributedInputs& in) {
        if (in.part.rank == 1) {
          in.part.send_rows[1] = 1;
          in.part.send_index.push_back(0);
        }
      },
      [](const DistributedInputs& in) {
        return std::vector<std::string>{in.part.rank == 1 ? "the part's exchange plan does not fit it"
                                                          : "rank 1's inputs were refused"};
      });
}

// One rank's own inputs wrong (here its x_src rows): that rank names them, and every other rank
// refuses too instead of waiting for it in the first exchange.
TEST(FitDistributed, OneRanksWrongFeaturesAreRefusedOnEveryRank) {
  expect_refused_on_every_rank(
      [](DistributedInputs& in) {
        if (in.part.rank == 1) in.x_src = data::Features(Tensor({3, in.x_src.cols()}));
      },
      [](const DistributedInputs& in) {
        return std::vector<std::string>{in.part.rank == 1 ? "x_src has 3 rows, expected num_src = " +
                                                                std::to_string(in.part.num_src())
                                                          : "rank 1's inputs were refused"};
      });
}

TEST(FitDistributed, GatLayersThatExchangeProjectedOrInputRowsMatchOneProcess) {
  // 3 layers of 1 head x 4: the second layer's projection (4) is no wider than its input (4) and
  // is exchanged (GATConv::forward_expanded); the third's (7 classes) is wider, so its input is.
  expect_same_training({.kind = nn::ModelKind::gat,
                        .hidden = 4,
                        .heads = 1,
                        .layers = 3,
                        .dropout = 0.f,
                        .attention_dropout = 0.f,
                        .seed = 3},
                       PartitionMethod::degree_balanced, 8);
}

TEST(FitDistributed, AFirstLayerThatExchangesItsProjectionMatchesOneProcess) {
  // No halo features: the first layer projects the owned rows and exchanges those too.
  for (int64_t layers : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << layers << " layers");
    expect_same_training(
        {.kind = nn::ModelKind::gat, .layers = layers, .dropout = 0.f, .attention_dropout = 0.f, .seed = 6},
        PartitionMethod::degree_balanced, 10, HaloInput::projection);
  }
}

TEST(FitDistributed, Gatv2AndTransformerMatchOneProcess) {
  expect_same_training({.kind = nn::ModelKind::gatv2,
                        .hidden = 8,
                        .heads = 4,
                        .dropout = 0.f,
                        .attention_dropout = 0.f,
                        .seed = 4},
                       PartitionMethod::degree_balanced, 8);
  expect_same_training({.kind = nn::ModelKind::transformer,
                        .hidden = 8,
                        .heads = 4,
                        .dropout = 0.f,
                        .attention_dropout = 0.f,
                        .add_self_loops = false,
                        .beta = true,
                        .seed = 4},
                       PartitionMethod::contiguous, 8);
}

TEST(FitDistributed, TheGatPaperModelWithDropoutLearnsCora) {
  // With dropout the masks are keyed by local ids: not the one-process run, but as good.
  MpiCommunicator& comm = world();
  const data::Dataset ds = cora();
  nn::Model model({.kind = nn::ModelKind::gat,
                   .in_channels = ds.num_features(),
                   .num_classes = ds.num_classes(),
                   .seed = 1});
  const DistributedInputs in =
      distribute(model, ds, ds.split(), comm, {.method = PartitionMethod::degree_balanced});
  train::TrainConfig tc;
  tc.epochs = 120;
  tc.patience = 0;
  tc.seed = 1;
  const train::TrainResult r = fit_distributed(model, comm, in, tc);
  EXPECT_GT(r.test_accuracy, 0.76);
}

TEST(FitDistributed, AResumedRunIsTheUninterruptedRunBitForBit) {
  // Every rank keeps the state in memory here; the tool writes it from rank 0 and every rank reads it.
  MpiCommunicator& comm = world();
  const data::Dataset ds = cora();
  const nn::ModelConfig cfg{.kind = nn::ModelKind::gat,
                            .in_channels = ds.num_features(),
                            .num_classes = ds.num_classes(),
                            .seed = 3};
  train::TrainConfig tc;
  tc.epochs = 12;
  tc.patience = 3;
  tc.seed = 3;
  nn::Model straight(cfg);
  fit_distributed(straight, comm,
                  distribute(straight, ds, ds.split(), comm, {.method = PartitionMethod::contiguous}), tc);

  nn::Model first(cfg);
  train::TrainConfig part = tc;
  part.epochs = 6;
  part.checkpoint_every = 6;
  train::TrainingState state;
  std::vector<Tensor> weights;
  part.on_checkpoint = [&](const train::TrainingState& s) {
    state = s;
    weights.clear();
    for (auto* p : first.parameters()) weights.push_back(p->value);
  };
  fit_distributed(first, comm,
                  distribute(first, ds, ds.split(), comm, {.method = PartitionMethod::contiguous}), part);

  nn::Model second(cfg);
  const auto params = second.parameters();
  for (size_t k = 0; k < params.size(); ++k) params[k]->value = weights[k];
  train::TrainConfig resume = tc;
  resume.resume = &state;
  fit_distributed(second, comm,
                  distribute(second, ds, ds.split(), comm, {.method = PartitionMethod::contiguous}), resume);
  const auto a = straight.parameters();
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_EQ(std::memcmp(a[k]->value.data(), params[k]->value.data(), sizeof(float) * a[k]->value.numel()),
              0)
        << a[k]->name;
}

TEST(Fault, ARankThatFailsEndsTheJob) {
  // Run alone (ctest dist_mpi_fault): rank 1 gives up while the others wait in a collective.
  MpiCommunicator& comm = world();
  if (comm.rank() == 1) comm.abort("injected fault: partition file missing (test)");
  allgather_value(comm, 1);  // rank 0 waits here until the abort ends it
  ADD_FAILURE() << "rank " << comm.rank() << " was not ended by rank 1's abort";
}

TEST(Fault, ARankThatDiesEndsTheJob) {
  // Run alone (ctest dist_mpi_rank_dies): rank 1 is killed outright (no abort, no message of
  // its own); mpirun must notice and end the others, which wait in a collective.
  MpiCommunicator& comm = world();
  if (comm.rank() == 1) std::raise(SIGKILL);
  allgather_value(comm, 1);
  ADD_FAILURE() << "rank " << comm.rank() << " outlived the killed rank 1";
}

}  // namespace
}  // namespace edgeattn::dist

int main(int argc, char** argv) {
  edgeattn::dist::MpiEnvironment mpi(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  // Any rank's failure fails every rank's exit status.
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
