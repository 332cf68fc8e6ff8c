#include "edgeattn/dist/distributed_training.hpp"

#include <algorithm>
#include <cstring>

#include "edgeattn/autograd/ops/arithmetic.hpp"
#include "edgeattn/autograd/ops/loss.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/dist/halo_exchange.hpp"

namespace edgeattn::dist {
namespace {

void check_inputs(const DistributedInputs& in, const Communicator& comm, const char* who) {
  if (in.part.parts != comm.size() || in.part.rank != comm.rank())
    raise<InvalidArgument>(who, ": the inputs are rank ", in.part.rank, " of ", in.part.parts,
                           " parts, the communicator is ", comm.describe());
  if (in.x_src.rows() != in.part.num_src())
    raise<ShapeError>(who, ": x_src has ", in.x_src.rows(), " rows, expected num_src = ", in.part.num_src());
}

// The forward on this rank's part: logits [num_owned, C].
autograd::Var forward_part(autograd::Tape& tape, nn::Model& model, Communicator& comm,
                           const DistributedInputs& in, uint64_t step_seed) {
  const LocalPartition& part = in.part;
  const nn::Model::ExpandFn expand = [&part, &comm](autograd::Tape& t, autograd::Var h) {
    return halo_exchange(t, h, part, comm);
  };
  const nn::EdgeFeatures edges{in.edge_attr.absent() ? autograd::Var{} : tape.constant_ref(in.edge_attr)};
  return model.forward_partition(tape, part.graph, in.x_src, edges, expand, step_seed);
}

// Sorted, distinct.
std::vector<int64_t> sorted_union(const data::Split& split) {
  std::vector<int64_t> all(split.train);
  all.insert(all.end(), split.val.begin(), split.val.end());
  all.insert(all.end(), split.test.begin(), split.test.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::vector<int64_t> positions_in(const std::vector<int64_t>& sorted, std::span<const int64_t> nodes) {
  std::vector<int64_t> out(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k)
    out[k] = std::lower_bound(sorted.begin(), sorted.end(), nodes[k]) - sorted.begin();
  return out;
}

}  // namespace

DistributedInputs distribute(const nn::Model& model, const data::Dataset& ds, Communicator& comm,
                             const PartitionOptions& options, bool edge_features) {
  if (edge_features && ds.edge_attr.absent())
    raise<InvalidArgument>(
        "distribute: edge features were asked for, but the dataset has no edge attributes");
  DistributedInputs in;
  Graph graph;
  Tensor attr;
  if (edge_features) {
    nn::PreparedGraph p = model.prepare_graph(ds.graph, ds.edge_attr);
    graph = std::move(p.graph);
    attr = std::move(p.edge_attr);
  } else {
    graph = model.prepare_graph(ds.graph);
  }
  PartitionOptions o = options;
  o.parts = comm.size();
  const std::vector<int32_t> part = partition_nodes(graph, o);
  in.quality = partition_quality(graph, part, o.parts);
  in.part = make_local_partition(graph, part, comm.size(), comm.rank());
  const data::Features x = model.prepare_features(ds.graph, ds.features);
  const std::vector<int64_t> sources = in.part.sources();
  if (x.is_sparse())
    in.x_src = data::Features(x.sparse().select_rows(sources));
  else
    in.x_src = data::Features(gather_rows(x.dense().view(), sources));
  if (edge_features) in.edge_attr = gather_rows(attr.view(), in.part.edge_ids);
  return in;
}

Tensor gather_owned_rows(Communicator& comm, const LocalPartition& part, ConstView owned_rows) {
  if (owned_rows.rank() != 2 || owned_rows.dim(0) != part.num_owned())
    raise<ShapeError>("gather_owned_rows: rows have shape ", owned_rows.shape().str(),
                      ", expected [num_owned=", part.num_owned(), ", C]");
  const int64_t c = owned_rows.dim(1);
  const std::vector<int64_t> ids = allgather_concat(comm, part.owned);
  const std::vector<float> rows = allgather_concat(
      comm, std::span<const float>(owned_rows.data(), static_cast<size_t>(owned_rows.numel())));
  Tensor out({part.num_nodes, c});
  for (size_t k = 0; k < ids.size(); ++k)
    std::memcpy(out.data() + ids[k] * c, rows.data() + static_cast<int64_t>(k) * c,
                sizeof(float) * static_cast<size_t>(c));
  return out;
}

Tensor predict_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& inputs) {
  check_inputs(inputs, comm, "predict_distributed");
  autograd::Tape tape;
  tape.training = false;
  return tape.value(forward_part(tape, model, comm, inputs, 0));
}

train::TrainResult fit_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& in,
                                   const data::Labels& labels, const data::Split& split,
                                   const train::TrainConfig& config) {
  check_inputs(in, comm, "fit_distributed");
  const LocalPartition& part = in.part;
  const int64_t n = part.num_nodes;
  const int64_t labelled =
      labels.multi_label() ? labels.multi_hot.dim(0) : static_cast<int64_t>(labels.classes.size());
  if (labelled != n)
    raise<InvalidArgument>("fit_distributed: labels cover ", labelled, " nodes, the graph has ", n);
  for (const auto* list : {&split.train, &split.val, &split.test})
    for (int64_t v : *list)
      if (v < 0 || v >= n)
        raise<InvalidArgument>("fit_distributed: split node ", v, " is out of [0, ", n, ")");

  // The loss: this rank's training nodes (local rows), weighted by their share of all of them.
  std::vector<char> is_train(static_cast<size_t>(n), 0);
  for (int64_t v : split.train) is_train[static_cast<size_t>(v)] = 1;
  const data::Labels local_labels = train::select_labels(labels, part.owned);
  std::vector<int64_t> local_train;
  for (int64_t k = 0; k < part.num_owned(); ++k)
    if (is_train[static_cast<size_t>(part.owned[static_cast<size_t>(k)])]) local_train.push_back(k);
  const auto global_train = static_cast<double>(split.train.size());
  const auto share =
      static_cast<float>(static_cast<double>(local_train.size()) / std::max(global_train, 1.0));
  // A rank without training nodes still runs the backward (its exchanges are collectives): its
  // loss is row 0's scaled by 0, which gives every op a (zero) gradient.
  const std::vector<int64_t> loss_rows = local_train.empty() ? std::vector<int64_t>{0} : local_train;
  const float factor = local_train.empty() ? 0.f : share;

  std::vector<autograd::Parameter*> params = model.parameters();
  int64_t num_values = 0;
  for (auto* p : params) num_values += p->value.numel();
  std::vector<float> grads(static_cast<size_t>(num_values));

  const train::EpochFn step = [&](autograd::Tape& tape, int64_t epoch, train::Adam& optimizer,
                                  train::TrainResult&) {
    optimizer.zero_grad();
    const autograd::Var logits = forward_part(tape, model, comm, in, train::step_seed(config.seed, epoch));
    const autograd::Var local =
        local_labels.multi_label()
            ? autograd::bce_with_logits(tape, logits, tape.constant_ref(local_labels.multi_hot), loss_rows)
            : autograd::cross_entropy(tape, logits, local_labels.classes, loss_rows);
    const autograd::Var loss = autograd::scale(tape, local, factor);
    double value = static_cast<double>(tape.value(loss).data()[0]);
    tape.backward(loss);
    // The gradients summed over ranks, in rank order: the same on every rank.
    int64_t at = 0;
    for (auto* p : params) {
      std::memcpy(grads.data() + at, p->grad.data(), sizeof(float) * static_cast<size_t>(p->value.numel()));
      at += p->value.numel();
    }
    sum_in_rank_order(comm, std::span<float>(grads));
    at = 0;
    for (auto* p : params) {
      std::memcpy(p->grad.data(), grads.data() + at, sizeof(float) * static_cast<size_t>(p->value.numel()));
      at += p->value.numel();
    }
    optimizer.step();
    sum_in_rank_order(comm, std::span<double>(&value, 1));
    return value;
  };

  // Evaluation: the logits of the split's nodes, gathered to every rank in a compact [S, C]
  // tensor; labels and split are renumbered to its rows (same order, so the same sums as fit()).
  const std::vector<int64_t> scored = sorted_union(split);
  const data::Labels scored_labels = train::select_labels(labels, scored);
  data::Split scored_split;
  scored_split.train = positions_in(scored, split.train);
  scored_split.val = positions_in(scored, split.val);
  scored_split.test = positions_in(scored, split.test);
  std::vector<int64_t> mine_rows, mine_ids;  // local rows of owned scored nodes, their compact ids
  for (int64_t k = 0; k < part.num_owned(); ++k) {
    const int64_t v = part.owned[static_cast<size_t>(k)];
    const auto it = std::lower_bound(scored.begin(), scored.end(), v);
    if (it != scored.end() && *it == v) {
      mine_rows.push_back(k);
      mine_ids.push_back(it - scored.begin());
    }
  }
  const std::vector<int64_t> all_ids = allgather_concat(comm, mine_ids);
  const train::ForwardFn evaluate = [&](autograd::Tape& tape, uint64_t seed) {
    const Tensor& logits = tape.value(forward_part(tape, model, comm, in, seed));
    const Tensor mine = gather_rows(logits.view(), mine_rows);
    const int64_t c = logits.dim(1);
    const std::vector<float> rows =
        allgather_concat(comm, std::span<const float>(mine.data(), static_cast<size_t>(mine.numel())));
    Tensor out({static_cast<int64_t>(scored.size()), c});
    for (size_t k = 0; k < all_ids.size(); ++k)
      std::memcpy(out.data() + all_ids[k] * c, rows.data() + static_cast<int64_t>(k) * c,
                  sizeof(float) * static_cast<size_t>(c));
    return tape.constant(std::move(out));
  };
  return train::fit_with("fit_distributed", step, evaluate, params, scored_labels, scored_split, config);
}

}  // namespace edgeattn::dist
