// Distributed full-graph training (DistGNN-style): every rank owns a part of the graph's nodes
// (graph/partition.hpp), runs every layer on its part (dist/local_partition.hpp), exchanges the
// halo between layers (dist/halo_exchange.hpp) and keeps a full replica of the parameters.
//
// One training step on every rank: forward on its part (a halo exchange before every layer but
// the first: layer 0's inputs are the features, fetched once); the loss over its owned training
// nodes, scaled by (its training nodes / all training nodes) so that the ranks' losses add up to
// the one-process mean; backward (the reverse halo exchanges); the parameters' gradients summed
// over ranks in rank order (dist::sum_in_rank_order: the same bits on every rank); the same Adam
// step everywhere, so the replicas never drift apart. Evaluation gathers the logits of the split's
// nodes to every rank and scores them as fit() does, so every rank takes the same early-stopping
// decisions and reports the same metrics.
//
// How close to one process: the parameters' gradients are sums over nodes, which the ranks add
// in another order than one process does, so results agree to float rounding, not bit for bit
// (tests/dist: losses within 1e-4 relative over 30 epochs of GAT on Cora's graph without
// dropout). Dropout masks are keyed by local ids (Model::forward_partition), so with dropout a
// run is statistically equivalent to, not identical with, a one-process run.
//
// Example (mpirun -np 4 ./program; every rank runs the same code):
//   dist::MpiEnvironment mpi(argc, argv);
//   dist::MpiCommunicator comm(MPI_COMM_WORLD);
//   data::Dataset ds = data::load_dataset("cora");
//   nn::Model model(config);                                  // the same seed on every rank
//   dist::DistributedInputs in = dist::distribute(model, ds, comm, {.method = PartitionMethod::metis});
//   train::TrainResult r = dist::fit_distributed(model, comm, in, ds.labels, ds.split(), train_config);
#pragma once

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/dist/communicator.hpp"
#include "edgeattn/dist/local_partition.hpp"
#include "edgeattn/graph/partition.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/train/trainer.hpp"

namespace edgeattn::dist {

/// What one rank trains on.
struct DistributedInputs {
  LocalPartition part;       ///< cut from the model's prepared graph (self-loops included)
  data::Features x_src;      ///< [part.num_src(), in_channels + pe_dim]: the prepared features of its sources
  Tensor edge_attr;          ///< [part.graph.num_edges(), edge_dim] for a model with edge_dim, else empty
  PartitionQuality quality;  ///< of the whole partition (the same on every rank)
};

/// Every rank calls this with the same model config and dataset: prepares the graph and features
/// as Model::prepare_graph / prepare_features do, partitions the prepared graph into comm.size()
/// parts (options.parts is ignored) and keeps this rank's part. `edge_features`: take
/// ds.edge_attr (the model must have edge_dim; InvalidArgument otherwise).
DistributedInputs distribute(const nn::Model& model, const data::Dataset& ds, Communicator& comm,
                             const PartitionOptions& options, bool edge_features = false);

/// Trains `model` on every rank (see above). labels and split are the whole graph's (every rank
/// passes the same). The result and the per-epoch statistics are the whole graph's, the same on
/// every rank; call config.on_epoch's printing on one rank only. InvalidArgument when the inputs
/// do not belong to this communicator or labels do not cover the graph.
train::TrainResult fit_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& inputs,
                                   const data::Labels& labels, const data::Split& split,
                                   const train::TrainConfig& config);

/// The model's logits for the owned nodes of this rank [part.num_owned(), num_classes], in eval
/// mode (prediction after training; row k is node part.owned[k]).
Tensor predict_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& inputs);

/// Every rank's owned rows gathered into one [num_nodes, C] tensor, on every rank (for
/// predictions of small graphs; the whole graph's rows on every rank).
Tensor gather_owned_rows(Communicator& comm, const LocalPartition& part, ConstView owned_rows);

}  // namespace edgeattn::dist
