#include "edgeattn/nn/model.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <system_error>
#include <type_traits>

#include "core/physical_memory.hpp"
#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/data/mapped_features.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/gatv2_conv.hpp"
#include "edgeattn/nn/graph_transformer.hpp"
#include "edgeattn/nn/init.hpp"
#include "edgeattn/nn/positional_encoding.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
#include "edgeattn/nn/transformer_conv.hpp"

namespace edgeattn::nn {

using autograd::Var;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

const char* to_string(ModelKind kind) {
  switch (kind) {
    case ModelKind::gat:
      return "gat";
    case ModelKind::gatv2:
      return "gatv2";
    case ModelKind::transformer:
      return "transformer";
    case ModelKind::graph_transformer:
      return "graph_transformer";
  }
  return "?";
}

const char* to_string(PositionalEncodingKind kind) {
  switch (kind) {
    case PositionalEncodingKind::none:
      return "none";
    case PositionalEncodingKind::laplacian:
      return "laplacian";
    case PositionalEncodingKind::rwse:
      return "rwse";
  }
  return "?";
}

ModelKind parse_model_kind(const std::string& name) {
  for (ModelKind k : {ModelKind::gat, ModelKind::gatv2, ModelKind::transformer, ModelKind::graph_transformer})
    if (name == to_string(k)) return k;
  raise<InvalidArgument>("model kind '", name,
                         "' is unknown; expected gat, gatv2, transformer or graph_transformer");
}

PositionalEncodingKind parse_positional_encoding(const std::string& name) {
  for (auto k :
       {PositionalEncodingKind::none, PositionalEncodingKind::laplacian, PositionalEncodingKind::rwse})
    if (name == to_string(k)) return k;
  raise<InvalidArgument>("positional encoding '", name, "' is unknown; expected none, laplacian or rwse");
}

// ---------------------------------------------------------------------------------------------
// ModelConfig <-> JSON
// ---------------------------------------------------------------------------------------------

namespace {

std::string format_float(float v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

// One "key": value of a flat JSON object; numbers are kept as their text for exact parsing.
struct Field {
  enum Type { string, number, boolean } type;
  std::string text;
  bool flag = false;
};

std::map<std::string, Field> parse_flat_object(const std::string& s) {
  size_t i = 0;
  auto fail = [&](const std::string& what) -> void {
    raise<InvalidArgument>("ModelConfig::from_json: at offset ", i, ": expected ", what);
  };
  auto skip = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  auto string_token = [&]() {
    if (i >= s.size() || s[i] != '"') fail("'\"'");
    const size_t start = ++i;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' || static_cast<unsigned char>(s[i]) < 0x20) fail("a plain string (no escapes)");
      ++i;
    }
    if (i >= s.size()) fail("the closing '\"'");
    return s.substr(start, i++ - start);
  };
  std::map<std::string, Field> out;
  skip();
  if (i >= s.size() || s[i] != '{') fail("'{'");
  ++i;
  skip();
  if (i < s.size() && s[i] == '}') {
    ++i;
  } else {
    for (;;) {
      skip();
      const std::string key = string_token();
      skip();
      if (i >= s.size() || s[i] != ':') fail("':' after \"" + key + "\"");
      ++i;
      skip();
      Field f{Field::number, {}, false};
      if (i < s.size() && s[i] == '"') {
        f = {Field::string, string_token(), false};
      } else if (s.compare(i, 4, "true") == 0) {
        f = {Field::boolean, "true", true};
        i += 4;
      } else if (s.compare(i, 5, "false") == 0) {
        f = {Field::boolean, "false", false};
        i += 5;
      } else {
        const size_t start = i;
        while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || std::strchr("+-.eE", s[i])))
          ++i;
        if (i == start) fail("a value for \"" + key + "\"");
        f.text = s.substr(start, i - start);
      }
      if (!out.emplace(key, f).second)
        raise<InvalidArgument>("ModelConfig::from_json: key \"", key, "\" appears twice");
      skip();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == '}') {
        ++i;
        break;
      }
      fail("',' or '}'");
    }
  }
  skip();
  if (i != s.size()) fail("the end of the text");
  return out;
}

class FieldReader {
 public:
  explicit FieldReader(std::map<std::string, Field> fields) : fields_(std::move(fields)) {}

  const Field& take(const char* key, Field::Type type, const char* type_name) {
    const auto it = fields_.find(key);
    if (it == fields_.end()) raise<InvalidArgument>("ModelConfig::from_json: missing key \"", key, "\"");
    if (it->second.type != type)
      raise<InvalidArgument>("ModelConfig::from_json: \"", key, "\" is '", it->second.text, "', expected ",
                             type_name);
    used_.push_back(key);
    return it->second;
  }
  bool has(const char* key) const { return fields_.contains(key); }
  std::string string(const char* key) { return take(key, Field::string, "a string").text; }
  bool boolean(const char* key) { return take(key, Field::boolean, "true or false").flag; }
  template <class T>
  T number(const char* key) {
    const std::string& text = take(key, Field::number, "a number").text;
    T v{};
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size())
      raise<InvalidArgument>("ModelConfig::from_json: \"", key, "\" is '", text, "', not a valid ",
                             std::is_floating_point_v<T> ? "float" : "integer in range");
    return v;
  }
  void expect_no_other_keys() const {
    for (const auto& [key, f] : fields_)
      if (std::find(used_.begin(), used_.end(), key) == used_.end())
        raise<InvalidArgument>("ModelConfig::from_json: unknown key \"", key, "\"");
  }

 private:
  std::map<std::string, Field> fields_;
  std::vector<std::string> used_;
};

}  // namespace

std::string ModelConfig::to_json() const {
  std::ostringstream os;
  auto b = [](bool v) { return v ? "true" : "false"; };
  os << "{\"kind\":\"" << nn::to_string(kind) << "\",\"in_channels\":" << in_channels
     << ",\"hidden\":" << hidden << ",\"heads\":" << heads << ",\"out_heads\":" << out_heads
     << ",\"num_classes\":" << num_classes << ",\"layers\":" << layers
     << ",\"dropout\":" << format_float(dropout)
     << ",\"attention_dropout\":" << format_float(attention_dropout)
     << ",\"negative_slope\":" << format_float(negative_slope) << ",\"residual\":" << b(residual)
     << ",\"add_self_loops\":" << b(add_self_loops) << ",\"share_weights\":" << b(share_weights)
     << ",\"beta\":" << b(beta) << ",\"pre_norm\":" << b(pre_norm) << ",\"ffn_hidden\":" << ffn_hidden
     << ",\"edge_dim\":" << edge_dim << ",\"pe\":\"" << nn::to_string(pe) << "\",\"pe_dim\":" << pe_dim
     << ",\"seed\":" << seed << "}";
  return os.str();
}

ModelConfig ModelConfig::from_json(const std::string& json) {
  FieldReader r(parse_flat_object(json));
  ModelConfig c;
  c.kind = parse_model_kind(r.string("kind"));
  c.in_channels = r.number<int64_t>("in_channels");
  c.hidden = r.number<int64_t>("hidden");
  c.heads = r.number<int64_t>("heads");
  c.out_heads = r.number<int64_t>("out_heads");
  c.num_classes = r.number<int64_t>("num_classes");
  c.layers = r.number<int64_t>("layers");
  c.dropout = r.number<float>("dropout");
  c.attention_dropout = r.number<float>("attention_dropout");
  c.negative_slope = r.number<float>("negative_slope");
  c.residual = r.boolean("residual");
  c.add_self_loops = r.boolean("add_self_loops");
  c.share_weights = r.boolean("share_weights");
  c.beta = r.boolean("beta");
  c.pre_norm = r.boolean("pre_norm");
  c.ffn_hidden = r.number<int64_t>("ffn_hidden");
  if (r.has("edge_dim")) c.edge_dim = r.number<int64_t>("edge_dim");  // absent in older model files
  c.pe = parse_positional_encoding(r.string("pe"));
  c.pe_dim = r.number<int64_t>("pe_dim");
  c.seed = r.number<uint64_t>("seed");
  r.expect_no_other_keys();
  c.validate();
  return c;
}

void ModelConfig::validate() const {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) raise<InvalidArgument>("ModelConfig: ", name, " is ", v, ", expected >= 1");
  };
  // A dataset without node features trains on its positional encoding alone (in_channels 0).
  if (in_channels < 0 || (in_channels == 0 && pe == PositionalEncodingKind::none))
    raise<InvalidArgument>("ModelConfig: in_channels is ", in_channels,
                           ", expected >= 1, or 0 with a positional encoding (pe) giving the nodes "
                           "their only features");
  positive("hidden", hidden);
  positive("heads", heads);
  positive("out_heads", out_heads);
  positive("num_classes", num_classes);
  positive("layers", layers);
  for (auto [name, p] : {std::pair{"dropout", dropout}, std::pair{"attention_dropout", attention_dropout}})
    if (!(p >= 0.f && p < 1.f))
      raise<InvalidArgument>("ModelConfig: ", name, " is ", p, ", expected in [0, 1)");
  if (!(negative_slope >= 0.f))
    raise<InvalidArgument>("ModelConfig: negative_slope is ", negative_slope, ", expected >= 0");
  if (ffn_hidden < 0) raise<InvalidArgument>("ModelConfig: ffn_hidden is ", ffn_hidden, ", expected >= 0");
  if (edge_dim < 0) raise<InvalidArgument>("ModelConfig: edge_dim is ", edge_dim, ", expected >= 0");
  if (edge_dim > 0 && kind == ModelKind::graph_transformer)
    raise<InvalidArgument>("ModelConfig: edge_dim is ", edge_dim,
                           ", but the graph_transformer kind takes no edge attributes (gat, gatv2 and "
                           "transformer do)");
  if ((pe == PositionalEncodingKind::none) != (pe_dim == 0) || pe_dim < 0)
    raise<InvalidArgument>("ModelConfig: pe is ", nn::to_string(pe), " with pe_dim ", pe_dim,
                           "; expected pe_dim 0 exactly when pe is none");
}

void ModelConfig::check_kind_options() const {
  const auto unused = [&](const char* option, const char* used_by) {
    raise<InvalidArgument>("ModelConfig: ", option, " is set, but kind '", to_string(kind),
                           "' does not use it (", used_by, " does); leave it unset");
  };
  if (residual && kind != ModelKind::gat && kind != ModelKind::gatv2)
    unused("residual", "gat and gatv2 take it; graph_transformer blocks always have one");
  if (share_weights && kind != ModelKind::gatv2) unused("share_weights", "gatv2");
  if (beta && kind != ModelKind::transformer) unused("beta", "transformer");
  if (pre_norm && kind != ModelKind::graph_transformer) unused("pre_norm", "graph_transformer");
  if (ffn_hidden > 0 && kind != ModelKind::graph_transformer) unused("ffn_hidden", "graph_transformer");
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

namespace {
// Dropout sites (per-site constants mixed with the step seed).
constexpr uint64_t kInputDropout = 1;
constexpr uint64_t kAttentionSite = 100;  // + layer index
constexpr uint64_t kHiddenDropout = 200;  // + layer index
constexpr uint64_t kBlockSite = 300;      // + block index
}  // namespace

struct Model::Impl {
  std::vector<std::unique_ptr<GATConv>> gat;
  std::vector<std::unique_ptr<GATv2Conv>> gatv2;
  std::vector<std::unique_ptr<TransformerConv>> transformer;
  std::unique_ptr<Linear> lin_in, lin_out;
  std::vector<std::unique_ptr<GraphTransformerBlock>> blocks;
};

namespace {

// An upper estimate of a configuration's weights (in double: the products may overflow int64):
// every layer's projections (four for the transformer kinds: query, key, value, skip; two for
// GATv2 and a residual), its feed-forward block, and the output layer.
double approx_parameters(const ModelConfig& c) {
  const double in = static_cast<double>(c.in_channels) + static_cast<double>(c.pe_dim);
  const double wide = static_cast<double>(c.hidden) * static_cast<double>(c.heads);
  const double per = c.kind == ModelKind::gat ? (c.residual ? 2 : 1) : c.kind == ModelKind::gatv2 ? 3 : 4;
  const double classes = static_cast<double>(c.num_classes), layers = static_cast<double>(c.layers);
  if (c.kind == ModelKind::graph_transformer) {
    const double ffn = c.ffn_hidden > 0 ? static_cast<double>(c.ffn_hidden) : 2 * wide;
    return in * wide + layers * (4 * wide * wide + 2 * wide * ffn) + wide * classes;
  }
  const double out_wide = static_cast<double>(c.out_heads) * classes;
  if (c.layers == 1) return per * in * out_wide;
  return per * (in * wide + (layers - 2) * wide * wide + wide * out_wide);
}

// The weights, their gradients and Adam's two moments must fit in memory: --hidden 1048576
// --heads 1024 asked for 6 TB and ended in a bare std::bad_alloc.
void check_model_fits(const ModelConfig& c) {
  const double params = approx_parameters(c);
  const double bytes = 16 * params;  // 4 floats a weight
  const auto memory = static_cast<double>(edgeattn::detail::physical_memory_bytes());
  if (bytes <= 0.75 * memory) return;
  raise<InvalidArgument>("ModelConfig: ", to_string(c.kind), " with in_channels ", c.in_channels + c.pe_dim,
                         ", heads ", c.heads, " x hidden ", c.hidden, ", ", c.layers, " layers and ",
                         c.num_classes, " classes has about ", params, " weights: ", bytes / 1e9,
                         " GB with their gradients and Adam's moments, more than 3/4 of this machine's ",
                         memory / 1e9, " GB");
}

}  // namespace

Model::Model(const ModelConfig& config) : config_(config), impl_(std::make_unique<Impl>()) {
  config_.validate();
  check_model_fits(config_);
  const ModelConfig& c = config_;
  const int64_t in = c.in_channels + c.pe_dim, wide = c.hidden * c.heads;
  if (c.kind == ModelKind::graph_transformer) {
    impl_->lin_in = std::make_unique<Linear>("lin_in", in, wide, true, LinearInit::torch_default, c.seed);
    for (int64_t l = 0; l < c.layers; ++l)
      impl_->blocks.push_back(std::make_unique<GraphTransformerBlock>(
          GraphTransformerOptions{.channels = wide,
                                  .heads = c.heads,
                                  .ffn_hidden = c.ffn_hidden,
                                  .dropout = c.dropout,
                                  .attention_dropout = c.attention_dropout,
                                  .pre_norm = c.pre_norm},
          "blocks." + std::to_string(l), c.seed));
    impl_->lin_out =
        std::make_unique<Linear>("lin_out", wide, c.num_classes, true, LinearInit::torch_default, c.seed);
    return;
  }
  for (int64_t l = 0; l < c.layers; ++l) {
    const bool last = l + 1 == c.layers;
    const int64_t layer_in = l == 0 ? in : wide;
    const int64_t out = last ? c.num_classes : c.hidden;
    const int64_t heads = last ? c.out_heads : c.heads;
    const std::string name = "conv" + std::to_string(l + 1);
    switch (c.kind) {
      case ModelKind::gat:
        impl_->gat.push_back(std::make_unique<GATConv>(GATConvOptions{.in_channels = layer_in,
                                                                      .out_channels = out,
                                                                      .heads = heads,
                                                                      .concat = !last,
                                                                      .negative_slope = c.negative_slope,
                                                                      .dropout = c.attention_dropout,
                                                                      .add_self_loops = c.add_self_loops,
                                                                      .edge_dim = c.edge_dim,
                                                                      .residual = c.residual},
                                                       name, c.seed));
        break;
      case ModelKind::gatv2:
        impl_->gatv2.push_back(
            std::make_unique<GATv2Conv>(GATv2ConvOptions{.in_channels = layer_in,
                                                         .out_channels = out,
                                                         .heads = heads,
                                                         .concat = !last,
                                                         .negative_slope = c.negative_slope,
                                                         .dropout = c.attention_dropout,
                                                         .add_self_loops = c.add_self_loops,
                                                         .edge_dim = c.edge_dim,
                                                         .share_weights = c.share_weights,
                                                         .residual = c.residual},
                                        name, c.seed));
        break;
      case ModelKind::transformer:
        impl_->transformer.push_back(
            std::make_unique<TransformerConv>(TransformerConvOptions{.in_channels = layer_in,
                                                                     .out_channels = out,
                                                                     .heads = heads,
                                                                     .concat = !last,
                                                                     .beta = c.beta,
                                                                     .dropout = c.attention_dropout,
                                                                     .edge_dim = c.edge_dim},
                                              name, c.seed));
        break;
      case ModelKind::graph_transformer:
        break;
    }
  }
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

Graph Model::prepare_graph(const Graph& graph) const {
  // Without the input-order maps of nn::prepare_graph: nothing the model does reads them, and on
  // a 10M-edge graph they are 16 bytes an edge.
  return nn::prepare_graph(graph, config_.add_self_loops, InputOrder::drop);
}

PreparedGraph Model::prepare_graph(const Graph& graph, ConstView edge_attr) const {
  return nn::prepare_graph(graph, config_.add_self_loops, edge_attr, {}, InputOrder::drop);
}

data::Features Model::prepare_features(const Graph& graph, const data::Features& features) const {
  return prepare_features(graph, features, {});
}

data::Features Model::prepare_features(const Graph& graph, const data::Features& features,
                                       std::span<const int64_t> graph_ptr) const {
  if (features.cols() != config_.in_channels)
    raise<ShapeError>("Model::prepare_features: features have ", features.cols(),
                      " columns, expected in_channels=", config_.in_channels);
  if (config_.pe == PositionalEncodingKind::none) return data::sparsify_features(features);
  const data::Features sparse_or_dense = data::sparsify_features(features);
  const bool per_graph = graph_ptr.size() > 2;
  const Tensor pe = config_.pe == PositionalEncodingKind::laplacian
                        ? (per_graph ? laplacian_encoding_per_graph(graph, graph_ptr, config_.pe_dim)
                                     : laplacian_encoding(graph, config_.pe_dim))
                        : random_walk_encoding(graph, config_.pe_dim);
  if (config_.in_channels == 0) return data::Features(pe);  // no node features: the encoding alone
  if (sparse_or_dense.is_sparse()) return data::Features(append_columns(sparse_or_dense.sparse(), pe));
  return data::Features(append_columns(sparse_or_dense.dense(), pe));
}

namespace {

// Conv layer l of the stack (of `layers`) on the whole graph: GATConv fuses the ELU and the
// next layer's input dropout that follow every layer but the last into its attention op.
template <class Conv>
Var conv_layer(autograd::Tape& tape, const Graph& graph, const NodeInput& input, const EdgeFeatures& edges,
               Conv& conv, size_t l, size_t layers, const ModelConfig& c, uint64_t step_seed, Tensor* att) {
  const uint64_t att_seed = site_seed(step_seed, kAttentionSite + l);
  const bool hidden = l + 1 < layers;
  if constexpr (std::is_same_v<Conv, GATConv>) {
    const EluDropout then{1.f, c.dropout, site_seed(step_seed, kHiddenDropout + l + 1)};
    return conv.forward(tape, graph, input, edges, att_seed, att, hidden ? &then : nullptr);
  } else {
    const Var h = conv.forward(tape, graph, input, edges, att_seed, att);
    return hidden
               ? autograd::elu_dropout(tape, h, 1.f, c.dropout, site_seed(step_seed, kHiddenDropout + l + 1))
               : h;
  }
}

// The conv stack shared by the gat, gatv2 and transformer kinds. `halo`, when given, expands
// each layer's output before the next layer reads it (a distributed part without halo nodes: the
// exchange is a collective all the same).
template <class Conv>
Var conv_stack(autograd::Tape& tape, const Graph& graph, const NodeInput& x0, const EdgeFeatures& edges,
               std::vector<std::unique_ptr<Conv>>& convs, const ModelConfig& c, uint64_t step_seed,
               std::vector<Tensor>* attention, const autograd::SourceExpansion* halo) {
  Var h;
  for (size_t l = 0; l < convs.size(); ++l) {
    if (l > 0 && halo) h = autograd::expand_sources(tape, h, *halo);
    Tensor* att = nullptr;
    if (attention) att = &attention->emplace_back();
    h = conv_layer(tape, graph, l == 0 ? x0 : NodeInput(h), edges, *convs[l], l, convs.size(), c, step_seed,
                   att);
  }
  return h;
}

// One stage of layer-wise inference (Model::inference): run(tape) on a tape of its own in eval
// mode; the result is moved out before the tape, and with it the stage's input and state, is
// dropped.
template <class F>
Tensor on_own_tape(const F& run) {
  autograd::Tape tape;
  tape.training = false;
  return tape.take_value(run(tape));
}

// The prepared features as the first layer's input, not copied (eval mode: no dropout).
NodeInput features_input(autograd::Tape& tape, const data::Features& x) {
  return x.is_sparse() ? NodeInput(x.sparse()) : NodeInput(tape.constant_ref(x.dense()));
}

// Layer-wise inference over the conv stack: each layer one stage.
template <class Conv>
Tensor conv_inference(const Graph& graph, const data::Features& x, const Tensor& edge_attr,
                      std::vector<std::unique_ptr<Conv>>& convs, const ModelConfig& c) {
  Tensor h;
  for (size_t l = 0; l < convs.size(); ++l)
    h = on_own_tape([&](autograd::Tape& tape) {
      const EdgeFeatures edges{edge_attr.absent() ? Var{} : tape.constant_ref(edge_attr)};
      const NodeInput input = l > 0 ? NodeInput(tape.constant(std::move(h))) : features_input(tape, x);
      return conv_layer(tape, graph, input, edges, *convs[l], l, convs.size(), c, 0, nullptr);
    });
  return h;
}

// The conv stack on sampled blocks: layer l reads graphs[l] (prepared, bipartite) with x_src =
// the previous output (or x0) and x_dst = its first num_dst rows: GATConv takes those from its
// projection of x_src (forward_block); the other convs get them as an input of their own.
// edges[l]: layer l's edge attributes (empty without edge features). `halo`, when given, turns
// each layer's output over the destinations into rows over the next layer's sources
// (distributed training: the halo exchange).
template <class Conv>
Var block_stack(autograd::Tape& tape, const std::vector<Graph>& graphs,
                const std::vector<EdgeFeatures>& edges, const NodeInput& x0,
                std::vector<std::unique_ptr<Conv>>& convs, const ModelConfig& c, uint64_t step_seed,
                const autograd::SourceExpansion* halo) {
  Var h;
  for (size_t l = 0; l < convs.size(); ++l) {
    // Layer l's input over its sources: x0, or the previous output (expanded over a part's halo).
    const auto sources_input = [&] {
      return l == 0 ? x0 : NodeInput(halo ? autograd::expand_sources(tape, h, *halo) : h);
    };
    const uint64_t att_seed = site_seed(step_seed, kAttentionSite + l);
    const EdgeFeatures e = edges.empty() ? EdgeFeatures{} : edges[l];
    // Hidden layers end in ELU and the next layer's input dropout.
    const bool hidden = l + 1 < convs.size();
    const EluDropout then{1.f, c.dropout, site_seed(step_seed, kHiddenDropout + l + 1)};
    if constexpr (std::is_same_v<Conv, GATConv>) {
      GATConv& conv = *convs[l];
      // A distributed part's layer exchanges its projected rows (fewer bytes, and no projection
      // of the halo nodes' rows here) where it is no wider than the input, after the first; the
      // first does when the part holds no halo features (Model::forward_partition).
      const bool expand_projection =
          halo && conv.can_expand_projection() &&
          (l > 0 ? conv.options().heads * conv.options().out_channels <= conv.options().in_channels
                 : x0.rows(tape) == graphs[0].num_dst() && graphs[0].num_dst() < graphs[0].num_src());
      if (expand_projection) {
        h = conv.forward_expanded(tape, graphs[l], l == 0 ? x0 : NodeInput(h), *halo, e, att_seed, nullptr,
                                  hidden ? &then : nullptr);
        continue;
      }
      const NodeInput x_src = sources_input();
      // A distributed part (halo given) is most of the graph: recompute the projection in
      // backward rather than keep it (GATConv::forward_block).
      h = conv.forward_block(tape, graphs[l], x_src, e, att_seed, nullptr, hidden ? &then : nullptr,
                             /*recompute=*/halo != nullptr);
    } else {
      const NodeInput x_src = sources_input();
      std::optional<CsrMatrix> storage;
      const NodeInput x_dst = first_rows(tape, x_src, graphs[l].num_dst(), storage);
      h = convs[l]->forward(tape, graphs[l], x_src, x_dst, e, att_seed, nullptr);
      if (hidden) h = autograd::elu_dropout(tape, h, then.alpha, then.p, then.seed);
    }
  }
  return h;
}

}  // namespace

Var Model::forward(autograd::Tape& tape, const SampledSubgraph& batch, const data::Features& x,
                   uint64_t step_seed) {
  return forward(tape, batch, x, ConstView{}, step_seed);
}

Var Model::forward(autograd::Tape& tape, const SampledSubgraph& batch, const data::Features& x,
                   ConstView edge_attr, uint64_t step_seed) {
  const ModelConfig& c = config_;
  if (c.kind == ModelKind::graph_transformer)
    raise<InvalidArgument>(
        "Model::forward: mini-batch (sampled blocks) needs a conv kind (gat, gatv2, "
        "transformer), not graph_transformer");
  if (c.edge_dim > 0 && edge_attr.empty())
    raise<InvalidArgument>(
        "Model::forward: the model was built with edge_dim = ", c.edge_dim,
        "; pass the sampled graph's edge attributes (forward(tape, batch, x, edge_attr, seed))");
  if (c.edge_dim == 0 && !edge_attr.empty())
    raise<InvalidArgument>("Model::forward: edge attributes were given but the model has no edge_dim");
  if (static_cast<int64_t>(batch.blocks.size()) != c.layers)
    raise<InvalidArgument>("Model::forward: the batch has ", batch.blocks.size(),
                           " blocks, expected one per layer (", c.layers, "): sample with ", c.layers,
                           " fanouts");
  const int64_t in = c.in_channels + c.pe_dim;
  if (x.cols() != in)
    raise<ShapeError>("Model::forward: x has ", x.cols(), " columns, expected in_channels + pe_dim = ", in);
  std::vector<Graph> graphs;
  std::vector<Tensor> attrs;  // per block, in its prepared CSR order (edge features only)
  graphs.reserve(batch.blocks.size());
  for (size_t l = 0; l < batch.blocks.size(); ++l) {
    const Block& b = batch.blocks[l];
    if (l > 0 && b.num_src() != batch.blocks[l - 1].num_dst())
      raise<InvalidArgument>("Model::forward: block ", l, " has ", b.num_src(), " sources, but block ", l - 1,
                             " has ", batch.blocks[l - 1].num_dst(),
                             " destinations (not one sampled batch?)");
    if (edge_attr.empty()) {
      graphs.push_back(nn::prepare_graph(b.graph, c.add_self_loops, InputOrder::drop));
      continue;
    }
    // The block's edges are edges edge_ids of the sampled graph: their attributes follow, and the
    // added self-loops get the mean of the block's in-edges of their node (as PyG's layer does).
    PreparedGraph p = nn::prepare_graph(b.graph, c.add_self_loops, gather_rows(edge_attr, b.edge_ids), {},
                                        InputOrder::drop);
    graphs.push_back(std::move(p.graph));
    attrs.push_back(std::move(p.edge_attr));
  }
  if (static_cast<int64_t>(batch.input_nodes.size()) != graphs.front().num_src())
    raise<InvalidArgument>("Model::forward: ", batch.input_nodes.size(),
                           " input nodes for a first block with ", graphs.front().num_src(), " sources");
  const uint64_t input_seed = site_seed(step_seed, kInputDropout);
  // The tape takes the blocks' attributes over: the backward reads them after this returns.
  std::vector<EdgeFeatures> edges;
  for (Tensor& a : attrs) edges.push_back({tape.constant(std::move(a))});
  if (x.is_sparse()) {
    const CsrMatrix x_src = x.sparse().select_rows(batch.input_nodes);
    return run_blocks(tape, graphs, edges, NodeInput::with_dropout(x_src, c.dropout, input_seed), step_seed);
  }
  data::prefetch_rows(x, batch.input_nodes);  // features read in place: start all the reads at once
  // The input nodes' rows are read where they are by the first layer's projection, never gathered
  // into a copy of their own (the largest tensor of a sampled step). Input dropout keyed by the
  // selection's element index: the destinations' rows, its first rows, see the same mask
  // whichever layer reads them.
  auto rows = std::make_shared<const std::vector<int64_t>>(batch.input_nodes);
  return run_blocks(
      tape, graphs, edges,
      NodeInput::selected_rows(tape.constant_ref(x.dense()), std::move(rows), c.dropout, input_seed),
      step_seed);
}

Var Model::run_blocks(autograd::Tape& tape, const std::vector<Graph>& graphs,
                      const std::vector<EdgeFeatures>& edges, const NodeInput& x0, uint64_t step_seed,
                      const autograd::SourceExpansion* halo) {
  Impl& m = *impl_;
  switch (config_.kind) {
    case ModelKind::gat:
      return block_stack(tape, graphs, edges, x0, m.gat, config_, step_seed, halo);
    case ModelKind::gatv2:
      return block_stack(tape, graphs, edges, x0, m.gatv2, config_, step_seed, halo);
    case ModelKind::transformer:
      return block_stack(tape, graphs, edges, x0, m.transformer, config_, step_seed, halo);
    case ModelKind::graph_transformer:
      break;
  }
  raise<InvalidArgument>(
      "Model: bipartite graphs need a conv kind (gat, gatv2, transformer), not graph_transformer");
}

Var Model::forward_partition(autograd::Tape& tape, const Graph& graph, int64_t num_owned,
                             const data::Features& x, const EdgeFeatures& edges,
                             const autograd::SourceExpansion& halo, uint64_t step_seed) {
  if (config_.kind == ModelKind::graph_transformer)
    raise<InvalidArgument>(
        "Model::forward_partition: distributed training needs a conv kind (gat, gatv2, transformer), not "
        "graph_transformer");
  if (num_owned != graph.num_dst() || graph.num_src() < num_owned)
    raise<ShapeError>("Model::forward_partition: num_owned is ", num_owned, " for ", graph.describe(),
                      ", expected num_dst (the owned nodes, the first of the sources)");
  const int64_t in = config_.in_channels + config_.pe_dim;
  if ((x.rows() != graph.num_src() && x.rows() != num_owned) || x.cols() != in)
    raise<ShapeError>("Model::forward_partition: x has shape [", x.rows(), ", ", x.cols(),
                      "], expected [num_src=", graph.num_src(), " (or num_owned=", num_owned,
                      " without the halo's rows), in_channels + pe_dim=", in, "]");
  if (x.rows() < graph.num_src() && !first_layer_exchanges_projection(!x.is_sparse()))
    raise<InvalidArgument>("Model::forward_partition: x holds the owned nodes' rows only (", num_owned,
                           " of ", graph.num_src(),
                           " sources), which needs a first layer that exchanges its projection: the gat "
                           "kind without residual and dense features (this is ",
                           to_string(config_.kind), config_.residual ? " with residual" : "",
                           x.is_sparse() ? ", sparse features" : "", ")");
  if (config_.edge_dim > 0 && !edges.attr)
    raise<InvalidArgument>("Model::forward_partition: the model was built with edge_dim = ", config_.edge_dim,
                           "; pass the part graph's edge attributes");
  // The only part (one rank) is square: the one-process layers with their fused kernels, so that
  // it reproduces forward() on the whole graph bit for bit; `halo` still runs between layers.
  // With more parts every one takes the blocks below, square or not (a part of whole components
  // has no halo): the ranks' collectives must match call for call, and the one-process GAT
  // output layer exchanges in another sequence than the blocks' (it hung, or failed with
  // MPI_ERR_TRUNCATE, when one part of several had no halo).
  if (graph.num_src() == num_owned && halo.parts == 1)
    return x.is_sparse() ? forward_input(tape, graph, x.sparse(), edges, step_seed, nullptr, &halo)
                         : forward_input(tape, graph, x.dense(), edges, step_seed, nullptr, &halo);
  // Every layer reads the same part graph (shared, not copied); the halo exchange runs between them.
  const std::vector<Graph> graphs(static_cast<size_t>(config_.layers), graph);
  const std::vector<EdgeFeatures> layer_edges(edges.attr ? graphs.size() : 0, edges);
  const uint64_t input_seed = site_seed(step_seed, kInputDropout);
  if (x.is_sparse())
    return run_blocks(tape, graphs, layer_edges,
                      NodeInput::with_dropout(x.sparse(), config_.dropout, input_seed), step_seed, &halo);
  return run_blocks(tape, graphs, layer_edges,
                    NodeInput::with_dropout(tape.constant_ref(x.dense()), config_.dropout, input_seed),
                    step_seed, &halo);
}

Var Model::forward(autograd::Tape& tape, const Graph& graph, const data::Features& x, uint64_t step_seed,
                   std::vector<Tensor>* attention) {
  return forward(tape, graph, x, EdgeFeatures{}, step_seed, attention);
}

Var Model::forward(autograd::Tape& tape, const Graph& graph, const data::Features& x,
                   const EdgeFeatures& edges, uint64_t step_seed, std::vector<Tensor>* attention) {
  return x.is_sparse() ? forward_input(tape, graph, x.sparse(), edges, step_seed, attention)
                       : forward_input(tape, graph, x.dense(), edges, step_seed, attention);
}

Var Model::forward(autograd::Tape& tape, const Graph& graph, const CsrMatrix& x, uint64_t step_seed,
                   std::vector<Tensor>* attention) {
  return forward_input(tape, graph, x, EdgeFeatures{}, step_seed, attention);
}

Var Model::forward(autograd::Tape& tape, const Graph& graph, const Tensor& x, uint64_t step_seed,
                   std::vector<Tensor>* attention) {
  return forward_input(tape, graph, x, EdgeFeatures{}, step_seed, attention);
}

template <class X>
Var Model::forward_input(autograd::Tape& tape, const Graph& graph, const X& x, const EdgeFeatures& edges,
                         uint64_t step_seed, std::vector<Tensor>* attention,
                         const autograd::SourceExpansion* halo) {
  if (config_.edge_dim > 0 && !edges.attr)
    raise<InvalidArgument>("Model::forward: the model was built with edge_dim = ", config_.edge_dim,
                           "; pass the graph's edge attributes (Model::prepare_graph(graph, edge_attr))");
  const int64_t in = config_.in_channels + config_.pe_dim;
  if constexpr (std::is_same_v<X, CsrMatrix>) {
    if (x.rows() != graph.num_dst() || x.cols() != in)
      raise<ShapeError>("Model::forward: x (sparse) has shape [", x.rows(), ", ", x.cols(),
                        "], expected [num_nodes=", graph.num_dst(), ", in_channels + pe_dim=", in, "]");
    // The input dropout is fused into the first layers' sparse linear maps
    // (autograd::dropout_linear): no dropped copy of x, and products over the kept entries only.
    return run_layers(tape, graph,
                      NodeInput::with_dropout(x, config_.dropout, site_seed(step_seed, kInputDropout)), edges,
                      step_seed, attention, halo);
  } else {
    check_shape("Model::forward: x (expected [num_nodes, in_channels + pe_dim])", x, {graph.num_dst(), in});
    // The input dropout is fused into the first layers' linear maps (autograd::dropout_linear): the
    // dropped copy of x, as large as x, is never stored.
    return run_layers(
        tape, graph,
        NodeInput::with_dropout(tape.constant_ref(x), config_.dropout, site_seed(step_seed, kInputDropout)),
        edges, step_seed, attention, halo);
  }
}

// The layer stack, from the input with its dropout pending (the first layers apply it).
Var Model::run_layers(autograd::Tape& tape, const Graph& graph, const NodeInput& x, const EdgeFeatures& edges,
                      uint64_t step_seed, std::vector<Tensor>* attention,
                      const autograd::SourceExpansion* halo) {
  Impl& m = *impl_;
  switch (config_.kind) {
    case ModelKind::gat:
      return conv_stack(tape, graph, x, edges, m.gat, config_, step_seed, attention, halo);
    case ModelKind::gatv2:
      return conv_stack(tape, graph, x, edges, m.gatv2, config_, step_seed, attention, halo);
    case ModelKind::transformer:
      return conv_stack(tape, graph, x, edges, m.transformer, config_, step_seed, attention, halo);
    case ModelKind::graph_transformer:
      break;
  }
  Var h = m.lin_in->forward(tape, x);
  for (size_t l = 0; l < m.blocks.size(); ++l) {
    Tensor* att = attention ? &attention->emplace_back() : nullptr;
    h = m.blocks[l]->forward(tape, graph, h, site_seed(step_seed, kBlockSite + l), att);
  }
  return m.lin_out->forward(tape, h);
}

Tensor Model::inference(const Graph& graph, const data::Features& x, const Tensor& edge_attr) {
  const ModelConfig& c = config_;
  if (c.edge_dim > 0 && edge_attr.absent())
    raise<InvalidArgument>("Model::inference: the model was built with edge_dim = ", c.edge_dim,
                           "; pass the graph's edge attributes (Model::prepare_graph(graph, edge_attr))");
  if (c.edge_dim == 0 && !edge_attr.absent())
    raise<InvalidArgument>("Model::inference: edge attributes were given but the model has no edge_dim");
  const int64_t in = c.in_channels + c.pe_dim;
  if (x.rows() != graph.num_dst() || x.cols() != in)
    raise<ShapeError>("Model::inference: x", x.is_sparse() ? " (sparse)" : "", " has shape [", x.rows(), ", ",
                      x.cols(), "], expected [num_nodes=", graph.num_dst(), ", in_channels + pe_dim=", in,
                      "]");
  Impl& m = *impl_;
  switch (c.kind) {
    case ModelKind::gat:
      return conv_inference(graph, x, edge_attr, m.gat, c);
    case ModelKind::gatv2:
      return conv_inference(graph, x, edge_attr, m.gatv2, c);
    case ModelKind::transformer:
      return conv_inference(graph, x, edge_attr, m.transformer, c);
    case ModelKind::graph_transformer:
      break;
  }
  // lin_in, each block, lin_out: a stage each.
  Tensor h =
      on_own_tape([&](autograd::Tape& tape) { return m.lin_in->forward(tape, features_input(tape, x)); });
  for (size_t l = 0; l < m.blocks.size(); ++l)
    h = on_own_tape([&](autograd::Tape& tape) {
      return m.blocks[l]->forward(tape, graph, tape.constant(std::move(h)), site_seed(0, kBlockSite + l),
                                  nullptr);
    });
  return on_own_tape(
      [&](autograd::Tape& tape) { return m.lin_out->forward(tape, tape.constant(std::move(h))); });
}

std::vector<autograd::Parameter*> Model::parameters() {
  std::vector<autograd::Parameter*> out;
  auto append = [&](std::vector<autograd::Parameter*> ps) { out.insert(out.end(), ps.begin(), ps.end()); };
  Impl& m = *impl_;
  for (auto& c : m.gat) append(c->parameters());
  for (auto& c : m.gatv2) append(c->parameters());
  for (auto& c : m.transformer) append(c->parameters());
  if (m.lin_in) m.lin_in->collect(out);
  for (auto& b : m.blocks) append(b->parameters());
  if (m.lin_out) m.lin_out->collect(out);
  return out;
}

int64_t Model::num_parameters() {
  int64_t n = 0;
  for (auto* p : parameters()) n += p->value.numel();
  return n;
}

std::string Model::describe() {
  std::ostringstream os;
  const ModelConfig& c = config_;
  os << "Model(kind=" << to_string(c.kind) << ", layers=" << c.layers << ", hidden=" << c.hidden
     << ", heads=" << c.heads << ", out_heads=" << c.out_heads << ", classes=" << c.num_classes
     << ", dropout=" << c.dropout << ", attention_dropout=" << c.attention_dropout
     << ", pe=" << to_string(c.pe);
  if (c.pe_dim) os << "(" << c.pe_dim << ")";
  os << ")\n";
  for (auto* p : parameters()) os << "  " << p->name << " " << p->value.shape().str() << "\n";
  os << "  parameters: " << num_parameters() << "\n";
  return os.str();
}

}  // namespace edgeattn::nn
