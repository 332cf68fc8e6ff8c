// edgeattn bench layer: one attention layer (PyG semantics) on an input of `bench write-inputs`,
// timed forward and forward + backward, for the peer suite's layer workload.
#include <functional>
#include <iostream>
#include <optional>

#include "args.hpp"
#include "commands.hpp"
#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/gatv2_conv.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
#include "edgeattn/nn/transformer_conv.hpp"
#include "json.hpp"
#include "peer_inputs.hpp"
#include "timing.hpp"

namespace edgeattn::cli {

int run_bench_layer(std::span<const std::string> argv) {
  Args args("edgeattn bench layer",
            "Times one layer with PyTorch Geometric's semantics and defaults on an input of `bench\n"
            "write-inputs`: GATConv / GATv2Conv / TransformerConv(in_channels = F, out_channels = --hidden,\n"
            "heads = --heads, concat = True, dropout 0; GAT and GATv2 add self-loops, as PyG does),\n"
            "applied to attr_matrix [N, F]. forward_ms: the forward; forward_backward_ms: forward, the sum\n"
            "of the outputs as the loss, and backward into the parameters; both medians of --repeat runs\n"
            "after one warm-up. The self-loop preparation of the graph (once per graph, as in training) is\n"
            "reported separately as prepare_ms. Prints one JSON object: library, version, input, layer,\n"
            "nodes, edges (as stored in the input), heads, hidden, in_channels, threads, repeat,\n"
            "parameters, prepare_ms, forward_ms, forward_backward_ms, peak_rss_mb.");
  args.option("input", "FILE", "", "an .npz written by `edgeattn bench write-inputs` (required)")
      .option("layer", "L", "gat", "gat | gatv2 | transformer")
      .option("heads", "H", "8", "attention heads")
      .option("hidden", "D", "8", "output channels per head")
      .option("threads", "T", "all cores", "worker threads")
      .option("repeat", "R", "5", "timed runs per measurement; the median is reported")
      .option("seed", "S", "0", "seed of the layer's weights");
  if (!args.parse(argv)) {
    std::cout << args.help();
    return 0;
  }
  if (!args.given("input")) throw UsageError("--input FILE is required");
  const std::string layer = args.str("layer");
  if (layer != "gat" && layer != "gatv2" && layer != "transformer")
    throw UsageError("--layer is '" + layer + "', expected gat, gatv2 or transformer");
  std::optional<ThreadLimit> limit;
  if (args.given("threads")) limit.emplace(static_cast<int>(args.integer("threads", 1, 1 << 16)));
  const int64_t heads = args.integer("heads", 1, 4096);
  const int64_t hidden = args.integer("hidden", 1, 1 << 20);
  const int repeat = static_cast<int>(args.integer("repeat", 1, 1000));
  const auto seed = static_cast<uint64_t>(args.integer("seed", 0));

  const PeerInput input = load_peer_input(args.str("input"));
  const Tensor& x = input.dataset.features.dense();
  const int64_t in = x.dim(1);

  std::optional<nn::GATConv> gat;
  std::optional<nn::GATv2Conv> gatv2;
  std::optional<nn::TransformerConv> transformer;
  std::vector<autograd::Parameter*> params;
  bool self_loops = true;
  // PyG's defaults otherwise (concat, no dropout, bias; GAT/GATv2 add self-loops)
  const auto sized = [&](auto options) {
    options.in_channels = in;
    options.out_channels = hidden;
    options.heads = heads;
    return options;
  };
  if (layer == "gat") {
    gat.emplace(sized(nn::GATConvOptions()), "conv", seed);
    params = gat->parameters();
  } else if (layer == "gatv2") {
    gatv2.emplace(sized(nn::GATv2ConvOptions()), "conv", seed);
    params = gatv2->parameters();
  } else {
    transformer.emplace(sized(nn::TransformerConvOptions()), "conv", seed);
    params = transformer->parameters();
    self_loops = false;
  }
  Graph g;
  const double prepare_ms = time_ms([&] { g = nn::prepare_graph(input.dataset.graph, self_loops); });

  const auto forward = [&](autograd::Tape& tape) {
    const autograd::Var xv = tape.constant_ref(x);
    if (gat) return gat->forward(tape, g, xv, 0);
    if (gatv2) return gatv2->forward(tape, g, xv, 0);
    return transformer->forward(tape, g, xv, 0);
  };
  const double forward_ms = median_ms(repeat, [&] {
    autograd::Tape tape;
    (void)forward(tape);
  });
  const double forward_backward_ms = median_ms(repeat, [&] {
    autograd::Tape tape;
    const autograd::Var out = forward(tape);
    tape.backward(autograd::sum(tape, out));
  });
  int64_t num_params = 0;
  for (const autograd::Parameter* p : params) num_params += p->value.numel();

  JsonObject json;
  json.field("library", "edgeattn")
      .field("version", tool_version())
      .field("input", input.path)
      .field("layer", layer)
      .field("nodes", input.dataset.num_nodes())
      .field("edges", input.dataset.num_edges())
      .field("heads", heads)
      .field("hidden", hidden)
      .field("in_channels", in)
      .field("threads", max_threads())
      .field("repeat", repeat)
      .field("parameters", num_params)
      .field("prepare_ms", prepare_ms)
      .field("forward_ms", forward_ms)
      .field("forward_backward_ms", forward_backward_ms)
      .field("peak_rss_mb", peak_rss_mb());
  std::cout << json.str() << std::endl;
  return 0;
}

}  // namespace edgeattn::cli
