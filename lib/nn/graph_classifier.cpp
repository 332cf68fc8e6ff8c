#include "edgeattn/nn/graph_classifier.hpp"

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/error.hpp"

namespace edgeattn::nn {

Readout parse_readout(const std::string& name) {
  if (name == "sum" || name == "add") return Readout::sum;
  if (name == "mean") return Readout::mean;
  if (name == "max") return Readout::max;
  if (name == "attention") return Readout::attention;
  raise<InvalidArgument>("unknown readout '", name, "' (known: sum, mean, max, attention)");
}

const char* to_string(Readout r) {
  switch (r) {
    case Readout::sum:
      return "sum";
    case Readout::mean:
      return "mean";
    case Readout::max:
      return "max";
    case Readout::attention:
      break;
  }
  return "attention";
}

void GraphClassifierConfig::validate() const {
  encoder.validate();
  if (num_classes < 2)
    raise<InvalidArgument>("GraphClassifierConfig: num_classes is ", num_classes, ", expected >= 2");
  if (!(dropout >= 0.f && dropout < 1.f))
    raise<InvalidArgument>("GraphClassifierConfig: dropout is ", dropout, ", expected in [0, 1)");
}

namespace {
const GraphClassifierConfig& checked(const GraphClassifierConfig& c) {
  c.validate();
  return c;
}
}  // namespace

GraphClassifier::GraphClassifier(const GraphClassifierConfig& config)
    : config_(checked(config)),
      encoder_(config.encoder),
      classifier_("classifier", config.encoder.num_classes, config.num_classes, /*bias=*/true,
                  LinearInit::torch_default, config.seed) {
  if (config.readout == Readout::attention)
    gate_.emplace("gate", config.encoder.num_classes, 1, /*bias=*/true, LinearInit::torch_default,
                  config.seed);
}

autograd::Var GraphClassifier::forward(autograd::Tape& tape, const Graph& graph, const data::Features& x,
                                       std::span<const int64_t> graph_ptr, uint64_t step_seed) {
  using namespace autograd;
  const Var h = elu(tape, encoder_.forward(tape, graph, x, step_seed), 1.f);  // [N, E]
  Var pooled;
  if (gate_) {
    pooled = global_attention_pool(tape, h, gate_->forward(tape, h), graph_ptr);
  } else {
    const Pooling kind = config_.readout == Readout::sum   ? Pooling::sum
                         : config_.readout == Readout::max ? Pooling::max
                                                           : Pooling::mean;
    pooled = global_pool(tape, h, graph_ptr, kind);
  }
  if (config_.dropout > 0.f) pooled = dropout(tape, pooled, config_.dropout, step_seed ^ 0x5bd1e995u);
  return classifier_.forward(tape, pooled);
}

std::vector<autograd::Parameter*> GraphClassifier::parameters() {
  std::vector<autograd::Parameter*> out = encoder_.parameters();
  if (gate_) gate_->collect(out);
  classifier_.collect(out);
  return out;
}

}  // namespace edgeattn::nn
