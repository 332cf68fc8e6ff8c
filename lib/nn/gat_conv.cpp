#include "edgeattn/nn/gat_conv.hpp"

#include <algorithm>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/init.hpp"

namespace edgeattn::nn {

using autograd::Var;

void check_layer_graph(const autograd::Tape& tape, const std::string& who, const Graph& graph,
                       const NodeInput& x, int64_t in_channels, bool add_self_loops) {
  if (graph.num_dst() != graph.num_src())
    raise<ShapeError>(
        who, ": graph has num_dst=", graph.num_dst(), ", num_src=", graph.num_src(),
        ", expected a square graph (node classification); pass (x_src, x_dst) for a bipartite one");
  check_bipartite_layer_graph(tape, who, graph, x, x, in_channels, in_channels, add_self_loops);
}

namespace {

// The self-loop precondition of a prepared graph: loops i -> i for i < min(num_dst, num_src).
void check_self_loops(const std::string& who, const Graph& graph, bool add_self_loops) {
  const int64_t loops = std::min(graph.num_dst(), graph.num_src());
  if (add_self_loops && graph.degree_stats().self_loops != loops)
    raise<InvalidArgument>(who, ": add_self_loops is set but the graph has ", graph.degree_stats().self_loops,
                           " self-loops for ", loops,
                           " nodes; prepare it once with nn::prepare_graph(graph, /*add_self_loops=*/true)");
}

}  // namespace

void check_bipartite_layer_graph(const autograd::Tape& tape, const std::string& who, const Graph& graph,
                                 const NodeInput& x_src, const NodeInput& x_dst, int64_t in_src,
                                 int64_t in_dst, bool add_self_loops) {
  x_src.check(tape, who + " (x_src)", graph.num_src(), in_src);
  x_dst.check(tape, who + " (x_dst)", graph.num_dst(), in_dst);
  check_self_loops(who, graph, add_self_loops);
}

NodeInput first_rows(autograd::Tape& tape, const NodeInput& x, int64_t rows,
                     std::optional<CsrMatrix>& sparse_storage) {
  if (!x.is_sparse()) return x.first_rows(tape, rows);  // a leading-rows view, or the selection's first rows
  if (x.rows(tape) < rows)
    raise<ShapeError>("first_rows: x has ", x.rows(tape), " rows, cannot take its first ", rows,
                      " (a block's destinations are its first sources)");
  std::vector<int64_t> first(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) first[static_cast<size_t>(i)] = i;
  sparse_storage.emplace(x.sparse().select_rows(first));
  // Row i of the selection is x's row i: the pending dropout's (row, column) mask carries over.
  return NodeInput::with_dropout(*sparse_storage, x.dropout_p(), x.dropout_seed());
}

namespace {
void check_options(const std::string& who, int64_t in, int64_t out, int64_t heads, float slope,
                   float dropout) {
  if (in < 1 || out < 1 || heads < 1)
    raise<InvalidArgument>(who, ": in_channels=", in, ", out_channels=", out, ", heads=", heads,
                           ", expected all >= 1");
  if (!(dropout >= 0.f && dropout < 1.f))
    raise<InvalidArgument>(who, ": dropout is ", dropout, ", expected in [0, 1)");
  if (!(slope >= 0.f)) raise<InvalidArgument>(who, ": negative_slope is ", slope, ", expected >= 0");
}
}  // namespace

GATConv::GATConv(const GATConvOptions& o, const std::string& name, uint64_t seed)
    : lin((check_options("GATConv " + name, o.in_channels, o.out_channels, o.heads, o.negative_slope,
                         o.dropout),
           join_name(name, o.in_channels_dst > 0 ? "lin_src" : "lin")),
          o.in_channels, o.heads * o.out_channels, /*bias=*/false, LinearInit::glorot, seed),
      options_(o) {
  const int64_t h = o.heads, c = o.out_channels;
  if (o.in_channels_dst < 0)
    raise<InvalidArgument>("GATConv ", name, ": in_channels_dst is ", o.in_channels_dst, ", expected >= 0");
  if (o.in_channels_dst > 0)
    lin_dst.emplace(join_name(name, "lin_dst"), o.in_channels_dst, h * c, /*bias=*/false, LinearInit::glorot,
                    seed);
  att_src.name = join_name(name, "att_src");
  att_src.value = glorot({1, h, c}, derive_seed(seed, att_src.name));
  att_dst.name = join_name(name, "att_dst");
  att_dst.value = glorot({1, h, c}, derive_seed(seed, att_dst.name));
  if (o.bias) {
    bias.name = join_name(name, "bias");
    bias.value = zeros({out_features()});
  }
  if (o.residual)
    res.emplace(join_name(name, "res"), in_dst(), out_features(), /*bias=*/false, LinearInit::glorot, seed);
  if (o.edge_dim < 0)
    raise<InvalidArgument>("GATConv ", name, ": edge_dim is ", o.edge_dim, ", expected >= 0");
  if (o.edge_dim > 0) {
    lin_edge.emplace(join_name(name, "lin_edge"), o.edge_dim, h * c, /*bias=*/false, LinearInit::glorot,
                     seed);
    att_edge.name = join_name(name, "att_edge");
    att_edge.value = glorot({1, h, c}, derive_seed(seed, att_edge.name));
  }
}

int64_t GATConv::in_dst() const {
  return options_.in_channels_dst > 0 ? options_.in_channels_dst : options_.in_channels;
}

AttentionConfig GATConv::attention_config(uint64_t dropout_seed, bool return_attention) const {
  return {.score = Score::additive,
          .combine = options_.concat ? HeadCombine::concat : HeadCombine::mean,
          .negative_slope = options_.negative_slope,
          .dropout = options_.dropout,
          .seed = dropout_seed,
          .return_attention = return_attention};
}

int64_t GATConv::out_features() const {
  return options_.concat ? options_.heads * options_.out_channels : options_.out_channels;
}

std::vector<autograd::Parameter*> GATConv::parameters() {
  std::vector<autograd::Parameter*> out;
  lin.collect(out);
  if (lin_dst) lin_dst->collect(out);
  out.push_back(&att_src);
  out.push_back(&att_dst);
  if (options_.bias) out.push_back(&bias);
  if (res) res->collect(out);
  if (lin_edge) {
    lin_edge->collect(out);
    out.push_back(&att_edge);
  }
  return out;
}

Var GATConv::edge_scores(autograd::Tape& tape, const Graph& graph, const EdgeFeatures& edges) {
  if (!edges.attr) return {};
  check_edge_features(tape, "GATConv " + lin.weight.name, graph, edges, options_.edge_dim,
                      "GATConvOptions::edge_dim");
  const int64_t h = options_.heads, c = options_.out_channels;
  const Var a_edge = autograd::reshape(tape, tape.parameter(att_edge), {h, c});
  // [E, H] = edge_attr u^T with u = sum_c att_edge[h, c] lin_edge.weight[h*C + c, :]  ([H, edge_dim])
  return autograd::linear(tape, edges.attr,
                          autograd::fold_head_scores(tape, tape.parameter(lin_edge->weight), a_edge));
}

Var GATConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x, const EdgeFeatures& edges,
                     uint64_t dropout_seed, Tensor* attention, const EluDropout* then) {
  if (lin_dst)
    raise<InvalidArgument>("GATConv ", lin.weight.name,
                           ": built for bipartite input (in_channels_dst = ", options_.in_channels_dst,
                           "); call forward(tape, graph, x_src, x_dst, ...)");
  check_layer_graph(tape, "GATConv " + lin.weight.name, graph, x, options_.in_channels,
                    options_.add_self_loops);
  return forward_square(tape, graph, x, edge_scores(tape, graph, edges), dropout_seed, attention, then);
}

Var GATConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src, const NodeInput& x_dst,
                     const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention) {
  check_bipartite_layer_graph(tape, "GATConv " + lin.weight.name, graph, x_src, x_dst, options_.in_channels,
                              in_dst(), options_.add_self_loops);
  return forward_bipartite(tape, graph, x_src, &x_dst, edge_scores(tape, graph, edges), dropout_seed,
                           attention, nullptr);
}

Var GATConv::forward_block(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                           const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention,
                           const EluDropout* then, bool recompute) {
  const std::string who = "GATConv " + lin.weight.name;
  if (graph.num_dst() > graph.num_src())
    raise<InvalidArgument>(who, ": a block's destinations are its first sources, but the graph has ",
                           graph.num_dst(), " destinations for ", graph.num_src(), " sources");
  std::optional<CsrMatrix> storage;
  std::optional<NodeInput> x_dst;  // formed only where it is read: by lin_dst or the residual
  if (lin_dst || res) {
    x_dst = first_rows(tape, x_src, graph.num_dst(), storage);
    check_bipartite_layer_graph(tape, who, graph, x_src, *x_dst, options_.in_channels, in_dst(),
                                options_.add_self_loops);
  } else {
    x_src.check(tape, who + " (x_src)", graph.num_src(), options_.in_channels);
    check_self_loops(who, graph, options_.add_self_loops);
    // Asked for, with dense input and no residual: the fused op (gat_attention takes the
    // destinations as the first sources), which keeps neither the sources' projection nor
    // their score terms.
    if (recompute && !x_src.is_sparse())
      return forward_fused(tape, graph, x_src, edge_scores(tape, graph, edges), dropout_seed, attention,
                           then);
  }
  return forward_bipartite(tape, graph, x_src, x_dst ? &*x_dst : nullptr, edge_scores(tape, graph, edges),
                           dropout_seed, attention, then);
}

Var GATConv::forward_expanded(autograd::Tape& tape, const Graph& graph, const NodeInput& x_own,
                              const autograd::SourceExpansion& sources, const EdgeFeatures& edges,
                              uint64_t dropout_seed, Tensor* attention, const EluDropout* then) {
  const std::string who = "GATConv " + lin.weight.name;
  if (!can_expand_projection())
    raise<InvalidArgument>(who, ": forward_expanded needs a layer without ", lin_dst ? "lin_dst" : "residual",
                           " (expand the input and run forward_block instead)");
  if (x_own.is_sparse()) raise<InvalidArgument>(who, ": forward_expanded needs dense input, x_own is sparse");
  if (!sources.expand || !sources.reduce)
    raise<InvalidArgument>(who, ": forward_expanded needs the sources' expand and reduce functions");
  if (graph.num_dst() > graph.num_src())
    raise<InvalidArgument>(who, ": a part's destinations are its first sources, but the graph has ",
                           graph.num_dst(), " destinations for ", graph.num_src(), " sources");
  x_own.check(tape, who + " (x_own: the destinations' rows)", graph.num_dst(), options_.in_channels);
  check_self_loops(who, graph, options_.add_self_loops);
  return forward_fused(tape, graph, x_own, edge_scores(tape, graph, edges), dropout_seed, attention, then,
                       &sources);
}

Var GATConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x, uint64_t dropout_seed,
                     Tensor* attention, const EluDropout* then) {
  return forward(tape, graph, x, EdgeFeatures{}, dropout_seed, attention, then);
}

Var GATConv::forward_fused(autograd::Tape& tape, const Graph& graph, const NodeInput& x_in, Var score_edge,
                           uint64_t dropout_seed, Tensor* attention, const EluDropout* then,
                           const autograd::SourceExpansion* sources) {
  const NodeInput x = x_in.materialized(tape);  // the fused op reads its input as one tensor
  const int64_t h = options_.heads, c = options_.out_channels;
  const Var a_src = autograd::reshape(tape, tape.parameter(att_src), {h, c});
  const Var a_dst = autograd::reshape(tape, tape.parameter(att_dst), {h, c});
  const AttentionConfig config = attention_config(dropout_seed, attention != nullptr);
  const autograd::AttentionEpilogue epilogue = fused_epilogue(tape, then);
  // One op from x to the output: it keeps neither h = lin(x) nor the score terms, and
  // recomputes them in backward (autograd::gat_attention).
  Var out = autograd::gat_attention(tape, graph,
                                    {.x = x.dense(),
                                     .weight = tape.parameter(lin.weight),
                                     .att_dst = a_dst,
                                     .att_src = a_src,
                                     .input_dropout = x.dropout_p(),
                                     .input_seed = x.dropout_seed(),
                                     .score_edge = score_edge,
                                     .sources = sources ? *sources : autograd::SourceExpansion{}},
                                    config, attention, epilogue);
  if (options_.concat) out = autograd::reshape(tape, out, {graph.num_dst(), h * c});
  return out;  // bias and `then` were fused
}

Var GATConv::forward_square(autograd::Tape& tape, const Graph& graph, const NodeInput& x, Var score_edge,
                            uint64_t dropout_seed, Tensor* attention, const EluDropout* then) {
  if (!res && !x.is_sparse()) return forward_fused(tape, graph, x, score_edge, dropout_seed, attention, then);
  const int64_t n = graph.num_src(), h = options_.heads, c = options_.out_channels;
  const Var a_src = autograd::reshape(tape, tape.parameter(att_src), {h, c});
  const Var a_dst = autograd::reshape(tape, tape.parameter(att_dst), {h, c});
  const AttentionConfig config = attention_config(dropout_seed, attention != nullptr);
  const autograd::AttentionEpilogue epilogue = fused_epilogue(tape, then);
  const Var h3 = autograd::reshape(tape, lin.forward(tape, x), {n, h, c});
  // Both score terms from h3 inside the attention op (graph_attention's att_dst/att_src).
  Var out = autograd::graph_attention(
      tape, graph, {.value = h3, .score_edge = score_edge, .att_dst = a_dst, .att_src = a_src}, config,
      attention, epilogue);
  if (options_.concat) out = autograd::reshape(tape, out, {n, h * c});
  return residual_tail(tape, out, x, then);
}

Var GATConv::forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src, const NodeInput& x_dst,
                     uint64_t dropout_seed, Tensor* attention) {
  return forward(tape, graph, x_src, x_dst, EdgeFeatures{}, dropout_seed, attention);
}

Var GATConv::forward_bipartite(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                               const NodeInput* x_dst, Var score_edge, uint64_t dropout_seed,
                               Tensor* attention, const EluDropout* then) {
  const int64_t ns = graph.num_src(), nd = graph.num_dst(), h = options_.heads, c = options_.out_channels;
  const Var a_src = autograd::reshape(tape, tape.parameter(att_src), {h, c});
  const Var a_dst = autograd::reshape(tape, tape.parameter(att_dst), {h, c});
  const Var hs = autograd::reshape(tape, lin.forward(tape, x_src), {ns, h, c});
  autograd::AttentionVars vars{.value = hs, .score_edge = score_edge};
  if (x_dst) {
    const Var hd_flat = lin_dst ? lin_dst->forward(tape, *x_dst) : lin.forward(tape, *x_dst);
    vars.score_dst = autograd::head_scores(tape, autograd::reshape(tape, hd_flat, {nd, h, c}), a_dst);
    vars.score_src = autograd::head_scores(tape, hs, a_src);
  } else {
    // The destinations are the first sources: the attention op takes both score terms from hs
    // (no second projection, no copy of those rows, and the terms' gradients folded into dh
    // inside the attention backward).
    vars.att_dst = a_dst;
    vars.att_src = a_src;
  }
  const AttentionConfig config = attention_config(dropout_seed, attention != nullptr);
  const autograd::AttentionEpilogue epilogue = fused_epilogue(tape, then);
  Var out = autograd::graph_attention(tape, graph, vars, config, attention, epilogue);
  if (options_.concat) out = autograd::reshape(tape, out, {nd, h * c});
  return res ? residual_tail(tape, out, *x_dst, then) : out;  // forward_block forms x_dst with res
}

autograd::AttentionEpilogue GATConv::fused_epilogue(autograd::Tape& tape, const EluDropout* then) {
  // Without a residual, bias and the activation that follows fuse into the attention op.
  autograd::AttentionEpilogue epilogue;
  if (res) return epilogue;
  if (options_.bias) epilogue.bias = tape.parameter(bias);
  if (then) epilogue = {epilogue.bias, true, then->alpha, then->p, then->seed};
  return epilogue;
}

Var GATConv::residual_tail(autograd::Tape& tape, Var out, const NodeInput& x_dst, const EluDropout* then) {
  if (!res) return out;  // bias and `then` were fused (fused_epilogue)
  out = autograd::add(tape, out, res->forward(tape, x_dst));
  if (options_.bias) out = autograd::add_bias(tape, out, tape.parameter(bias));
  if (then) out = autograd::elu_dropout(tape, out, then->alpha, then->p, then->seed);
  return out;
}

}  // namespace edgeattn::nn
