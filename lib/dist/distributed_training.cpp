#include "edgeattn/dist/distributed_training.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <span>
#include <string>

#include "edgeattn/autograd/ops/arithmetic.hpp"
#include "edgeattn/autograd/ops/shape.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/dist/halo_exchange.hpp"

namespace edgeattn::dist {
namespace {

// The rows each rank sends must be the nodes the receiver lists in its halo, in its order (the
// counts agree already). Each owner sends the global ids of its send rows through the exchange
// the layers use (an id as the bit pattern of two floats: the exchange copies bytes), and every
// rank compares them with its halo; then all raise together, naming the first rank that differs.
void check_halo_ids(const LocalPartition& part, Communicator& comm, const char* who) {
  static_assert(sizeof(int64_t) == 2 * sizeof(float));
  std::vector<int64_t> send(part.send_index.size());
  for (size_t k = 0; k < send.size(); ++k) send[k] = part.owned[static_cast<size_t>(part.send_index[k])];
  std::vector<int64_t> recv(part.halo.size());
  std::vector<float> send_bits(2 * send.size()), recv_bits(2 * recv.size());
  // (memcpy only when there are bytes: an empty vector's data() may be null.)
  if (!send.empty()) std::memcpy(send_bits.data(), send.data(), send.size() * sizeof(int64_t));
  comm.alltoallv_rows(send_bits.data(), part.send_rows, recv_bits.data(), part.recv_rows, 2);
  if (!recv.empty()) std::memcpy(recv.data(), recv_bits.data(), recv.size() * sizeof(int64_t));
  const auto bad = std::mismatch(recv.begin(), recv.end(), part.halo.begin()).first - recv.begin();
  const std::vector<int64_t> first_bad =
      allgather_value(comm, bad == static_cast<ptrdiff_t>(recv.size()) ? -1 : static_cast<int64_t>(bad));
  for (size_t r = 0; r < first_bad.size(); ++r)
    if (first_bad[r] >= 0) {
      if (static_cast<int>(r) != comm.rank())
        raise<InvalidArgument>(who, ": the parts disagree: rank ", r, "'s halo entry ", first_bad[r],
                               " is not the node its owner sends (part files of different partitions, or a "
                               "changed one)");
      const auto k = static_cast<size_t>(bad);
      size_t owner = 0;  // the rank whose block holds entry k
      for (int64_t end = part.recv_rows[0]; end <= static_cast<int64_t>(k);) end += part.recv_rows[++owner];
      raise<InvalidArgument>(who, ": the parts disagree: rank ", r, "'s halo entry ", k, " is node ",
                             part.halo[k], ", but rank ", owner, " sends node ", recv[k],
                             " there (part files of different partitions, or a changed one)");
    }
}

std::string join(std::span<const int64_t> v) {
  std::string out;
  for (const int64_t x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

void check_inputs(const DistributedInputs& in, Communicator& comm, const char* who) {
  const auto parts = static_cast<size_t>(comm.size());
  const LocalPartition& p = in.part;
  // This rank's own inputs. Every rank learns whether any rank's failed (one collective) and all
  // raise together: a rank that raised alone would leave the others waiting in a collective.
  std::string mine;
  bool shape = false;
  if (p.parts != comm.size() || p.rank != comm.rank()) {
    mine = detail::message(who, ": the inputs are rank ", p.rank, " of ", p.parts,
                           " parts, the communicator is ", comm.describe());
  } else if (p.send_rows.size() != parts || p.recv_rows.size() != parts) {
    mine = detail::message(who, ": the part holds ", p.send_rows.size(), " send and ", p.recv_rows.size(),
                           " receive counts, expected one per rank (", parts, ")");
  } else if (!exchange_counts_error(p.recv_rows, p.rank, p.num_halo()).empty() ||
             !exchange_counts_error(p.send_rows, p.rank, static_cast<int64_t>(p.send_index.size())).empty()) {
    mine = detail::message(who, ": the part's exchange plan does not fit it: recv_rows (", join(p.recv_rows),
                           ") must count its ", p.num_halo(), " halo nodes and send_rows (",
                           join(p.send_rows), ") its ", p.send_index.size(),
                           " send_index entries, each count in [0, total] and 0 for "
                           "this rank");
  } else if (std::any_of(p.send_index.begin(), p.send_index.end(),
                         [&](int32_t k) { return k < 0 || k >= p.num_owned(); })) {
    mine = detail::message(who, ": the part's send_index has an entry outside its ", p.num_owned(),
                           " owned rows");
  } else if (in.x_src.rows() != p.num_src() && in.x_src.rows() != p.num_owned()) {
    mine = detail::message(who, ": x_src has ", in.x_src.rows(), " rows, expected num_src = ", p.num_src(),
                           " (or num_owned = ", p.num_owned(), " with HaloInput::projection)");
    shape = true;
  }
  const std::vector<int64_t> failed = allgather_value(comm, mine.empty() ? 0 : 1);
  if (!mine.empty()) {
    if (shape) raise<ShapeError>(mine);
    raise<InvalidArgument>(mine);
  }
  for (size_t r = 0; r < failed.size(); ++r)
    if (failed[r] != 0)
      raise<InvalidArgument>(who, ": rank ", r, "'s inputs were refused (that rank's error says why)");
  // The ranks' exchange plans must agree (a collective: every rank checks the same gathered
  // counts, so all raise together): rank k sends rank r as many rows as r expects from k. Part
  // files of which one was changed or comes from another partition would otherwise make the
  // row exchange read or write past its buffers.
  if (parts > 1) {
    std::vector<int64_t> counts(p.send_rows);
    counts.insert(counts.end(), p.recv_rows.begin(), p.recv_rows.end());
    const auto all = comm.allgather(std::as_bytes(std::span<const int64_t>(counts)));
    const auto count = [&](size_t rank, size_t index) {
      int64_t v = 0;
      std::memcpy(&v, all[rank].data() + index * sizeof(int64_t), sizeof v);
      return v;
    };
    for (size_t k = 0; k < parts; ++k)
      for (size_t r = 0; r < parts; ++r)
        if (r != k && count(k, r) != count(r, parts + k))
          raise<InvalidArgument>(who, ": the parts disagree: rank ", k, " sends ", count(k, r),
                                 " rows to rank ", r, ", which expects ", count(r, parts + k),
                                 " from it (part files of different partitions, or a changed one)");
    check_halo_ids(p, comm, who);
  }
}

// The forward on this rank's part: logits [num_owned, C].
autograd::Var forward_part(autograd::Tape& tape, nn::Model& model, Communicator& comm,
                           const DistributedInputs& in, uint64_t step_seed) {
  const LocalPartition& part = in.part;
  // Between layers, rows over the owned nodes get the halo rows from their owners.
  const nn::EdgeFeatures edges{in.edge_attr.absent() ? autograd::Var{} : tape.constant_ref(in.edge_attr)};
  return model.forward_partition(tape, part.graph, part.num_owned(), in.x_src, edges,
                                 halo_expansion(part, comm), step_seed);
}

// Every rank's `mine` [rows_r, C], gathered to every rank and placed at rows `all_ids` (every
// rank's ids, concatenated in rank order) of a [num_rows, C] tensor; rows no rank sent stay 0.
Tensor place_gathered(Communicator& comm, ConstView mine, std::span<const int64_t> all_ids,
                      int64_t num_rows) {
  const int64_t c = mine.dim(1);
  const std::vector<float> rows =
      allgather_concat(comm, std::span<const float>(mine.data(), static_cast<size_t>(mine.numel())));
  Tensor out({num_rows, c});
  for (size_t k = 0; k < all_ids.size(); ++k)
    std::memcpy(out.data() + all_ids[k] * c, rows.data() + static_cast<int64_t>(k) * c,
                sizeof(float) * static_cast<size_t>(c));
  return out;
}

// The first `rows` rows of x (the owned nodes'), dense.
data::Features leading_rows_dense(const data::Features& x, int64_t rows) {
  if (x.is_sparse()) {
    std::vector<int64_t> first(static_cast<size_t>(rows));
    std::iota(first.begin(), first.end(), int64_t{0});
    return data::Features(x.sparse().select_rows(first)).to_dense();
  }
  Tensor out = Tensor::uninitialized({rows, x.cols()});
  if (out.numel() > 0)
    std::memcpy(out.data(), x.dense().data(), sizeof(float) * static_cast<size_t>(out.numel()));
  return out;
}

}  // namespace

const char* to_string(HaloInput h) { return h == HaloInput::features ? "features" : "projection"; }

HaloInput parse_halo_input(const std::string& name) {
  if (name == "features") return HaloInput::features;
  if (name == "projection") return HaloInput::projection;
  raise<InvalidArgument>("halo input '", name, "': expected 'features' or 'projection'");
}

DistributedInputs prepare_part(const nn::Model& model, DatasetPart part, bool edge_features,
                               HaloInput halo_input) {
  const nn::ModelConfig& c = model.config();
  if (c.kind == nn::ModelKind::graph_transformer)
    raise<InvalidArgument>(
        "prepare_part: distributed training needs a conv kind (gat, gatv2, transformer), not "
        "graph_transformer");
  if (c.pe != nn::PositionalEncodingKind::none)
    raise<InvalidArgument>("prepare_part: positional encodings (pe = ", nn::to_string(c.pe),
                           ") need the whole graph; distributed training takes none");
  if (part.features.cols() != c.in_channels)
    raise<ShapeError>("prepare_part: the part's features have ", part.features.cols(),
                      " columns, the model expects in_channels = ", c.in_channels);
  if (edge_features && part.edge_attr.absent())
    raise<InvalidArgument>("prepare_part: edge features were asked for, but the part has no edge attributes");
  if (edge_features != (c.edge_dim > 0))
    raise<InvalidArgument>("prepare_part: the model has edge_dim = ", c.edge_dim, " but edge features were ",
                           edge_features ? "asked for" : "not asked for");
  if (halo_input == HaloInput::projection && !model.first_layer_exchanges_projection(true))
    raise<InvalidArgument>(
        "prepare_part: halo input 'projection' needs a first layer that exchanges its "
        "projection (the gat kind without residual), the model is ",
        nn::to_string(c.kind), c.residual ? " with residual" : "");
  DistributedInputs in;
  in.part = std::move(part.part);
  // The part graph as the layers read it: the owned nodes' in-edges over owned + halo sources
  // (bipartite, as a sampled block: output rows for the owned nodes only), prepared as the model
  // prepares a graph (without nn::prepare_graph's input-order maps: 16 bytes an edge nobody reads).
  if (edge_features) {
    nn::PreparedGraph p = model.prepare_graph(in.part.graph, part.edge_attr.view());
    in.part.graph = std::move(p.graph);
    in.edge_attr = std::move(p.edge_attr);
  } else {
    in.part.graph = model.prepare_graph(in.part.graph);
  }
  // The cut's edge positions (8 bytes an edge): the attributes are gathered, and the prepared
  // graph has other edges. Freed, not cleared (`edge_ids = {}` would keep the capacity).
  std::vector<int64_t>().swap(in.part.edge_ids);
  // The halo's features are dropped where the first layer exchanges its projection instead
  // (dense: the fused projection reads dense rows).
  in.x_src = halo_input == HaloInput::projection ? leading_rows_dense(part.features, in.part.num_owned())
                                                 : data::sparsify_features(part.features);
  in.labels = std::move(part.labels);
  in.train = std::move(part.train);
  in.val = std::move(part.val);
  in.test = std::move(part.test);
  return in;
}

DistributedInputs distribute(const nn::Model& model, const data::Dataset& ds, const data::Split& split,
                             Communicator& comm, const PartitionOptions& options, bool edge_features,
                             PartitionQuality* quality, HaloInput halo_input) {
  PartitionOptions o = options;
  o.parts = comm.size();
  const std::vector<int32_t> part = partition_nodes(ds.graph, o);
  if (quality) *quality = partition_quality(ds.graph, part, o.parts);
  return prepare_part(model, make_dataset_part(ds, split, part, comm.size(), comm.rank()), edge_features,
                      halo_input);
}

Tensor gather_owned_rows(Communicator& comm, const LocalPartition& part, ConstView owned_rows) {
  if (owned_rows.rank() != 2 || owned_rows.dim(0) != part.num_owned())
    raise<ShapeError>("gather_owned_rows: rows have shape ", owned_rows.shape().str(),
                      ", expected [num_owned=", part.num_owned(), ", C]");
  return place_gathered(comm, owned_rows, allgather_concat(comm, part.owned), part.num_nodes);
}

Tensor predict_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& inputs) {
  check_inputs(inputs, comm, "predict_distributed");
  autograd::Tape tape;
  tape.training = false;
  return tape.value(forward_part(tape, model, comm, inputs, 0));
}

train::TrainResult fit_distributed(nn::Model& model, Communicator& comm, const DistributedInputs& in,
                                   const train::TrainConfig& config, Traffic* step_traffic) {
  check_inputs(in, comm, "fit_distributed");
  if (in.train.total == 0) raise<InvalidArgument>("fit_distributed: the split has no training nodes");

  // The loss: this rank's training nodes (local rows), weighted by their share of all of them.
  // A rank without training nodes still runs the backward (its exchanges are collectives): its
  // loss is row 0's scaled by 0, which gives every op a (zero) gradient.
  const std::vector<int64_t> loss_rows = in.train.rows.empty() ? std::vector<int64_t>{0} : in.train.rows;
  const float factor = in.train.rows.empty() ? 0.f
                                             : static_cast<float>(static_cast<double>(in.train.rows.size()) /
                                                                  static_cast<double>(in.train.total));

  std::vector<autograd::Parameter*> params = model.parameters();
  int64_t num_values = 0;
  for (auto* p : params) num_values += p->value.numel();
  std::vector<float> grads(static_cast<size_t>(num_values));
  bool measured = false;

  const train::EpochFn step = [&](autograd::Tape& tape, int64_t epoch, train::Adam& optimizer,
                                  train::TrainResult&) {
    const Traffic before = comm.traffic();
    optimizer.zero_grad();
    const autograd::Var logits = forward_part(tape, model, comm, in, train::step_seed(config.seed, epoch));
    const autograd::Var local = train::training_loss(tape, logits, in.labels, loss_rows);
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
    if (step_traffic && !measured) {
      *step_traffic = comm.traffic() - before;
      measured = true;
    }
    return value;
  };

  // Evaluation: the logits of the split's nodes gathered to every rank as one [S, C] tensor whose
  // rows are the train, val and test lists in their one-process order, with the labels to match;
  // fit_with then scores them as fit() does.
  std::vector<int64_t> mine_rows, mine_ids;  // local rows of this rank's scored nodes, their rows in [S, C]
  int64_t offset = 0;
  for (const SplitPart* s : {&in.train, &in.val, &in.test}) {
    for (size_t k = 0; k < s->rows.size(); ++k) {
      mine_rows.push_back(s->rows[k]);
      mine_ids.push_back(offset + s->positions[k]);
    }
    offset += s->total;
  }
  const int64_t scored = offset;
  const std::vector<int64_t> all_ids = allgather_concat(comm, mine_ids);
  if (static_cast<int64_t>(all_ids.size()) != scored)
    raise<InvalidArgument>("fit_distributed: the ranks hold ", all_ids.size(), " of the split's ", scored,
                           " nodes (parts of different partitions?)");
  data::Split scored_split;
  for (int64_t k = 0; k < scored; ++k) {
    auto& list = k < in.train.total                  ? scored_split.train
                 : k < in.train.total + in.val.total ? scored_split.val
                                                     : scored_split.test;
    list.push_back(k);
  }
  data::Labels scored_labels;
  scored_labels.num_classes = in.labels.num_classes;
  scored_labels.eval_metric = in.labels.eval_metric;
  if (in.labels.multi_label()) {
    scored_labels.multi_hot =
        place_gathered(comm, gather_rows(in.labels.multi_hot.view(), mine_rows), all_ids, scored);
  } else {
    std::vector<int64_t> mine(mine_rows.size());
    for (size_t k = 0; k < mine_rows.size(); ++k)
      mine[k] = in.labels.classes[static_cast<size_t>(mine_rows[k])];
    const std::vector<int64_t> all = allgather_concat(comm, mine);
    scored_labels.classes.assign(static_cast<size_t>(scored), -1);
    for (size_t k = 0; k < all_ids.size(); ++k)
      scored_labels.classes[static_cast<size_t>(all_ids[k])] = static_cast<int32_t>(all[k]);
  }
  const train::ForwardFn evaluate = [&](autograd::Tape& tape, uint64_t seed) {
    const Tensor& logits = tape.value(forward_part(tape, model, comm, in, seed));
    Tensor out = place_gathered(comm, gather_rows(logits.view(), mine_rows), all_ids, scored);
    return tape.constant(std::move(out));
  };
  return train::fit_with("fit_distributed", step, evaluate, params, scored_labels, scored_split, config);
}

}  // namespace edgeattn::dist
