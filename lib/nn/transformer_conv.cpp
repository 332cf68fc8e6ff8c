#include "edgeattn/nn/transformer_conv.hpp"

#include <cmath>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/gat_conv.hpp"

namespace edgeattn::nn {

using autograd::Var;

namespace {
const TransformerConvOptions& checked(const TransformerConvOptions& o, const std::string& name) {
  if (o.in_channels < 1 || o.out_channels < 1 || o.heads < 1)
    raise<InvalidArgument>("TransformerConv ", name, ": in_channels=", o.in_channels,
                           ", out_channels=", o.out_channels, ", heads=", o.heads, ", expected all >= 1");
  if (!(o.dropout >= 0.f && o.dropout < 1.f))
    raise<InvalidArgument>("TransformerConv ", name, ": dropout is ", o.dropout, ", expected in [0, 1)");
  return o;
}
int64_t width(const TransformerConvOptions& o) {
  return o.concat ? o.heads * o.out_channels : o.out_channels;
}
}  // namespace

TransformerConv::TransformerConv(const TransformerConvOptions& o, const std::string& name, uint64_t seed)
    : lin_key(join_name(name, "lin_key"), checked(o, name).in_channels, o.heads * o.out_channels, true,
              LinearInit::torch_default, seed),
      lin_query(join_name(name, "lin_query"), o.in_channels_dst > 0 ? o.in_channels_dst : o.in_channels,
                o.heads * o.out_channels, true, LinearInit::torch_default, seed),
      lin_value(join_name(name, "lin_value"), o.in_channels, o.heads * o.out_channels, true,
                LinearInit::torch_default, seed),
      lin_skip(join_name(name, "lin_skip"), o.in_channels_dst > 0 ? o.in_channels_dst : o.in_channels,
               width(o), o.bias, LinearInit::torch_default, seed),
      options_(o) {
  if (o.edge_dim < 0)
    raise<InvalidArgument>("TransformerConv ", name, ": edge_dim is ", o.edge_dim, ", expected >= 0");
  if (o.edge_dim > 0)
    lin_edge.emplace(join_name(name, "lin_edge"), o.edge_dim, o.heads * o.out_channels, /*bias=*/false,
                     LinearInit::torch_default, seed);
  if (o.beta && o.root_weight)
    lin_beta.emplace(join_name(name, "lin_beta"), 3 * width(o), 1, /*bias=*/false, LinearInit::torch_default,
                     seed);
}

int64_t TransformerConv::out_features() const { return width(options_); }

std::vector<autograd::Parameter*> TransformerConv::parameters() {
  std::vector<autograd::Parameter*> out;
  lin_key.collect(out);
  lin_query.collect(out);
  lin_value.collect(out);
  if (lin_edge) lin_edge->collect(out);
  lin_skip.collect(out);
  if (lin_beta) lin_beta->collect(out);
  return out;
}

Var TransformerConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                             uint64_t dropout_seed, Tensor* attention) {
  return forward(tape, graph, x, EdgeFeatures{}, dropout_seed, attention);
}

Var TransformerConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                             const NodeInput& x_dst, uint64_t dropout_seed, Tensor* attention) {
  return forward(tape, graph, x_src, x_dst, EdgeFeatures{}, dropout_seed, attention);
}

Var TransformerConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                             const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention) {
  check_layer_graph(tape, "TransformerConv " + lin_key.weight.name, graph, x, options_.in_channels, false);
  if (options_.in_channels_dst > 0 && options_.in_channels_dst != options_.in_channels)
    raise<InvalidArgument>("TransformerConv ", lin_key.weight.name,
                           ": built for bipartite input (in_channels_dst = ", options_.in_channels_dst,
                           "); call forward(tape, graph, x_src, x_dst, ...)");
  return run(tape, graph, x, x, edges, dropout_seed, attention);
}

Var TransformerConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                             const NodeInput& x_dst, const EdgeFeatures& edges, uint64_t dropout_seed,
                             Tensor* attention) {
  check_bipartite_layer_graph(tape, "TransformerConv " + lin_key.weight.name, graph, x_src, x_dst,
                              options_.in_channels, lin_query.in_channels(), false);
  return run(tape, graph, x_src, x_dst, edges, dropout_seed, attention);
}

Var TransformerConv::run(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                         const NodeInput& x_dst, const EdgeFeatures& edges, uint64_t dropout_seed,
                         Tensor* attention) {
  if (edges.attr)
    check_edge_features(tape, "TransformerConv " + lin_key.weight.name, graph, edges, options_.edge_dim,
                        "TransformerConvOptions::edge_dim");
  const int64_t ns = graph.num_src(), nd = graph.num_dst(), h = options_.heads, c = options_.out_channels;
  const Var q = autograd::reshape(tape, lin_query.forward(tape, x_dst), {nd, h, c});
  const Var k = autograd::reshape(tape, lin_key.forward(tape, x_src), {ns, h, c});
  const Var v = autograd::reshape(tape, lin_value.forward(tape, x_src), {ns, h, c});
  AttentionConfig config{.score = Score::dot_product,
                         .combine = options_.concat ? HeadCombine::concat : HeadCombine::mean,
                         .scale = 1.f / std::sqrt(static_cast<float>(c)),
                         .dropout = options_.dropout,
                         .seed = dropout_seed,
                         .return_attention = attention != nullptr};
  autograd::AttentionVars vars{.query = q, .key = k, .value = v};
  if (edges.attr) {
    // lin_edge.weight [H*C, edge_dim] is the kernel's edge projection [H, C, edge_dim] as it is;
    // the dot score adds it to keys and values.
    vars.edge_attr = edges.attr;
    vars.edge_proj = autograd::reshape(tape, tape.parameter(lin_edge->weight), {h, c, options_.edge_dim});
  }
  Var out = autograd::graph_attention(tape, graph, vars, config, attention);
  if (options_.concat) out = autograd::reshape(tape, out, {nd, h * c});
  if (!options_.root_weight) return out;
  const Var x_r = lin_skip.forward(tape, x_dst);
  if (!lin_beta) return autograd::add(tape, out, x_r);
  // b x_r + (1 - b) out = out + b (x_r - out)
  const Var gate = autograd::sigmoid(
      tape, lin_beta->forward(tape, autograd::concat(tape, {out, x_r, autograd::sub(tape, out, x_r)})));
  return autograd::add(tape, out, autograd::scale_rows(tape, autograd::sub(tape, x_r, out), gate));
}

}  // namespace edgeattn::nn
