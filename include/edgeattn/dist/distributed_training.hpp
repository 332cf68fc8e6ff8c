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
// How close to one process: with one part the arithmetic is fit()'s, bit for bit (tested). With
// several, the parameters' gradients are sums over nodes that the ranks add in another order, so
// results agree to float rounding (tests/dist/mpi: per-epoch losses within 1e-4 relative over 20
// epochs of GAT on Cora without dropout, accuracies within a node or two, on 2 and 3 ranks).
// Dropout masks are keyed by local ids (Model::forward_partition), so with dropout a run is
// statistically equivalent to, not identical with, a one-process run.
//
// Example (mpirun -np 4 ./program; every rank runs the same code):
//   dist::MpiEnvironment mpi(argc, argv);
//   dist::MpiCommunicator comm(MPI_COMM_WORLD);
//   data::Dataset ds = data::load_dataset("cora");
//   nn::Model model(config);                                  // the same seed on every rank
//   dist::DistributedInputs in = dist::distribute(model, ds, ds.split(), comm, {.method =
//   PartitionMethod::metis}); train::TrainResult r = dist::fit_distributed(model, comm, in, train_config);
// or, with partition files written once by `edgeattn partition` (each rank reads only its own):
//   dist::DistributedInputs in = dist::prepare_part(model, dist::read_partition(dir, comm.size(),
//   comm.rank()), false);
#pragma once

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/dist/communicator.hpp"
#include "edgeattn/dist/dataset_part.hpp"
#include "edgeattn/dist/local_partition.hpp"
#include "edgeattn/graph/partition.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/train/trainer.hpp"

namespace edgeattn::dist {

/// What one rank trains on: its DatasetPart prepared for a model.
struct DistributedInputs {
  /// The part. Its graph is bipartite [num_owned x num_src] (the owned nodes' in-edges over owned
  /// + halo sources), prepared as the model wants (Model::prepare_graph's self-loops; the owned
  /// rows are whole, so they equal the prepared whole graph's rows up to the order of their
  /// in-edges). edge_ids is freed (8 bytes an edge): the attributes are gathered.
  LocalPartition part;
  /// [part.num_src(), in_channels]: the sources' features, as prepare_features makes them; with
  /// HaloInput::projection [part.num_owned(), in_channels], the owned nodes' only (dense).
  data::Features x_src;
  Tensor edge_attr;     ///< [part.graph.num_edges(), edge_dim] for a model with edge_dim, else absent
  data::Labels labels;  ///< of the owned nodes
  SplitPart train, val, test;
};

/// Where a part's first layer gets its halo nodes' rows from.
enum class HaloInput {
  /// The part keeps the halo nodes' features and the first layer projects them itself: nothing
  /// is exchanged before the first layer (the later layers exchange their rows).
  features,
  /// The part drops them; the first layer projects the owned rows and exchanges the projected
  /// rows (heads * hidden wide, forward, and their gradients back): less memory (no halo
  /// features; only the halo's projected rows are kept) and no projection of halo rows, for more
  /// bytes sent per step. The gat kind without residual (Model::first_layer_exchanges_projection);
  /// sparse features are made dense for the owned rows.
  projection,
};
const char* to_string(HaloInput h);
/// "features" or "projection"; InvalidArgument naming both otherwise.
HaloInput parse_halo_input(const std::string& name);

/// Prepares a rank's DatasetPart (from make_dataset_part or read_partition) for `model`.
/// `edge_features`: the model reads the part's edge attributes (it must have edge_dim, and the
/// part must have them). InvalidArgument for a model with a positional encoding (it needs the
/// whole graph), for the graph_transformer kind, and for HaloInput::projection where the model's
/// first layer cannot exchange its projection; ShapeError when the features do not have the
/// model's in_channels columns.
DistributedInputs prepare_part(const nn::Model& model, DatasetPart part, bool edge_features,
                               HaloInput halo_input = HaloInput::features);

/// Every rank calls this with the same model config, dataset and split: partitions the dataset's
/// graph into comm.size() parts (options.parts is ignored), keeps this rank's part and prepares it.
/// `quality`, when given, receives the whole partition's quality (the same on every rank).
DistributedInputs distribute(const nn::Model& model, const data::Dataset& ds, const data::Split& split,
                             Communicator& comm, const PartitionOptions& options, bool edge_features = false,
                             PartitionQuality* quality = nullptr, HaloInput halo_input = HaloInput::features);

/// Trains `model` on every rank (see above). The result and the per-epoch statistics are the
/// whole graph's, the same on every rank; print from config.on_epoch on one rank only.
/// InvalidArgument when the inputs are not this communicator's rank, or (on every rank at once,
/// before the first step) when the ranks' parts disagree: the rows a rank sends another are not,
/// in count or in node ids, the halo that rank lists (part files of different partitions, or a
/// changed one); predict_distributed checks the same. `step_traffic`, when given,
/// receives what this rank sent during its first training step (forward, backward and the
/// gradient sum; every step sends the same), measured by the communicator.
train::TrainResult fit_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& inputs,
                                   const train::TrainConfig& config, Traffic* step_traffic = nullptr);

/// The model's logits for the owned nodes of this rank [part.num_owned(), num_classes], in eval
/// mode (prediction after training; row k is node part.owned[k]).
Tensor predict_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& inputs);

/// Every rank's owned rows gathered into one [num_nodes, C] tensor, on every rank (for
/// predictions of small graphs: the whole graph's rows on every rank).
Tensor gather_owned_rows(Communicator& comm, const LocalPartition& part, ConstView owned_rows);

}  // namespace edgeattn::dist
