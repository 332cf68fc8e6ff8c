// edgeattn train | eval | predict: node classification from the command line (and graph
// classification with --task graph).
//
//   edgeattn train --dataset cora --model gat [--heads 8 --hidden 8 --dropout 0.6 --lr 0.005
//                  --weight-decay 5e-4 --epochs 1000 --patience 100 --seed 0 --threads T]
//                  [--runs R] [--json] [--save FILE] [--attention-out FILE] [--plot FILE]
//                  [--batch-size B --fanout 15,10,5 [--replace]]   (mini-batch, neighbour sampling)
//   mpirun -np P edgeattn train --distributed [--partitioner metis|degree_balanced|contiguous]
//                  [--halo-input features|projection]
//                  --threads T ...          (full-graph training over MPI: P ranks, one part each)
//   edgeattn train --task graph --dataset mutag [--readout mean|sum|max|attention] [--folds 10]
//   edgeattn eval    --model-file FILE --dataset cora [--json]
//   edgeattn predict --model-file FILE --dataset cora [--out FILE]
//
// train prints a progress line per epoch on stderr (on a terminal one line rewritten in place;
// in a log or pipe a line every 10th epoch and at the last), then the kept epoch's validation and test
// accuracy; --runs R trains seeds seed..seed+R-1 and reports mean and standard deviation. A model
// file stores the model configuration and the preprocessing next to the weights, so eval and
// predict rebuild exactly the trained model. --task graph trains nn::GraphClassifier (the encoder
// the model options describe, a readout, a linear classifier) on each fold of data::stratified_kfold
// and reports each fold's test accuracy and their mean and standard deviation. --batch-size trains on
// mini-batches of B training nodes with their sampled neighbourhoods (graph/neighbor_sampler.hpp,
// train::fit_minibatch); evaluation stays exact on the whole graph. --distributed (under mpirun)
// partitions the graph into one part per rank and trains with halo exchange between layers
// (dist/distributed_training.hpp); rank 0 prints and saves, every rank ends on any rank's error.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "args.hpp"
#include "commands.hpp"
#include "dataset_arg.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/data/mapped_features.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/data/splits.hpp"
#include "edgeattn/dist/distributed_training.hpp"
#include "edgeattn/graph/ordering.hpp"
#include "edgeattn/graph/partition.hpp"
#include "edgeattn/graph/transforms.hpp"
#if EDGEATTN_HAVE_MPI
#include "edgeattn/dist/mpi_communicator.hpp"
#endif
#include "edgeattn/nn/graph_classifier.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/train/checkpoint.hpp"
#include "edgeattn/train/metrics.hpp"
#include "edgeattn/train/trainer.hpp"
#include "json.hpp"
#include "output_path.hpp"
#include "peer_inputs.hpp"
#include "plot.hpp"
#include "timing.hpp"

namespace edgeattn::cli {
namespace {

// A run record value with every character outside [A-Za-z0-9._/+-] as %XX: no space, comma,
// colon or '=' (the metadata line's separators) is left in it.
std::string percent_encode(const std::string& v) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : v) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '/' || c == '+' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string percent_decode(const std::string& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() + 0 && std::isxdigit(static_cast<unsigned char>(v[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(v[i + 2]))) {
      out += static_cast<char>(std::stoi(v.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += v[i];
    }
  }
  return out;
}

// What a model file records besides the weights: the model, and how the data was prepared.
struct ModelFileMeta {
  nn::ModelConfig model;
  bool normalize_features = true;
  std::string dataset{}, format{}, split{};
  /// Checkpoints only: the training options a resumed run must repeat (run_record); empty in model
  /// files (--save) and in checkpoints written before it was recorded.
  std::string run{};
  /// The --features file the model was trained on (empty: the dataset's own features).
  std::string features{};
  /// The --reorder ordering training numbered the nodes by (empty: none, the file's numbering).
  /// Eval computes a Laplacian encoding in that numbering (features_for).
  std::string reorder{};

  // Line 1: the model configuration (JSON); line 2: "normalize_features=1 dataset=cora ...".
  std::string serialize() const {
    return model.to_json() + "\nnormalize_features=" + (normalize_features ? "1" : "0") +
           " dataset=" + dataset + " format=" + format + " split=" + split +
           (run.empty() ? "" : " run=" + run) +
           (features.empty() ? "" : " features=" + percent_encode(features)) +
           (reorder.empty() ? "" : " reorder=" + reorder) + "\n";
  }
  static ModelFileMeta parse(const std::string& text, const std::string& file) {
    ModelFileMeta m;
    m.normalize_features = false;  // a file without the key (Model.save before it wrote one): as stored
    const size_t nl = text.find('\n');
    if (nl == std::string::npos) raise<ParseError>(file, ": model metadata has no preprocessing line");
    m.model = nn::ModelConfig::from_json(text.substr(0, nl));
    std::istringstream rest(text.substr(nl + 1));
    std::string kv;
    while (rest >> kv) {
      if (kv == "training_state") break;  // a training checkpoint's state line (train/checkpoint.hpp)
      const size_t eq = kv.find('=');
      const std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (key == "normalize_features")
        m.normalize_features = value == "1";
      else if (key == "dataset")
        m.dataset = value;
      else if (key == "format")
        m.format = value;
      else if (key == "split")
        m.split = value;
      else if (key == "run")
        m.run = value;
      else if (key == "features")
        m.features = percent_decode(value);
      else if (key == "reorder")
        m.reorder = value;
      else
        raise<ParseError>(file, ": unknown model metadata key '", key, "'");
    }
    return m;
  }
};

void add_dataset_options(Args& args) {
  args.option("dataset", "NAME|PATH", "cora", "dataset name (" + known_dataset_names() + ") or a path");
  add_dataset_source_options(args);
  args.option("split", "NAME", "",
              "split to use (default: the dataset's default split); random:P,V,T[,SEED] draws one from the "
              "labels: P training nodes per class, V validation, T test")
      .option("threads", "T", "all cores", "worker threads");
}

void limit_threads(const Args& args, std::optional<ThreadLimit>& limit) {
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));
}

struct Prepared {
  data::Dataset ds;
  Graph graph;
  data::Features features;
  Tensor edge_attr;  ///< [graph.num_edges(), edge_dim] for a model with edge_dim, else absent
};

// The width of the dataset's edge attributes; InvalidArgument when it has none.
int64_t edge_attr_width(const data::Dataset& ds) {
  if (ds.edge_attr.absent())
    raise<InvalidArgument>(
        "dataset '", ds.name,
        "' has no edge attributes (edge features come from OGB's edge-feat and TUDataset's "
        "edge attributes or labels)");
  return ds.edge_attr.dim(1);
}

// The prepared graph of `model`, with the edge attributes through the self-loops when it reads them.
nn::PreparedGraph prepare_graph_of(const nn::Model& model, const data::Dataset& ds) {
  const int64_t edge_dim = model.config().edge_dim;
  if (edge_dim == 0) return {model.prepare_graph(ds.graph), {}};
  if (edge_attr_width(ds) != edge_dim)
    raise<ShapeError>("dataset '", ds.name, "' has ", ds.edge_attr.dim(1),
                      " edge attributes per edge, the model ", edge_dim);
  return model.prepare_graph(ds.graph, ds.edge_attr);
}

// The model's forward on a prepared graph, with its edge attributes when there are any.
autograd::Var forward_on(autograd::Tape& tape, nn::Model& model, const Graph& graph, const data::Features& x,
                         const Tensor& edge_attr, uint64_t seed, std::vector<Tensor>* attention = nullptr) {
  const nn::EdgeFeatures edges{edge_attr.absent() ? autograd::Var{} : tape.constant_ref(edge_attr)};
  return model.forward(tape, graph, x, edges, seed, attention);
}

// A --features FILE[:MEMBER] spec: an .npz path may name its member after a ':' (member empty
// otherwise, and for a file that is not .npz the whole spec is the file).
struct FeaturesSpec {
  std::string file, member;
  explicit FeaturesSpec(const std::string& spec) : file(spec) {
    const size_t colon = spec.rfind(':');
    if (colon != std::string::npos && spec.substr(0, colon).ends_with(".npz")) {
      file = spec.substr(0, colon);
      member = spec.substr(colon + 1);
    }
  }
};

// --features FILE[:MEMBER]: FILE mapped in place.
data::Features mapped_features_arg(const std::string& spec, int64_t num_nodes) {
  const FeaturesSpec parsed(spec);
  const std::string& file = parsed.file;
  std::string member = parsed.member;
  if (member.ends_with(".npy")) member.resize(member.size() - 4);
  if (!std::filesystem::exists(file)) throw UsageError("--features: '" + file + "' does not exist");
  data::Features f = data::map_features(file, member);
  if (f.rows() != num_nodes)
    throw UsageError("--features: " + f.mapped_from() + " has " + std::to_string(f.rows()) +
                     " rows, but the dataset has " + std::to_string(num_nodes) + " nodes (one row per node)");
  if (f.cols() == 0 && num_nodes > 0)
    throw UsageError("--features: " + f.mapped_from() +
                     " has 0 columns, expected at least one feature a node");
  return f;
}

// Throws UsageError unless `order` is an ordering --reorder knows (and this build can run).
void check_reorder(const std::string& order) {
  if (order != "degree" && order != "dbg" && order != "rcm" && order != "amd" && order != "metis")
    throw UsageError("--reorder is '" + order + "': expected auto, none, degree, dbg, rcm, amd or metis");
  if (order == "metis" && !metis_available())
    throw UsageError(
        "--reorder metis needs METIS: this edgeattn was built without it (install libmetis-dev "
        "and reconfigure with -DEDGEATTN_METIS=ON)");
}

// new_of_old of --reorder `order` (not "none") on `graph`: a function of the graph's structure
// alone, so eval repeats training's numbering from the file's graph.
std::vector<int64_t> locality_ordering(const std::string& order, const Graph& graph) {
  check_reorder(order);
  return order == "degree" ? degree_ordering(graph)
         : order == "dbg"  ? degree_group_ordering(graph)
         : order == "rcm"  ? rcm_ordering(graph)
         : order == "amd"  ? amd_ordering(graph)
                           : partition_ordering(graph);
}

// model.prepare_features of ds, in ds's numbering, with a Laplacian encoding computed in the
// numbering training used (`reorder`: its --reorder ordering, empty for none). The eigenvectors of
// a repeated eigenvalue, and the sign of every eigenvector, depend on the numbering: computed on
// the file's, the encoding is another basis than the one the model learnt (a karate model
// trained with --reorder rcm evaluated at 0.1 test accuracy against 1.0 in training). The same
// ordering of the same graph gives training's encoding bit for bit; its rows are then read back
// into the file's order. Other encodings do not depend on the numbering.
data::Features features_for(const nn::Model& model, const data::Dataset& ds, const std::string& reorder) {
  if (reorder.empty() || model.config().pe != nn::PositionalEncodingKind::laplacian)
    return model.prepare_features(ds.graph, ds.features);
  const std::vector<int64_t> new_of_old = locality_ordering(reorder, ds.graph);
  data::Dataset trained = data::reorder(ds, new_of_old);  // the graph and features training saw
  trained.features = model.prepare_features(trained.graph, trained.features);
  return data::reorder(trained, invert_permutation(new_of_old)).features;
}

// Loads, preprocesses and prepares the inputs of `model` (once; every epoch reuses them).
// features_spec: a --features FILE[:MEMBER] to read in place of the dataset's own (empty: none).
Prepared prepare(const Args& args, const nn::Model& model, bool normalize, const std::string& model_file,
                 const std::string& trained_dataset = "", const std::string& trained_format = "",
                 const std::string& features_spec = "", const std::string& trained_reorder = "") {
  // A named dataset loads in the format the model was trained on unless --format says otherwise:
  // another format numbers the nodes (and may order the features) differently.
  const std::string& name = args.str("dataset");
  const bool same_dataset = !trained_dataset.empty() && name == trained_dataset;
  if (same_dataset && args.given("format") && !trained_format.empty() && args.str("format") != trained_format)
    raise<InvalidArgument>("--format ", args.str("format"), ": the model in ", model_file,
                           " was trained on dataset '", trained_dataset, "' in format '", trained_format,
                           "', whose nodes another format numbers differently (omit --format)");
  Prepared p{
      load_dataset_arg(name, args, true, false, same_dataset ? trained_format : std::string()), {}, {}, {}};
  if (!features_spec.empty()) p.ds.features = mapped_features_arg(features_spec, p.ds.num_nodes());
  if (p.ds.features.cols() != model.config().in_channels)
    raise<ShapeError>(
        features_spec.empty() ? "dataset '" + p.ds.name + "'" : "the features of '" + features_spec + "'",
        " has ", p.ds.features.cols(), " features, but the model in ", model_file, " was trained on ",
        model.config().in_channels, " (a model evaluates the kind of dataset it was trained on)");
  if (p.ds.num_classes() > model.config().num_classes)
    raise<ShapeError>("dataset '", p.ds.name, "' has ", p.ds.num_classes(), " classes, but the model in ",
                      model_file, " predicts ", model.config().num_classes);
  if (normalize && p.ds.features.cols() > 0) data::normalize_features(p.ds.features);
  nn::PreparedGraph g = prepare_graph_of(model, p.ds);
  p.graph = std::move(g.graph);
  p.edge_attr = std::move(g.edge_attr);
  p.features = features_for(model, p.ds, trained_reorder);
  return p;
}

// pe_possible: the run could add a positional encoding (--pe), so a featureless dataset can
// train when one is given (pe_given).
void check_labels(const data::Dataset& ds, bool pe_possible, bool pe_given) {
  if (ds.num_classes() < 2 && !ds.graph_labels.classes.empty())
    raise<InvalidArgument>(
        "dataset '", ds.name, "' is a graph-classification dataset (", ds.num_graphs(),
        " graphs with graph labels, no node labels); edgeattn train does node classification");
  if (ds.num_classes() < 2) raise<InvalidArgument>("dataset '", ds.name, "' has no class labels to train on");
  if (ds.features.cols() == 0 && ds.num_nodes() > 0 && !pe_given)
    raise<InvalidArgument>("dataset '", ds.name, "' has no node features",
                           pe_possible
                               ? " (give them with --features FILE, or train on a positional encoding: "
                                 "--pe rwse or --pe laplacian)"
                               : " (give them with --features FILE)");
}

// "cora: epoch   57 | loss 0.6120 | train acc 0.943 | val loss 1.0234 | val acc 0.796 | 1.84 ms/epoch"
// On a terminal the line is rewritten in place every epoch; in a log or a pipe, where "\r" would
// pile up, a line is written every kLogEvery epochs and at the last one.
class Progress {
 public:
  static constexpr int64_t kLogEvery = 10;

  Progress(std::string name, bool enabled, std::string metric = "acc")
      : name_(std::move(name)), metric_(std::move(metric)), enabled_(enabled), tty_(::isatty(2) != 0) {}

  void epoch(const train::EpochStats& s, double ms_per_epoch) {
    if (!enabled_) return;
    last_ = s;
    ms_ = ms_per_epoch;
    if (tty_ || s.epoch % kLogEvery == 0) print();
  }
  /// After the run: ends the terminal's line, or logs the last epoch if it was not logged.
  void finish() {
    if (!enabled_ || !last_) return;
    if (tty_)
      std::fputc('\n', stderr);
    else if (last_->epoch != printed_)
      print();
  }

 private:
  void print() {
    if (last_->evaluated)
      std::fprintf(
          stderr,
          "%s%s: epoch %4lld | loss %.4f | train %s %.3f | val loss %.4f | val %s %.3f | %.2f ms/epoch%s",
          tty_ ? "\r" : "", name_.c_str(), static_cast<long long>(last_->epoch), last_->train_loss,
          metric_.c_str(), last_->train_accuracy, last_->val_loss, metric_.c_str(), last_->val_accuracy, ms_,
          tty_ ? "" : "\n");
    else  // --eval-every skipped this epoch's evaluation; on a terminal, erase the longer line it replaces
      std::fprintf(stderr, "%s%s: epoch %4lld | loss %.4f | (not evaluated) | %.2f ms/epoch%s",
                   tty_ ? "\r" : "", name_.c_str(), static_cast<long long>(last_->epoch), last_->train_loss,
                   ms_, tty_ ? "\033[K" : "\n");
    std::fflush(stderr);
    printed_ = last_->epoch;
  }

  std::string name_;
  std::string metric_;  // "acc", "micro_f1", "rocauc": what the accuracy fields hold
  bool enabled_, tty_;
  std::optional<train::EpochStats> last_;
  double ms_ = 0;
  int64_t printed_ = -1;
};

// Node ids are the dataset's: old_of_new maps the trained graph's back when --reorder renumbered
// it (empty: the same ids).
std::string attention_tsv(const Graph& g, const std::vector<Tensor>& layers,
                          std::span<const int64_t> old_of_new) {
  const auto id = [&](int64_t v) { return std::to_string(old_of_new.empty() ? v : old_of_new[size_t(v)]); };
  std::string out =
      "# layer\tsrc\tdst\talpha per head (CSR order of the prepared graph, self-loops included)\n";
  char buf[64];
  for (size_t l = 0; l < layers.size(); ++l) {
    const Tensor& a = layers[l];
    const int64_t heads = a.rank() == 2 ? a.dim(1) : 1;
    for (int64_t i = 0; i < g.num_dst(); ++i) {
      const auto row = g.row(i);
      for (size_t k = 0; k < row.size(); ++k) {
        const int64_t e = g.row_ptr()[static_cast<size_t>(i)] + static_cast<int64_t>(k);
        out += std::to_string(l) + "\t" + id(row[k]) + "\t" + id(i);
        for (int64_t h = 0; h < heads; ++h) {
          std::snprintf(buf, sizeof buf, "\t%.6g", a.data()[e * heads + h]);
          out += buf;
        }
        out += "\n";
      }
    }
  }
  return out;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Sample standard deviation (0 for one value), as reported over runs and folds.
double stdev(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (const double x : v) s += (x - m) * (x - m);
  return v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : 0.0;
}

// --task graph: stratified k-fold cross-validation of a GraphClassifier on a many-graph dataset.
int train_graph_classifier(const Args& args, const data::Dataset& ds, nn::ModelConfig encoder,
                           train::TrainConfig tc, bool show_progress) {
  if (ds.graph_labels.classes.empty())
    raise<InvalidArgument>("dataset '", ds.name,
                           "' has no graph labels; --task graph needs a dataset of many ",
                           "graphs with a class each (e.g. mutag, proteins, imdb-binary)");
  if (ds.features.cols() == 0 && encoder.pe == nn::PositionalEncodingKind::none)
    raise<InvalidArgument>("dataset '", ds.name, "' has no node features (try --pe rwse or --pe laplacian)");
  const int64_t k = args.integer("folds", 2, 1000);
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 0));
  const std::vector<data::Split> folds =
      data::stratified_kfold(ds.graph_labels, static_cast<int>(k), 0.1, seed);
  nn::GraphClassifierConfig gcfg;
  gcfg.encoder = encoder;
  gcfg.encoder.num_classes = encoder.hidden * encoder.heads;  // the node embedding width
  gcfg.num_classes = ds.graph_labels.num_classes;
  gcfg.readout = nn::parse_readout(args.str("readout"));

  std::vector<double> test_acc, val_acc, sec_per_epoch;
  for (int64_t f = 0; f < k; ++f) {
    gcfg.encoder.seed = gcfg.seed = seed + static_cast<uint64_t>(f);
    nn::GraphClassifier model(gcfg);
    const Graph g = model.prepare_graph(ds.graph);
    const data::Features x = model.prepare_features(ds.graph, ds.features, ds.graph_ptr);
    tc.seed = gcfg.seed;
    double ms_sum = 0;
    Progress progress(ds.name + " fold " + std::to_string(f + 1), show_progress);
    tc.on_epoch = [&](const train::EpochStats& s) {
      ms_sum += 1e3 * s.train_seconds;
      progress.epoch(s, ms_sum / static_cast<double>(s.epoch + 1));
      return true;
    };
    auto forward = [&](autograd::Tape& tape, uint64_t s) {
      return model.forward(tape, g, x, ds.graph_ptr, s);
    };
    const train::TrainResult r =
        train::fit(forward, model.parameters(), ds.graph_labels, folds[static_cast<size_t>(f)], tc);
    progress.finish();
    test_acc.push_back(r.test_accuracy);
    val_acc.push_back(r.val_accuracy);
    sec_per_epoch.push_back(r.seconds_per_epoch);
    if (!args.flag_set("json"))
      std::printf(
          "fold %lld of %lld: %lld epochs, best epoch %lld, val acc %.4f, test acc %.4f, %.2f ms/epoch\n",
          static_cast<long long>(f + 1), static_cast<long long>(k), static_cast<long long>(r.epochs_run),
          static_cast<long long>(r.best_epoch), r.val_accuracy, r.test_accuracy, 1e3 * r.seconds_per_epoch);
  }
  if (args.flag_set("json")) {
    JsonObject j;
    j.field("dataset", ds.name).field("task", "graph").field("model", args.str("model"));
    j.field("readout", to_string(gcfg.readout)).field("folds", k).field("graphs", ds.num_graphs());
    j.field("test_accuracy", mean(test_acc)).field("test_accuracy_std", stdev(test_acc));
    j.field("val_accuracy", mean(val_acc)).field("seconds_per_epoch", mean(sec_per_epoch));
    j.raw_field("test_accuracies", json_accuracy_array(test_acc));
    j.field("library", "edgeattn").field("version", tool_version()).field("input", args.str("dataset"));
    std::cout << j.str() << "\n";
  } else {
    std::printf("test accuracy %.4f ± %.4f over %lld folds (val %.4f), %.2f ms per training epoch\n",
                mean(test_acc), stdev(test_acc), static_cast<long long>(k), mean(val_acc),
                1e3 * mean(sec_per_epoch));
  }
  return 0;
}

}  // namespace

namespace {

// "15,10,5" -> {15, 10, 5}; each an integer >= -1.
std::vector<int64_t> parse_fanouts(const std::string& text) {
  std::optional<std::vector<int64_t>> fanouts = integer_list(text, -1);
  if (!fanouts)
    throw UsageError("--fanout is '" + text +
                     "': expected integers >= -1 separated by commas (e.g. 15,10,5)");
  return std::move(*fanouts);
}

// What --reorder decided: the ordering training uses ("none" or one check_reorder knows) and, for
// auto, why.
struct ReorderChoice {
  std::string order;
  std::string reason;  // auto only: advise_ordering's reason, or why it was not asked
};

// --reorder auto (the default): degree-based grouping where advise_ordering (graph/ordering.hpp)
// expects it to pay: a large graph with skewed degrees in a numbering without locality. Never
// where renumbering is not possible or would copy features read in place (--mmap-features,
// --features), nor for --task graph; any other value is taken as given.
ReorderChoice resolve_reorder(const std::string& option, const data::Dataset& ds, const nn::ModelConfig& cfg,
                              const std::string& task) {
  if (option != "auto") return {option, ""};
  if (task == "graph") return {"none", "graph classification trains on many small graphs"};
  if (ds.features.is_mapped())
    return {"none", "the features are read in place (" + ds.features.mapped_from() +
                        "): renumbering their rows would copy them into memory"};
  // The rows the first layer's attention gathers: heads x channels floats per node.
  const int64_t row_bytes =
      std::max<int64_t>(1, cfg.heads * cfg.hidden * static_cast<int64_t>(sizeof(float)));
  const OrderingAdvice advice = advise_ordering(ds.graph, row_bytes);
  return {advice.reorder ? "dbg" : "none", advice.reason};
}

// --reorder: renumbers ds's nodes by a locality ordering (graph/ordering.hpp) and returns
// old_of_new (empty for "none"), so that what is written per node or edge can name the dataset's
// own ids. Numbering hubs or neighbourhoods together makes the kernels' gathers of source and
// destination rows hit cache more often on large graphs. `order` is resolved (not auto).
std::vector<int64_t> reorder_for_locality(const std::string& order, data::Dataset& ds) {
  if (order == "none") return {};
  check_reorder(order);
  if (ds.features.is_mapped())
    throw UsageError("--reorder would copy the memory-mapped features (" + ds.features.mapped_from() +
                     ") into memory to renumber their rows: drop --reorder, or --mmap-features/--features");
  const std::vector<int64_t> new_of_old = locality_ordering(order, ds.graph);
  ds = data::reorder(ds, new_of_old);
  return invert_permutation(new_of_old);
}

}  // namespace

namespace {

// The options besides the model's (its configuration is checked apart) that decide a run's
// result, as "option:value,...": what a resumed run must repeat to end as the uninterrupted run,
// bit for bit. Values are the parsed ones (--lr 5e-3 is --lr 0.005); --epochs may grow, and the
// threads, output files and checkpoint interval do not change the result.
std::vector<std::pair<std::string, std::string>> run_options(const Args& args, const nn::ModelConfig& cfg,
                                                             const train::TrainConfig& tc,
                                                             const std::string& reorder) {
  const auto real = [](float v) {  // the shortest text that reads back as the same float: 0.005
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    return std::string(buf, end);
  };
  const auto flag = [&](const char* name) { return std::string(args.flag_set(name) ? "1" : "0"); };
  const int64_t batch_size = args.integer("batch-size", 0, int64_t{1} << 40);
  std::string fanout;
  if (batch_size > 0) {
    const std::vector<int64_t> f = args.given("fanout")
                                       ? parse_fanouts(args.str("fanout"))
                                       : std::vector<int64_t>(static_cast<size_t>(cfg.layers), 10);
    for (const int64_t k : f) {
      if (!fanout.empty()) fanout += ',';
      fanout += std::to_string(k);
    }
  }
  std::vector<std::pair<std::string, std::string>> r = {
      {"lr", real(tc.optimizer.lr)},
      {"weight-decay", real(tc.optimizer.weight_decay)},
      {"adamw", flag("adamw")},
      {"patience", std::to_string(tc.patience)},
      {"eval-every", std::to_string(tc.eval_every)},
      {"reorder", reorder.empty() ? std::string("none") : reorder},  // as resolved: auto's choice
      {"features", args.str("features")},
      {"batch-size", std::to_string(batch_size)},
      {"fanout", fanout},
      {"replace", flag("replace")},
      {"sample-weights", flag("sample-weights")},
      {"source-order", batch_size > 0 ? args.str("source-order") : ""},
      {"distributed", flag("distributed")},
  };
  if (args.flag_set("distributed")) {
    r.emplace_back("partitioner", args.str("partitioner"));
    r.emplace_back("partitions", args.str("partitions"));
    r.emplace_back("halo-input", args.str("halo-input"));
  }
  return r;
}

std::string run_record(const Args& args, const nn::ModelConfig& cfg, const train::TrainConfig& tc,
                       const std::string& reorder) {
  std::string out;
  for (const auto& [k, v] : run_options(args, cfg, tc, reorder)) {
    if (!out.empty()) out += ',';
    out += k + ":" + percent_encode(v);
  }
  return out;
}

// The options whose values differ between a checkpoint's run record and this run's, as
// "--lr 0.005 then, 0.1 now; ..."; empty when they agree.
std::string run_differences(const std::string& saved, const std::string& now) {
  const auto split = [](const std::string& record) {
    std::map<std::string, std::string> m;
    size_t pos = 0;
    while (pos < record.size()) {
      const size_t comma = std::min(record.find(',', pos), record.size());
      const std::string token = record.substr(pos, comma - pos);
      const size_t colon = token.find(':');
      m[token.substr(0, colon)] = colon == std::string::npos ? "" : percent_decode(token.substr(colon + 1));
      pos = comma + 1;
    }
    return m;
  };
  const auto a = split(saved), b = split(now);
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::string out;
  for (const std::string& k : keys) {
    const auto ia = a.find(k), ib = b.find(k);
    const std::string va = ia == a.end() ? "(not recorded)" : ia->second.empty() ? "(none)" : ia->second;
    const std::string vb = ib == b.end() ? "(not recorded)" : ib->second.empty() ? "(none)" : ib->second;
    if (va != vb) out += (out.empty() ? "--" : "; --") + k + " " + va + " then, " + vb + " now";
  }
  return out;
}

// --checkpoint / --resume: writes the run's state every --checkpoint-every epochs (when `write`,
// i.e. on one rank), and loads a state to resume into `model` (whose config must be the file's).
// `resumed` keeps the loaded state alive for tc.resume.
void checkpointing(const Args& args, nn::Model& model, ModelFileMeta meta, bool write,
                   std::optional<train::LoadedTrainingState>& resumed, train::TrainConfig& tc,
                   int ranks = 0) {
  meta.run = run_record(args, model.config(), tc, meta.reorder);
  // --distributed: the rank count too (mpirun -np), which decides the partition and the order of
  // the gradient sums; a checkpoint resumed under another count would end as neither run.
  if (ranks > 0) meta.run += ",np:" + std::to_string(ranks);
  if (args.given("checkpoint")) {
    tc.checkpoint_every = args.integer("checkpoint-every", 1, 1'000'000'000);
    if (write)
      tc.on_checkpoint = [file = args.str("checkpoint"), params = model.parameters(),
                          text = meta.serialize()](const train::TrainingState& state) {
        train::save_training_state(file, params, state, text);
      };
  }
  if (!args.given("resume")) return;
  const std::string file = args.str("resume");
  const train::Checkpoint checkpoint = train::load_checkpoint(file);
  const ModelFileMeta saved = ModelFileMeta::parse(checkpoint.metadata, file);
  if (!(saved.model == model.config()))
    raise<InvalidArgument>(file, " was written for the model ", saved.model.to_json(), ", not for ",
                           model.config().to_json(), ": resume with the options of the run that wrote it");
  if (saved.dataset != meta.dataset)
    raise<InvalidArgument>(file, " was written for dataset '", saved.dataset, "', not '", meta.dataset, "'");
  if (saved.format != meta.format)  // another file layout numbers the nodes differently
    raise<InvalidArgument>(file, " was written by a run on format '", saved.format, "', not '", meta.format,
                           "': resume with the options of the run that wrote it");
  const auto split_name = [](const std::string& n) { return n.empty() ? std::string("(the default)") : n; };
  if (saved.split != meta.split)
    raise<InvalidArgument>(file, " was written by a run on split ", split_name(saved.split), ", not ",
                           split_name(meta.split), ": resume with the options of the run that wrote it");
  if (saved.normalize_features != meta.normalize_features)
    raise<InvalidArgument>(file, " was written by a run ", saved.normalize_features ? "without" : "with",
                           " --no-normalize: resume with the options of the run that wrote it");
  if (!saved.run.empty()) {  // checkpoints from before the record was kept are taken as they are
    const std::string diff = run_differences(saved.run, meta.run);
    if (!diff.empty())
      raise<InvalidArgument>(
          file, " was written by a run with other training options (", diff,
          "): resume with the options of the run that wrote it (only --epochs may differ), "
          "or the result is not the uninterrupted run's");
  }
  resumed.emplace(train::load_training_state(checkpoint, file, model.parameters()));
  tc.resume = &resumed->state;
}

// The optimiser and loop options every training command shares.
train::TrainConfig train_config_from(const Args& args) {
  train::TrainConfig tc;
  tc.epochs = args.integer("epochs", 1, 10'000'000);
  tc.patience = args.integer("patience", 0, 10'000'000);
  tc.eval_every = args.integer("eval-every", 1, 10'000'000);
  tc.optimizer.lr = static_cast<float>(args.real("lr", 0.0, 10.0));
  tc.optimizer.weight_decay = static_cast<float>(args.real("weight-decay", 0.0, 10.0));
  tc.optimizer.decoupled_weight_decay = args.flag_set("adamw");
  return tc;
}

// --distributed: every rank takes its part (cut from the dataset it loads, or read from
// --partitions files written by `edgeattn partition`), trains; rank 0 reports.
int train_distributed(const Args& args, nn::ModelConfig cfg, train::TrainConfig tc, bool show_progress,
                      bool normalize) {
#if EDGEATTN_HAVE_MPI
  if (cfg.kind == nn::ModelKind::graph_transformer)
    throw UsageError("--distributed needs a conv model (gat, gatv2, transformer), not graph_transformer");
  if (cfg.pe != nn::PositionalEncodingKind::none)
    throw UsageError("--distributed takes no positional encoding (--pe needs the whole graph)");
  if (args.str("task") != "node") throw UsageError("--distributed trains --task node");
  dist::MpiEnvironment mpi;
  dist::MpiCommunicator comm(MPI_COMM_WORLD);
  // From here on an error on one rank must end all of them: the others would wait in a collective.
  try {
    const bool lead = comm.rank() == 0;
    dist::DatasetPart data;
    PartitionMethod method = PartitionMethod::contiguous;
    PartitionQuality quality;
    std::string split_name = args.str("split");
    if (args.given("partitions")) {
      data = dist::read_partition(args.str("partitions"), comm.size(), comm.rank());
      method = parse_partition_method(data.method);
      quality = data.quality;
      split_name = data.split;
    } else {
      data::Dataset ds = load_dataset_arg(args.str("dataset"), args, true);
      ds.graph = ds.graph.with_input_maps({}, {});
      check_labels(ds, /*pe_possible=*/false, /*pe_given=*/false);  // --distributed takes no --pe
      add_split_spec(ds, split_name);
      if (split_name.empty()) split_name = ds.default_split;
      method = args.given("partitioner") ? parse_partition_method(args.str("partitioner"))
                                         : default_partition_method();
      const auto owner = partition_nodes(ds.graph, {.parts = comm.size(), .method = method});
      quality = partition_quality(ds.graph, owner, comm.size());
      data = dist::make_dataset_part(ds, ds.split(args.str("split")), owner, comm.size(), comm.rank());
    }
    if (normalize && data.features.cols() > 0) data::normalize_features(data.features);
    cfg.in_channels = data.features.cols();
    cfg.num_classes = data.labels.num_classes;
    if (args.flag_set("edge-features")) {
      if (data.edge_attr.absent())
        raise<InvalidArgument>("dataset '", data.name, "' has no edge attributes (--edge-features)");
      cfg.edge_dim = data.edge_attr.dim(1);
    }
    cfg.seed = static_cast<uint64_t>(args.integer("seed", 0));
    tc.seed = cfg.seed;
    nn::Model model(cfg);
    const std::string name = data.name, format = data.format;
    std::optional<train::LoadedTrainingState> resumed;  // every rank reads the checkpoint; rank 0 writes it
    checkpointing(args, model,
                  ModelFileMeta{.model = cfg,
                                .normalize_features = normalize,
                                .dataset = name,
                                .format = format,
                                .split = split_name},
                  lead, resumed, tc, comm.size());
    const dist::DistributedInputs in = dist::prepare_part(model, std::move(data), cfg.edge_dim > 0,
                                                          dist::parse_halo_input(args.str("halo-input")));
    const dist::LocalPartition& part = in.part;
    const auto max_of = [](const std::vector<int64_t>& v) { return *std::max_element(v.begin(), v.end()); };
    const std::vector<int64_t> all_owned = dist::allgather_value(comm, part.num_owned());
    if (quality.node_imbalance == 0) {  // partition files written before the manifest carried it
      const int64_t nodes = std::accumulate(all_owned.begin(), all_owned.end(), int64_t{0});
      quality.node_imbalance =
          static_cast<double>(max_of(all_owned)) * comm.size() / static_cast<double>(nodes);
    }
    double ms_sum = 0;
    const std::string metric = in.labels.metric();
    Progress progress(name, show_progress && lead, metric == "accuracy" ? "acc" : metric);
    tc.on_epoch = [&](const train::EpochStats& s) {
      ms_sum += 1e3 * s.train_seconds;
      progress.epoch(s, ms_sum / static_cast<double>(s.epoch + 1));
      return true;
    };
    // What each rank sent in a training step, as the communicator counted it: the halo rows
    // (forward, and their gradients back) and the gradient sum.
    dist::Traffic step;
    const train::TrainResult r = dist::fit_distributed(model, comm, in, tc, &step);
    progress.finish();
    const std::vector<int64_t> all_halo_bytes = dist::allgather_value(comm, step.row_bytes);
    const std::vector<int64_t> all_gathered_bytes = dist::allgather_value(comm, step.gathered_bytes);
    const std::vector<int64_t> rss = dist::allgather_value(comm, static_cast<int64_t>(peak_rss_mb()));
    if (args.given("save") && lead) {
      ModelFileMeta meta{.model = cfg,
                         .normalize_features = normalize,
                         .dataset = name,
                         .format = format,
                         .split = split_name};
      train::save_parameters(args.str("save"), model.parameters(), meta.serialize());
    }
    if (!lead) return 0;
    if (args.flag_set("json")) {
      JsonObject j;
      j.field("dataset", name).field("format", format).field("model", args.str("model"));
      j.field("split", split_name);
      j.field("runs", int64_t{1}).field("threads", max_threads()).field("batch_size", int64_t{0});
      j.field("ranks", static_cast<int64_t>(comm.size())).field("partitioner", to_string(method));
      j.field("edge_cut", quality.edge_cut).field("halo_fraction", quality.halo_fraction);
      j.field("edge_imbalance", quality.edge_imbalance).field("node_imbalance", quality.node_imbalance);
      j.field("max_owned_nodes", max_of(all_owned));
      j.field("halo_input", args.str("halo-input"));
      j.field("max_halo_bytes_per_epoch", max_of(all_halo_bytes));
      j.field("max_gradient_bytes_per_epoch", max_of(all_gathered_bytes));
      j.field("metric", metric);
      j.field("test_accuracy", r.test_accuracy).field("val_accuracy", r.val_accuracy);
      j.field("epochs", r.epochs_run).field("best_epoch", r.best_epoch);
      j.field("seconds_per_epoch", r.seconds_per_epoch);
      j.field("parameters", model.num_parameters());
      j.field("library", "edgeattn").field("version", tool_version());
      j.field("input", args.given("partitions") ? args.str("partitions") : args.str("dataset"));
      j.field("peak_rss_mb", static_cast<double>(max_of(rss)));
      std::cout << j.str() << "\n";
    } else {
      std::printf(
          "%d ranks (%s partitions: halo %.3f of the nodes, %lld cut edges, edge imbalance %.3f), "
          "%lld epochs, best epoch %lld, peak RSS %lld MB on the largest rank\n",
          comm.size(), to_string(method), quality.halo_fraction, static_cast<long long>(quality.edge_cut),
          quality.edge_imbalance, static_cast<long long>(r.epochs_run), static_cast<long long>(r.best_epoch),
          static_cast<long long>(max_of(rss)));
      std::printf("test %s %.4f (val %.4f), %.2f ms per training epoch\n", metric.c_str(), r.test_accuracy,
                  r.val_accuracy, 1e3 * r.seconds_per_epoch);
    }
  } catch (const std::exception& e) {
    comm.abort(e.what());
  }
  return 0;
#else
  (void)args, (void)cfg, (void)tc, (void)show_progress, (void)normalize;
  throw UsageError("--distributed needs MPI: this edgeattn was built without it");
#endif
}

// What a model file records of --reorder: the ordering training used (auto's choice), empty for
// none.
std::string reorder_record(const ReorderChoice& reorder) {
  return reorder.order == "none" ? "" : reorder.order;
}

// What a model file records of --features: empty when not given, or when it names the dataset
// file's own attr_matrix (what eval reads too, as --mmap-features); else the spec with its file
// made absolute, so that eval and predict find it from any directory.
std::string features_record(const Args& args) {
  if (!args.given("features")) return "";
  const FeaturesSpec spec(args.str("features"));
  std::error_code ec;
  if ((spec.member == "attr_matrix" || spec.member == "attr_matrix.npy") &&
      std::filesystem::equivalent(spec.file, args.str("dataset"), ec) && !ec)
    return "";
  // weakly_canonical resolves symbolic links, as the reading did (a textual "link/.." would not).
  std::filesystem::path where = std::filesystem::weakly_canonical(spec.file, ec);
  if (ec) where = std::filesystem::absolute(spec.file);
  return where.string() + (spec.member.empty() ? "" : ":" + spec.member);
}

}  // namespace

int run_train(std::span<const std::string> argv) {
  Args args("edgeattn train",
            "Train a graph attention network for node classification (full batch, Adam, "
            "early stopping on validation loss/accuracy as in the GAT paper).");
  add_dataset_options(args);
  args.option("model", "KIND", "gat", "gat, gatv2, transformer or graph_transformer")
      .option("heads", "H", "8", "attention heads of the hidden layers")
      .option("out-heads", "H", "1", "heads of the output layer (averaged; the GAT paper uses 8 on PubMed)")
      .option("hidden", "D", "8", "hidden features per head")
      .option("layers", "L", "2", "attention layers")
      .option("dropout", "P", "0.6", "feature dropout")
      .option("attention-dropout", "P", "", "attention dropout (default: --dropout)")
      .option("lr", "X", "0.005", "Adam learning rate")
      .option("weight-decay", "X", "5e-4", "L2 weight decay (added to the gradient, as the GAT paper)")
      .flag("adamw", "decoupled weight decay (AdamW) instead of L2")
      .option("epochs", "N", "1000", "maximum epochs")
      .option("patience", "N", "100", "early-stopping patience (0: never stop early)")
      .option("eval-every", "N", "1",
              "evaluate (train/val/test metrics, early stopping, the kept weights) every N-th epoch and "
              "the last; patience still counts epochs")
      .option("seed", "S", "0", "seed of the initial weights and every dropout mask")
      .option("runs", "R", "1", "train R times with seeds seed .. seed+R-1; report mean and std")
      .option("pe", "KIND", "none", "positional encoding appended to the features: none, laplacian, rwse")
      .option("pe-dim", "K", "8", "columns of the positional encoding")
      .flag("residual", "residual connections (gat, gatv2)")
      .flag("no-normalize", "do not row-normalise the features")
      .option("reorder", "ORDER", "auto",
              "renumber the nodes before training, for locality (graph/ordering.hpp): auto (dbg where "
              "advise_ordering expects it to pay: gathered rows beyond 32 MiB, skewed degrees, a numbering "
              "without locality; else none), none, degree (hubs first), dbg (degree groups, input order "
              "within a group), rcm, amd or metis (METIS parts of ~4096 nodes as id ranges: communities "
              "together, which mini-batches keep with --source-order ascending). The same model and "
              "metrics; dropout draws differ (they are keyed by node id), and --attention-out still names "
              "the dataset's own ids")
      .flag("mmap-features",
            "read the dense features of an .npz --dataset (a stored float32 attr_matrix) in place, "
            "memory-mapped, instead of into memory: for features larger than RAM, with --batch-size. "
            "They are used as stored: give --no-normalize")
      .option("features", "FILE[:MEMBER]", "",
              "node features from FILE instead of the dataset's (which are still loaded, then dropped): a "
              "float32 [N, F] .npy, or MEMBER of an .npz (default attr_matrix), read in place like "
              "--mmap-features (give --no-normalize)")
      .flag("json", "print one JSON summary on stdout (progress stays on stderr)")
      .flag("quiet", "no progress lines")
      .flag("profile", "split the training-step time by op (table on stderr; \"op_ms_per_epoch\" in --json)")
      .option("save", "FILE", "", "write the trained model (weights + configuration) to FILE")
      .option(
          "checkpoint", "FILE", "",
          "write a training checkpoint (a model file with the optimiser and early-stopping state) to FILE "
          "every --checkpoint-every epochs and at the end")
      .option("checkpoint-every", "N", "10", "epochs between checkpoints")
      .option(
          "resume", "FILE", "",
          "continue the run a --checkpoint FILE holds (same options, which the checkpoint records and "
          "checks; --epochs counts from the start and may grow): the result is the uninterrupted run's, bit "
          "for bit")
      .option("attention-out", "FILE", "", "write every layer's per-edge attention weights (TSV) to FILE")
      .option("plot", "FILE", "", "draw the training curves (SVG) to FILE")
      .option("task", "T", "node",
              "node (node classification) or graph (graph classification on a dataset of many graphs, "
              "e.g. mutag: encoder, readout, linear classifier, k-fold cross-validation)")
      .option("readout", "R", "mean", "--task graph: sum, mean, max or attention")
      .option("folds", "K", "10", "--task graph: folds of the stratified k-fold protocol")
      .option("batch-size", "B", "0",
              "mini-batch training: B training nodes per optimiser step with sampled neighbourhoods "
              "(0: full batch)")
      .option("fanout", "K1,K2,..", "",
              "with --batch-size: neighbours sampled per node at hop 1 (the seeds), 2, ... as PyG's "
              "num_neighbors, one per layer; -1 takes all (default: 10 per layer)")
      .flag("replace", "with --batch-size: sample neighbours with replacement")
      .flag("sample-weights",
            "with --batch-size: sample each node's in-edges in proportion to the dataset's edge weights "
            "(DGL's prob, PyG's weight_attr); edges of weight 0 are never sampled")
      .option("source-order", "ORDER", "ascending",
              "with --batch-size: numbering of each sampled block's new source nodes: ascending (by "
              "dataset id, so blocks keep the dataset's locality; the faster) or appearance (first "
              "appearance, as DGL and PyG number them)")
      .flag(
          "edge-features",
          "feed the dataset's edge attributes (OGB edge-feat, TUDataset edge attributes and labels) to every "
          "attention layer (PyG's edge_dim; self-loops get the mean of their node's in-edges)");
  args.flag("distributed",
            "full-graph training over MPI, one graph part per rank: run under mpirun -np P (with --threads T "
            "so that P x T fits the cores)")
      .option("partitioner", "METHOD", "metis (when built with METIS), else degree_balanced",
              "--distributed: metis, degree_balanced or contiguous (graph/partition.hpp)")
      .option("partitions", "DIR", "",
              "--distributed: read each rank's part from DIR (written by edgeattn partition) instead of "
              "loading and partitioning --dataset on every rank")
      .option("halo-input", "WHERE", "features",
              "--distributed: where the first layer gets its halo nodes' rows: features (each part keeps "
              "them; nothing exchanged before the first layer) or projection (dropped; the first layer "
              "exchanges its projected rows: less memory, more bytes; gat without residual)");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  std::optional<ThreadLimit> limit;
  limit_threads(args, limit);
  if (args.flag_set("distributed")) {
    if (!EDGEATTN_HAVE_MPI)
      throw UsageError(
          "--distributed needs MPI: this edgeattn was built without it (install libopenmpi-dev and "
          "openmpi-bin, then reconfigure with -DEDGEATTN_MPI=ON)");
    for (const char* o : {"batch-size", "fanout", "source-order", "attention-out", "plot", "reorder"})
      if (args.given(o)) throw UsageError(std::string("--") + o + " does not apply to --distributed");
    if (args.flag_set("replace") || args.flag_set("sample-weights") || args.flag_set("profile"))
      throw UsageError("--replace, --sample-weights and --profile do not apply to --distributed");
    if (args.given("runs") && args.integer("runs", 1, 1000) != 1)
      throw UsageError("--distributed trains one run (--runs 1)");
    if (args.given("partitions") &&
        (args.given("partitioner") || args.given("dataset") || args.given("split")))
      throw UsageError(
          "--partitions DIR holds the dataset, its split and its partition: drop --dataset, --split "
          "and --partitioner");
  } else if (args.given("partitioner") || args.given("partitions") || args.given("halo-input")) {
    throw UsageError("--partitioner, --partitions and --halo-input apply to --distributed");
  }
  const int64_t runs = args.integer("runs", 1, 1000);
  if (runs > 1 && (args.given("save") || args.given("attention-out") || args.given("plot") ||
                   args.given("checkpoint") || args.given("resume")))
    throw UsageError(
        "--save, --attention-out, --plot, --checkpoint and --resume need a single run (--runs 1)");
  if (args.given("checkpoint-every") && !args.given("checkpoint"))
    throw UsageError("--checkpoint-every needs --checkpoint FILE");
  check_output_options(args, {"save", "attention-out", "plot", "checkpoint"});  // before hours of training
  check_distinct_paths(args, {"save", "attention-out", "plot", "checkpoint"},
                       {"dataset", "features", "resume"},
                       {{"checkpoint", "resume"}});  // a resumed run may go on writing its checkpoint
  const std::string task = args.str("task");
  if (task != "node" && task != "graph") throw UsageError("--task is '" + task + "': expected node or graph");
  if (task == "graph") {
    // k-fold cross-validation of full-batch models: options of one node-level run do not apply,
    // and an option given is never silently ignored.
    std::vector<std::string> node_only;
    for (const char* name : {"save", "attention-out", "plot", "checkpoint", "checkpoint-every", "resume",
                             "split", "batch-size", "fanout", "source-order"})
      if (args.given(name)) node_only.push_back("--" + std::string(name));
    for (const char* name : {"replace", "sample-weights"})
      if (args.flag_set(name)) node_only.push_back("--" + std::string(name));
    if (runs > 1) node_only.push_back("--runs");
    if (!node_only.empty()) {
      std::string list;
      for (const std::string& o : node_only) list += (list.empty() ? "" : ", ") + o;
      throw UsageError("--task graph reports k-fold cross-validation of full-batch models (--folds); " +
                       list + (node_only.size() == 1 ? " applies" : " apply") + " to --task node");
    }
  }
  if (task == "graph" && args.given("reorder"))
    throw UsageError("--reorder applies to --task node (one graph), not to a dataset of many graphs");
  if (task == "node" && (args.given("readout") || args.given("folds")))
    throw UsageError("--readout and --folds apply to --task graph (graph classification)");
  if (args.given("pe-dim") && (!args.given("pe") || args.str("pe") == "none"))
    throw UsageError(
        "--pe-dim sets the columns of a positional encoding: give --pe laplacian or --pe rwse too");
  if (args.flag_set("mmap-features") && args.given("features"))
    throw UsageError(
        "--mmap-features maps the dataset's own features and --features replaces them with a "
        "file's (mapped too): give one of them");

  const bool normalize = !args.flag_set("no-normalize");
  // The dataset decides in_channels and num_classes; load it once with a probe config.
  nn::ModelConfig cfg;
  cfg.kind = nn::parse_model_kind(args.str("model"));
  cfg.heads = args.integer("heads", 1, 1024);
  cfg.out_heads = args.integer("out-heads", 1, 1024);
  cfg.hidden = args.integer("hidden", 1, 1 << 20);
  cfg.layers = args.integer("layers", 1, 64);
  cfg.dropout = static_cast<float>(args.real("dropout", 0.0, 0.999));
  cfg.attention_dropout = args.given("attention-dropout")
                              ? static_cast<float>(args.real("attention-dropout", 0.0, 0.999))
                              : cfg.dropout;
  cfg.residual = args.flag_set("residual");
  cfg.pe = nn::parse_positional_encoding(args.str("pe"));
  cfg.pe_dim = cfg.pe == nn::PositionalEncodingKind::none ? 0 : args.integer("pe-dim", 1, 1024);
  if (cfg.kind == nn::ModelKind::transformer) cfg.add_self_loops = false;  // PyG TransformerConv adds none
  if (cfg.residual && cfg.kind != nn::ModelKind::gat && cfg.kind != nn::ModelKind::gatv2)
    throw UsageError(
        "--residual applies to --model gat and gatv2 (graph_transformer blocks always have one)");

  const bool map_features = args.flag_set("mmap-features");
  if (map_features || args.given("features")) {
    const char* which = map_features ? "--mmap-features" : "--features";
    if (normalize)
      throw UsageError(std::string(which) +
                       " reads the features in place and uses them as stored: give --no-normalize too "
                       "(row-normalising would copy every row into memory)");
    if (args.flag_set("distributed"))
      throw UsageError(std::string(which) + " applies to one-process training, not --distributed");
    if (task == "graph") throw UsageError(std::string(which) + " applies to --task node");
    if (cfg.pe != nn::PositionalEncodingKind::none)
      throw UsageError(std::string(which) +
                       " and --pe: appending the encoding would copy the features into memory");
  }
  if (args.flag_set("distributed")) {
    return train_distributed(args, cfg, train_config_from(args), !args.flag_set("quiet"), normalize);
  }
  const auto load_start = std::chrono::steady_clock::now();
  data::Dataset ds = load_dataset_arg(args.str("dataset"), args, true, map_features);
  if (args.given("features")) ds.features = mapped_features_arg(args.str("features"), ds.num_nodes());
  // The file to a Dataset (--json: load_seconds), before the renumbering and normalising below.
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  // Training reads no per-edge data in the file's order: the maps from file entries to CSR edges
  // (two int64s per edge) would only take memory.
  ds.graph = ds.graph.with_input_maps({}, {});
  if (task == "node") {
    check_labels(ds, /*pe_possible=*/true, cfg.pe != nn::PositionalEncodingKind::none);
    // A random split is drawn on the file's own node ids, before any renumbering (which carries
    // it along), so that `edgeattn eval --split random:...` draws the very same nodes.
    add_split_spec(ds, args.str("split"));
  }
  const auto reorder_start = std::chrono::steady_clock::now();
  const ReorderChoice reorder = resolve_reorder(args.str("reorder"), ds, cfg, task);
  const std::vector<int64_t> old_of_new = reorder_for_locality(reorder.order, ds);
  const double reorder_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - reorder_start).count();
  if (!reorder.reason.empty() && reorder.order != "none" && !args.flag_set("quiet"))
    std::cerr << "edgeattn train: --reorder auto: renumbering the nodes by degree groups (dbg): "
              << reorder.reason << "; --reorder none keeps the file's numbering\n";
  if (normalize && ds.features.cols() > 0) data::normalize_features(ds.features);
  cfg.in_channels = ds.features.cols();
  cfg.num_classes = ds.num_classes();
  if (args.flag_set("edge-features")) {
    if (task == "graph") throw UsageError("--edge-features applies to --task node");
    cfg.edge_dim = edge_attr_width(ds);
  }

  train::TrainConfig tc = train_config_from(args);
  const bool show_progress = !args.flag_set("quiet");
  tc.profile = args.flag_set("profile");
  if (task == "graph") return train_graph_classifier(args, ds, cfg, tc, show_progress);

  const data::Split& split = ds.split(args.str("split"));
  const int64_t batch_size = args.integer("batch-size", 0, int64_t{1} << 40);
  NeighborSamplerOptions sampling{.fanouts = {}, .replace = args.flag_set("replace"), .seed = 0};
  if (batch_size == 0 && (args.given("fanout") || args.flag_set("replace") ||
                          args.flag_set("sample-weights") || args.given("source-order")))
    throw UsageError(
        "--fanout, --replace, --sample-weights and --source-order apply to mini-batch training: give "
        "--batch-size too");
  // Dataset::edge_weight is empty when every weight is 1: sampling by weight is then uniform.
  const bool weighted_sampling = args.flag_set("sample-weights") && !ds.edge_weight.empty();
  if (args.flag_set("sample-weights") && !weighted_sampling && !args.flag_set("quiet"))
    std::cerr << "edgeattn train: note: --sample-weights: dataset '" << ds.name
              << "' has no edge weights (every weight is 1), so neighbours are sampled uniformly\n";
  if (weighted_sampling) sampling.weights = ds.edge_weight;
  try {
    sampling.order = parse_source_order(args.str("source-order"));
  } catch (const InvalidArgument&) {
    throw UsageError("--source-order is '" + args.str("source-order") +
                     "': expected ascending or appearance");
  }
  if (batch_size > 0) {
    if (cfg.kind == nn::ModelKind::graph_transformer)
      throw UsageError("--batch-size needs a conv model (gat, gatv2, transformer), not graph_transformer");
    sampling.fanouts = args.given("fanout") ? parse_fanouts(args.str("fanout"))
                                            : std::vector<int64_t>(static_cast<size_t>(cfg.layers), 10);
    if (const auto given = static_cast<int64_t>(sampling.fanouts.size()); given != cfg.layers) {
      std::string example;  // the user's first fanout, once per layer
      for (int64_t l = 0; l < cfg.layers; ++l)
        example += (l ? "," : "") + std::to_string(sampling.fanouts[0]);
      throw UsageError("--fanout gives " + std::to_string(given) + (given == 1 ? " value" : " values") +
                       " for a model of " + std::to_string(cfg.layers) + " layers (--layers " +
                       std::to_string(cfg.layers) + (args.given("layers") ? "" : ", the default") +
                       "): give one per layer, e.g. --fanout " + example);
    }
  }

  std::vector<double> test_acc, val_acc, sec_per_epoch, epochs;
  std::vector<int64_t> epochs_run, best_epochs;  // per run, for --json with --runs N
  train::TrainResult last;
  std::optional<nn::Model> last_model;
  Graph last_graph;
  data::Features last_features;
  Tensor last_edge_attr;
  for (int64_t run = 0; run < runs; ++run) {
    cfg.seed = static_cast<uint64_t>(args.integer("seed", 0)) + static_cast<uint64_t>(run);
    nn::Model model(cfg);
    std::optional<train::LoadedTrainingState> resumed;
    checkpointing(args, model,
                  ModelFileMeta{.model = cfg,
                                .normalize_features = normalize,
                                .dataset = ds.name,
                                .format = ds.format,
                                .split = args.str("split"),
                                .features = features_record(args),
                                .reorder = reorder_record(reorder)},
                  true, resumed, tc);
    nn::PreparedGraph prepared = prepare_graph_of(model, ds);
    const Graph& g = prepared.graph;
    data::Features x = model.prepare_features(ds.graph, ds.features);  // shares dense features
    // The last full-batch run needs only the prepared graph; mini-batches sample the raw one.
    if (run + 1 == runs && batch_size == 0) ds.graph = Graph();
    tc.seed = cfg.seed;
    double ms_sum = 0;
    Progress progress(ds.name, show_progress, ds.labels.metric() == "accuracy" ? "acc" : ds.labels.metric());
    tc.on_epoch = [&](const train::EpochStats& s) {
      ms_sum += 1e3 * s.train_seconds;
      progress.epoch(s, ms_sum / static_cast<double>(s.epoch + 1));
      return true;
    };
    // Evaluation (tape.training = false) runs layer by layer (nn::Model::inference): the same
    // logits, with memory for one layer's tensors instead of the whole stack's.
    auto forward = [&](autograd::Tape& tape, uint64_t seed) {
      if (!tape.training) return tape.constant(model.inference(g, x, prepared.edge_attr));
      return forward_on(tape, model, g, x, prepared.edge_attr, seed);
    };
    if (batch_size > 0) {
      auto batch = [&](autograd::Tape& tape, std::span<const int64_t> seeds, uint64_t seed) {
        NeighborSamplerOptions o = sampling;
        o.seed = seed;
        return model.forward(tape, sample_neighbors(ds.graph, seeds, o), x,
                             cfg.edge_dim > 0 ? ds.edge_attr.view() : ConstView{}, seed);
      };
      last = train::fit_minibatch(batch, forward, model.parameters(), ds.labels, split, batch_size, tc);
    } else {
      last = train::fit(forward, model.parameters(), ds.labels, split, tc);
    }
    progress.finish();
    test_acc.push_back(last.test_accuracy);
    val_acc.push_back(last.val_accuracy);
    sec_per_epoch.push_back(last.seconds_per_epoch);
    epochs.push_back(static_cast<double>(last.epochs_run));
    epochs_run.push_back(last.epochs_run);
    best_epochs.push_back(last.best_epoch);
    if (!args.flag_set("json"))
      std::printf(
          "run %lld (seed %llu): %lld epochs, best epoch %lld, val acc %.4f, test acc %.4f, %.2f ms/epoch\n",
          static_cast<long long>(run), static_cast<unsigned long long>(cfg.seed),
          static_cast<long long>(last.epochs_run), static_cast<long long>(last.best_epoch), last.val_accuracy,
          last.test_accuracy, 1e3 * last.seconds_per_epoch);
    if (run + 1 == runs) {
      last_model.emplace(std::move(model));
      last_graph = g;
      last_features = std::move(x);
      last_edge_attr = std::move(prepared.edge_attr);
    }
  }
  if (args.given("save")) {
    const ModelFileMeta meta{.model = cfg,
                             .normalize_features = normalize,
                             .dataset = ds.name,
                             .format = ds.format,
                             .split = args.str("split"),
                             .features = features_record(args),
                             .reorder = reorder_record(reorder)};
    train::save_parameters(args.str("save"), last_model->parameters(), meta.serialize());
  }
  if (args.given("attention-out")) {
    autograd::Tape tape;
    tape.training = false;
    std::vector<Tensor> attention;
    forward_on(tape, *last_model, last_graph, last_features, last_edge_attr, 0, &attention);
    write_file_atomic(args.str("attention-out"), attention_tsv(last_graph, attention, old_of_new));
  }
  if (args.given("plot"))
    write_file_atomic(args.str("plot"), training_curves_svg(last.history, last.best_epoch,
                                                            ds.name + ": " + args.str("model") + ", seed " +
                                                                std::to_string(cfg.seed)));

  if (tc.profile) {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [op, t] : last.op_times) {
      rows.emplace_back(t.forward_seconds + t.backward_seconds, op);
      total += t.forward_seconds + t.backward_seconds;
    }
    std::sort(rows.rbegin(), rows.rend());
    const double epochs_run = static_cast<double>(last.epochs_run);
    std::fprintf(stderr, "training-step time by op (last run, per epoch):\n  %-20s %9s %9s %9s %6s\n", "op",
                 "fwd ms", "bwd ms", "total ms", "share");
    for (const auto& [sec, op] : rows) {
      const autograd::OpTime& t = last.op_times.at(op);
      std::fprintf(stderr, "  %-20s %9.3f %9.3f %9.3f %5.1f%%\n", op.c_str(),
                   1e3 * t.forward_seconds / epochs_run, 1e3 * t.backward_seconds / epochs_run,
                   1e3 * sec / epochs_run, 100.0 * sec / total);
    }
    const TensorCacheStats cache = tensor_cache_stats();
    std::fprintf(stderr,
                 "tensor storage (whole run): %lld allocations from the cache, %lld from the system; "
                 "peak %.1f MiB in use\n",
                 static_cast<long long>(cache.hits), static_cast<long long>(cache.misses),
                 static_cast<double>(cache.peak_in_use_bytes) / (1 << 20));
  }
  if (args.flag_set("json")) {
    JsonObject j;
    j.field("dataset", ds.name).field("format", ds.format).field("model", args.str("model"));
    j.field("split", args.str("split").empty() ? ds.default_split : args.str("split"));
    j.field("runs", runs).field("threads", max_threads());
    j.field("batch_size", batch_size);  // 0: full batch
    if (batch_size > 0) {
      std::string fanout;
      for (const int64_t k : sampling.fanouts)
        fanout.append(fanout.empty() ? "" : ",").append(std::to_string(k));
      j.field("fanout", fanout)
          .field("replace", sampling.replace)
          .field("source_order", to_string(sampling.order))
          .field("sample_weights", weighted_sampling ? "edge_weight" : "uniform");
    }
    j.field("eval_every", tc.eval_every);
    j.field("metric", ds.labels.metric());  // what the *_accuracy fields hold
    j.field("test_accuracy", mean(test_acc)).field("test_accuracy_std", stdev(test_acc));
    j.field("val_accuracy", mean(val_acc));
    // epochs: the mean over runs; best_epoch: the last run's (the model --save and --plot keep).
    // Each run's own are in the arrays below.
    j.field("epochs", static_cast<int64_t>(std::llround(mean(epochs))));
    j.field("best_epoch", last.best_epoch);
    j.field("seconds_per_epoch", mean(sec_per_epoch));
    // The last run's training step, epoch by epoch: the first one also touches the step's memory for
    // the first time (the tensor cache reuses it after), which benchmarks may want to read apart.
    std::vector<double> epoch_seconds;
    for (const train::EpochStats& s : last.history) epoch_seconds.push_back(s.train_seconds);
    j.raw_field("epoch_seconds", json_real_array(epoch_seconds));
    j.field("load_seconds", load_seconds);
    j.field("reorder", reorder.order);
    if (!reorder.reason.empty()) j.field("reorder_reason", reorder.reason);
    j.field("reorder_seconds", reorder_seconds);
    j.field("parameters", last_model->num_parameters());
    j.field("library", "edgeattn").field("version", tool_version()).field("input", args.str("dataset"));
    if (tc.profile) {
      JsonObject ops;
      for (const auto& [op, t] : last.op_times)
        ops.field(op, 1e3 * (t.forward_seconds + t.backward_seconds) / static_cast<double>(last.epochs_run));
      j.raw_field("op_ms_per_epoch", ops.str());
    }
    if (runs > 1) {
      j.raw_field("test_accuracies", json_accuracy_array(test_acc));
      j.raw_field("val_accuracies", json_accuracy_array(val_acc));
      j.raw_field("epochs_per_run", json_int_array(epochs_run));
      j.raw_field("best_epochs", json_int_array(best_epochs));
    }
    j.field("peak_rss_mb", peak_rss_mb());
    std::cout << j.str() << "\n";
  } else {
    std::printf("test %s %.4f", ds.labels.metric().c_str(), mean(test_acc));
    if (runs > 1) std::printf(" ± %.4f over %lld runs", stdev(test_acc), static_cast<long long>(runs));
    std::printf(" (val %.4f), %.2f ms per training epoch\n", mean(val_acc), 1e3 * mean(sec_per_epoch));
  }
  return 0;
}

namespace {

struct Loaded {
  ModelFileMeta meta;
  std::optional<nn::Model> model;
  Prepared data;
};

Loaded load_model_and_data(const Args& args) {
  Loaded l;
  const std::string file = args.str("model-file");
  if (file.empty()) throw UsageError("--model-file is required");
  const train::Checkpoint checkpoint = train::load_checkpoint(file);
  l.meta = ModelFileMeta::parse(checkpoint.metadata, file);
  // --features, or else the file the model was trained on (train --features records it).
  const std::string features = args.given("features") ? args.str("features") : l.meta.features;
  if (!args.given("features") && !features.empty()) {
    if (!std::filesystem::exists(FeaturesSpec(features).file))
      throw UsageError(file + " was trained on the features of '" + features +
                       "' (train --features), which does not exist here: give them with --features FILE");
  }
  if (!features.empty() && l.meta.normalize_features)
    throw UsageError("--features: the model in " + file +
                     " was trained on row-normalised features, and --features reads a file's as stored "
                     "(normalise the file beforehand, or evaluate on the dataset's own features)");
  l.model.emplace(l.meta.model);
  train::load_parameters(checkpoint, l.model->parameters());
  l.data = prepare(args, *l.model, l.meta.normalize_features, file, l.meta.dataset, l.meta.format, features,
                   l.meta.reorder);
  return l;
}

autograd::Var eval_logits(autograd::Tape& tape, Loaded& l) {
  tape.training = false;
  return tape.constant(l.model->inference(l.data.graph, l.data.features, l.data.edge_attr));  // layer-wise
}

}  // namespace

int run_eval(std::span<const std::string> argv) {
  Args args("edgeattn eval",
            "Evaluate a saved model on a dataset's split: loss and accuracy of train, val and test.");
  args.option("model-file", "FILE", "", "model written by `edgeattn train --save`");
  add_dataset_options(args);
  args.option("features", "FILE[:MEMBER]", "",
              "node features read in place, a float32 .npy or an .npz member (default: the file the model "
              "was trained on with train --features, else the dataset's own)");
  args.flag("json", "print one JSON object");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  std::optional<ThreadLimit> limit;
  limit_threads(args, limit);
  Loaded l = load_model_and_data(args);
  const std::string split_name = args.str("split").empty() ? l.meta.split : args.str("split");
  add_split_spec(l.data.ds, split_name);
  const data::Split& split = l.data.ds.split(split_name);
  autograd::Tape tape;
  const autograd::Var logits = eval_logits(tape, l);
  const auto tr = train::evaluate(tape, logits, l.data.ds.labels, split.train);
  const auto va = train::evaluate(tape, logits, l.data.ds.labels, split.val);
  const auto te = train::evaluate(tape, logits, l.data.ds.labels, split.test);
  if (args.flag_set("json")) {
    JsonObject j;
    j.field("dataset", l.data.ds.name)
        .field("train_accuracy", tr.accuracy)
        .field("val_accuracy", va.accuracy);
    j.field("test_accuracy", te.accuracy)
        .field("train_loss", tr.loss)
        .field("val_loss", va.loss)
        .field("test_loss", te.loss);
    std::cout << j.str() << "\n";
  } else {
    std::printf("%s: train acc %.4f (loss %.4f), val acc %.4f (loss %.4f), test acc %.4f (loss %.4f)\n",
                l.data.ds.name.c_str(), tr.accuracy, tr.loss, va.accuracy, va.loss, te.accuracy, te.loss);
  }
  return 0;
}

int run_predict(std::span<const std::string> argv) {
  Args args("edgeattn predict",
            "Predict every node's class with a saved model; one line per node: "
            "node, name, predicted class, class name (multi-label datasets: every class whose logit is "
            "positive, comma-separated, '-' for none).");
  args.option("model-file", "FILE", "", "model written by `edgeattn train --save`");
  add_dataset_options(args);
  args.option("features", "FILE[:MEMBER]", "",
              "node features read in place, a float32 .npy or an .npz member (default: the file the model "
              "was trained on with train --features, else the dataset's own)");
  args.option("out", "FILE", "", "write the predictions to FILE (default: stdout)");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  check_output_options(args, {"out"});
  check_distinct_paths(args, {"out"}, {"model-file", "dataset", "features"});
  std::optional<ThreadLimit> limit;
  limit_threads(args, limit);
  Loaded l = load_model_and_data(args);
  autograd::Tape tape;
  const autograd::Var logits = eval_logits(tape, l);
  const data::Dataset& ds = l.data.ds;
  const auto class_name = [&](int64_t c) {
    return static_cast<size_t>(c) < ds.labels.class_names.size()
               ? ds.labels.class_names[static_cast<size_t>(c)]
               : std::to_string(c);
  };
  const auto node_name = [&](size_t i) {
    return i < ds.node_names.size() ? ds.node_names[i] : std::to_string(i);
  };
  std::string out;
  if (ds.labels.multi_label()) {
    // Multi-label: every class whose logit is > 0 (probability > 0.5, micro-F1's rule), as
    // comma-separated ids and names ("-" for none).
    const Tensor& z = tape.value(logits);
    const int64_t c = z.dim(1);
    out = "# node\tname\tpredicted_classes\tclass_names\n";
    for (int64_t i = 0; i < z.dim(0); ++i) {
      std::string ids, names;
      for (int64_t k = 0; k < c; ++k)
        if (z.data()[i * c + k] > 0.f) {
          ids += (ids.empty() ? "" : ",") + std::to_string(k);
          names += (names.empty() ? "" : ",") + class_name(k);
        }
      out += std::to_string(i) + "\t" + node_name(static_cast<size_t>(i)) + "\t" + (ids.empty() ? "-" : ids) +
             "\t" + (names.empty() ? "-" : names) + "\n";
    }
  } else {
    const std::vector<int32_t> predicted = train::predict_classes(tape.value(logits));
    out = "# node\tname\tpredicted\tclass_name\n";
    for (size_t i = 0; i < predicted.size(); ++i)
      out += std::to_string(i) + "\t" + node_name(i) + "\t" + std::to_string(predicted[i]) + "\t" +
             class_name(predicted[i]) + "\n";
  }
  if (args.given("out"))
    write_file_atomic(args.str("out"), out);
  else
    std::cout << out;
  return 0;
}

}  // namespace edgeattn::cli
