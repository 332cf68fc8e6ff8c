#include "edgeattn/nn/gatv2_conv.hpp"

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/init.hpp"

namespace edgeattn::nn {

using autograd::Var;

namespace {
const GATv2ConvOptions& checked(const GATv2ConvOptions& o, const std::string& name) {
  if (o.in_channels < 1 || o.out_channels < 1 || o.heads < 1)
    raise<InvalidArgument>("GATv2Conv ", name, ": in_channels=", o.in_channels,
                           ", out_channels=", o.out_channels, ", heads=", o.heads, ", expected all >= 1");
  if (!(o.dropout >= 0.f && o.dropout < 1.f))
    raise<InvalidArgument>("GATv2Conv ", name, ": dropout is ", o.dropout, ", expected in [0, 1)");
  if (!(o.negative_slope >= 0.f))
    raise<InvalidArgument>("GATv2Conv ", name, ": negative_slope is ", o.negative_slope, ", expected >= 0");
  return o;
}
}  // namespace

GATv2Conv::GATv2Conv(const GATv2ConvOptions& o, const std::string& name, uint64_t seed)
    : lin_l(join_name(name, "lin_l"), checked(o, name).in_channels, o.heads * o.out_channels, o.bias,
            LinearInit::glorot, seed),
      options_(o) {
  const int64_t h = o.heads, c = o.out_channels;
  if (o.in_channels_dst < 0)
    raise<InvalidArgument>("GATv2Conv ", name, ": in_channels_dst is ", o.in_channels_dst, ", expected >= 0");
  if (o.share_weights && o.in_channels_dst > 0 && o.in_channels_dst != o.in_channels)
    raise<InvalidArgument>("GATv2Conv ", name, ": share_weights needs in_channels_dst = in_channels, found ",
                           o.in_channels_dst, " and ", o.in_channels);
  if (!o.share_weights)
    lin_r_.emplace(join_name(name, "lin_r"), in_dst(), h * c, o.bias, LinearInit::glorot, seed);
  att.name = join_name(name, "att");
  att.value = glorot({1, h, c}, derive_seed(seed, att.name));
  if (o.edge_dim < 0)
    raise<InvalidArgument>("GATv2Conv ", name, ": edge_dim is ", o.edge_dim, ", expected >= 0");
  if (o.edge_dim > 0)
    lin_edge.emplace(join_name(name, "lin_edge"), o.edge_dim, h * c, /*bias=*/false, LinearInit::glorot,
                     seed);
  if (o.bias) {
    bias.name = join_name(name, "bias");
    bias.value = zeros({out_features()});
  }
  if (o.residual)
    res.emplace(join_name(name, "res"), in_dst(), out_features(), /*bias=*/false, LinearInit::glorot, seed);
}

int64_t GATv2Conv::in_dst() const {
  return options_.in_channels_dst > 0 ? options_.in_channels_dst : options_.in_channels;
}

int64_t GATv2Conv::out_features() const {
  return options_.concat ? options_.heads * options_.out_channels : options_.out_channels;
}

std::vector<autograd::Parameter*> GATv2Conv::parameters() {
  std::vector<autograd::Parameter*> out;
  lin_l.collect(out);
  if (lin_r_) lin_r_->collect(out);
  out.push_back(&att);
  if (lin_edge) lin_edge->collect(out);
  if (options_.bias) out.push_back(&bias);
  if (res) res->collect(out);
  return out;
}

Var GATv2Conv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x, uint64_t dropout_seed,
                       Tensor* attention) {
  return forward(tape, graph, x, EdgeFeatures{}, dropout_seed, attention);
}

Var GATv2Conv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                       const NodeInput& x_dst, uint64_t dropout_seed, Tensor* attention) {
  return forward(tape, graph, x_src, x_dst, EdgeFeatures{}, dropout_seed, attention);
}

Var GATv2Conv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                       const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention) {
  check_layer_graph(tape, "GATv2Conv " + lin_l.weight.name, graph, x, options_.in_channels,
                    options_.add_self_loops);
  if (in_dst() != options_.in_channels)
    raise<InvalidArgument>("GATv2Conv ", lin_l.weight.name,
                           ": built for bipartite input (in_channels_dst = ", options_.in_channels_dst,
                           "); call forward(tape, graph, x_src, x_dst, ...)");
  return run(tape, graph, x, x, edges, dropout_seed, attention);
}

Var GATv2Conv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                       const NodeInput& x_dst, const EdgeFeatures& edges, uint64_t dropout_seed,
                       Tensor* attention) {
  check_bipartite_layer_graph(tape, "GATv2Conv " + lin_l.weight.name, graph, x_src, x_dst,
                              options_.in_channels, in_dst(), options_.add_self_loops);
  return run(tape, graph, x_src, x_dst, edges, dropout_seed, attention);
}

Var GATv2Conv::run(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src, const NodeInput& x_dst,
                   const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention) {
  if (edges.attr)
    check_edge_features(tape, "GATv2Conv " + lin_l.weight.name, graph, edges, options_.edge_dim,
                        "GATv2ConvOptions::edge_dim");
  const int64_t ns = graph.num_src(), nd = graph.num_dst(), h = options_.heads, c = options_.out_channels;
  const bool same = &x_src == &x_dst;
  const Var x_l = autograd::reshape(tape, lin_l.forward(tape, x_src), {ns, h, c});
  const Var x_r = lin_r_ ? autograd::reshape(tape, lin_r_->forward(tape, x_dst), {nd, h, c})
                  : same ? x_l
                         : autograd::reshape(tape, lin_l.forward(tape, x_dst), {nd, h, c});
  AttentionConfig config{.score = Score::gatv2,
                         .combine = options_.concat ? HeadCombine::concat : HeadCombine::mean,
                         .negative_slope = options_.negative_slope,
                         .dropout = options_.dropout,
                         .seed = dropout_seed,
                         .return_attention = attention != nullptr};
  autograd::AttentionVars vars{
      .query = x_r, .key = x_l, .value = x_l, .att = autograd::reshape(tape, tape.parameter(att), {h, c})};
  if (edges.attr) {
    // lin_edge.weight [H*C, edge_dim] is the kernel's edge projection [H, C, edge_dim] as it is.
    vars.edge_attr = edges.attr;
    vars.edge_proj = autograd::reshape(tape, tape.parameter(lin_edge->weight), {h, c, options_.edge_dim});
  }
  Var out = autograd::graph_attention(tape, graph, vars, config, attention);
  if (options_.concat) out = autograd::reshape(tape, out, {nd, h * c});
  if (res) out = autograd::add(tape, out, res->forward(tape, x_dst));
  if (options_.bias) out = autograd::add_bias(tape, out, tape.parameter(bias));
  return out;
}

}  // namespace edgeattn::nn
