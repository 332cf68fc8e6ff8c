#include "edgeattn/nn/graph_transformer.hpp"

#include <cmath>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/nn/init.hpp"

namespace edgeattn::nn {

using autograd::Var;

namespace {
const GraphTransformerOptions& checked(const GraphTransformerOptions& o, const std::string& name) {
  if (o.channels < 1 || o.heads < 1 || o.channels % o.heads != 0 || o.ffn_hidden < 0)
    raise<InvalidArgument>("GraphTransformerBlock ", name, ": channels=", o.channels, ", heads=", o.heads,
                           ", ffn_hidden=", o.ffn_hidden,
                           ", expected channels >= 1 divisible by heads >= 1 and ffn_hidden >= 0");
  for (float p : {o.dropout, o.attention_dropout})
    if (!(p >= 0.f && p < 1.f))
      raise<InvalidArgument>("GraphTransformerBlock ", name, ": dropout ", p, " not in [0, 1)");
  if (!(o.layer_norm_eps > 0.f))
    raise<InvalidArgument>("GraphTransformerBlock ", name, ": layer_norm_eps must be > 0");
  return o;
}
int64_t ffn_width(const GraphTransformerOptions& o) {
  return o.ffn_hidden > 0 ? o.ffn_hidden : 2 * o.channels;
}

autograd::Parameter named(const std::string& name, Tensor value) { return {name, std::move(value), {}}; }

// Dropout sites of a block.
enum Site : uint64_t { kAttention = 1, kAfterAttention = 2, kInsideFfn = 3, kAfterFfn = 4 };
}  // namespace

GraphTransformerBlock::GraphTransformerBlock(const GraphTransformerOptions& o, const std::string& name,
                                             uint64_t seed)
    : lin_query(join_name(name, "lin_query"), checked(o, name).channels, o.channels, true,
                LinearInit::torch_default, seed),
      lin_key(join_name(name, "lin_key"), o.channels, o.channels, true, LinearInit::torch_default, seed),
      lin_value(join_name(name, "lin_value"), o.channels, o.channels, true, LinearInit::torch_default, seed),
      attn_out(join_name(name, "attn_out"), o.channels, o.channels, true, LinearInit::torch_default, seed),
      norm1_weight(named(join_name(name, "norm1.weight"), Tensor({o.channels}, 1.f))),
      norm1_bias(named(join_name(name, "norm1.bias"), zeros({o.channels}))),
      ffn_lin1(join_name(name, "ffn.lin1"), o.channels, ffn_width(o), true, LinearInit::torch_default, seed),
      ffn_lin2(join_name(name, "ffn.lin2"), ffn_width(o), o.channels, true, LinearInit::torch_default, seed),
      norm2_weight(named(join_name(name, "norm2.weight"), Tensor({o.channels}, 1.f))),
      norm2_bias(named(join_name(name, "norm2.bias"), zeros({o.channels}))),
      options_(o) {}

std::vector<autograd::Parameter*> GraphTransformerBlock::parameters() {
  std::vector<autograd::Parameter*> out;
  lin_query.collect(out);
  lin_key.collect(out);
  lin_value.collect(out);
  attn_out.collect(out);
  out.push_back(&norm1_weight);
  out.push_back(&norm1_bias);
  ffn_lin1.collect(out);
  ffn_lin2.collect(out);
  out.push_back(&norm2_weight);
  out.push_back(&norm2_bias);
  return out;
}

Var GraphTransformerBlock::forward(autograd::Tape& tape, const Graph& graph, Var x, uint64_t step_seed,
                                   Tensor* attention) {
  const std::string who = "GraphTransformerBlock " + lin_query.weight.name;
  if (graph.num_dst() != graph.num_src())
    raise<ShapeError>(who, ": graph has num_dst=", graph.num_dst(), ", num_src=", graph.num_src(),
                      ", expected a square graph");
  const int64_t n = graph.num_dst(), d = options_.channels, h = options_.heads, c = d / h;
  check_shape(who + ": x", tape.value(x), {n, d});
  const float p = options_.dropout;
  const float eps = options_.layer_norm_eps;

  auto norm = [&](Var z, autograd::Parameter& w, autograd::Parameter& b) {
    return autograd::layer_norm(tape, z, tape.parameter(w), tape.parameter(b), eps);
  };
  auto attend = [&](Var z) {
    const Var q = autograd::reshape(tape, lin_query.forward(tape, z), {n, h, c});
    const Var k = autograd::reshape(tape, lin_key.forward(tape, z), {n, h, c});
    const Var v = autograd::reshape(tape, lin_value.forward(tape, z), {n, h, c});
    AttentionConfig config{.score = Score::dot_product,
                           .scale = 1.f / std::sqrt(static_cast<float>(c)),
                           .dropout = options_.attention_dropout,
                           .seed = site_seed(step_seed, kAttention),
                           .return_attention = attention != nullptr};
    const Var a =
        autograd::graph_attention(tape, graph, {.query = q, .key = k, .value = v}, config, attention);
    return attn_out.forward(tape, autograd::reshape(tape, a, {n, d}));
  };
  auto ffn = [&](Var z) {
    Var u = ffn_lin1.forward(tape, z);
    u = options_.activation == FfnActivation::gelu ? autograd::gelu(tape, u) : autograd::relu(tape, u);
    u = autograd::dropout(tape, u, p, site_seed(step_seed, kInsideFfn));
    return ffn_lin2.forward(tape, u);
  };

  if (options_.pre_norm) {
    const Var hid = autograd::add(tape, x,
                                  autograd::dropout(tape, attend(norm(x, norm1_weight, norm1_bias)), p,
                                                    site_seed(step_seed, kAfterAttention)));
    return autograd::add(tape, hid,
                         autograd::dropout(tape, ffn(norm(hid, norm2_weight, norm2_bias)), p,
                                           site_seed(step_seed, kAfterFfn)));
  }
  const Var hid = norm(
      autograd::add(tape, x, autograd::dropout(tape, attend(x), p, site_seed(step_seed, kAfterAttention))),
      norm1_weight, norm1_bias);
  return norm(autograd::add(tape, hid, autograd::dropout(tape, ffn(hid), p, site_seed(step_seed, kAfterFfn))),
              norm2_weight, norm2_bias);
}

}  // namespace edgeattn::nn
