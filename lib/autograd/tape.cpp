#include "edgeattn/autograd/tape.hpp"

#include <utility>

#include "autograd/elementwise.hpp"
#include "edgeattn/core/error.hpp"

namespace edgeattn::autograd {
namespace {

const Tensor& value_of(const Tape* /*unused*/, const Tensor& owned, const Tensor* borrowed,
                       const Parameter* p) {
  if (p) return p->value;
  if (borrowed) return *borrowed;
  return owned;
}

}  // namespace

void Parameter::zero_grad() {
  if (grad.absent() || !(grad.shape() == value.shape())) grad = Tensor::uninitialized(value.shape());
  detail::zero_into(grad.data(), grad.numel());
}

// ---- BackwardContext ----------------------------------------------------------------------------

const Tensor& BackwardContext::grad_out() const { return tape_->nodes_[static_cast<size_t>(node_)].grad; }

const Tensor& BackwardContext::out() const {
  const auto& n = tape_->nodes_[static_cast<size_t>(node_)];
  return value_of(tape_, n.value, n.borrowed, n.param);
}

Tensor& BackwardContext::mutable_out() { return tape_->nodes_[static_cast<size_t>(node_)].value; }

const Tensor& BackwardContext::value(Var v) const { return tape_->value(v); }

bool BackwardContext::needs_grad(Var v) const { return v.defined() && tape_->requires_grad(v); }

Tensor& BackwardContext::grad(Var v) {
  (void)tape_->node(v, "backward: grad");
  return tape_->grad_storage(v.index());
}

void BackwardContext::add_grad(Var v, Tensor&& g) {
  if (!needs_grad(v)) return;
  auto& n = tape_->nodes_[static_cast<size_t>(v.index())];
  const Tensor& value = value_of(tape_, n.value, n.borrowed, n.param);
  if (!(g.shape() == value.shape()))
    raise<ShapeError>("autograd: gradient for '", n.op, "' has shape ", g.shape().str(), ", expected ",
                      value.shape().str());
  if (!n.param && n.grad.absent()) {
    n.grad = std::move(g);
    return;
  }
  Tensor& dst = tape_->grad_storage(v.index());
  detail::add_into(dst.data(), g.data(), g.numel());
}

Tensor BackwardContext::take_grad_out() {
  Tensor& g = tape_->nodes_[static_cast<size_t>(node_)].grad;
  if (!tape_->release_in_backward || g.shares_storage()) return Tensor(g);
  Tensor taken = std::move(g);
  g = Tensor();
  return taken;
}

void BackwardContext::release_out() {
  Tape::Node& n = tape_->nodes_[static_cast<size_t>(node_)];
  if (tape_->release_in_backward && !n.param && !n.borrowed) n.value = Tensor();
}

// ---- Tape ---------------------------------------------------------------------------------------

const Tape::Node& Tape::node(Var v, const char* what) const {
  if (!v.defined()) raise<InvalidArgument>("autograd: ", what, " is not given (an empty Var)");
  if (v.tape_ != this || v.index_ < 0 || v.index_ >= size())
    raise<InvalidArgument>("autograd: ", what, " (node ", v.index_, ") is not a variable of this tape (",
                           size(), " nodes); was the tape cleared?");
  return nodes_[static_cast<size_t>(v.index_)];
}

Var Tape::push(Node n) {
  if (profiling) {
    const auto now = std::chrono::steady_clock::now();
    OpTime& t = profile_[n.op];
    t.forward_seconds += std::chrono::duration<double>(now - last_record_).count();
    ++t.forward_calls;
    last_record_ = now;
  }
  nodes_.push_back(std::move(n));
  return Var(this, static_cast<int32_t>(nodes_.size() - 1));
}

Var Tape::constant(Tensor value) {
  Node n;
  n.op = "constant";
  n.value = std::move(value);
  return push(std::move(n));
}

Var Tape::constant_ref(const Tensor& value) {
  Node n;
  n.op = "constant";
  n.borrowed = &value;
  return push(std::move(n));
}

Var Tape::parameter(Parameter& p) {
  if (p.value.absent()) raise<InvalidArgument>("autograd: parameter '", p.name, "' has no value");
  if (p.grad.absent())
    p.grad = Tensor(p.value.shape());
  else if (!(p.grad.shape() == p.value.shape()))
    raise<ShapeError>("autograd: parameter '", p.name, "' has grad of shape ", p.grad.shape().str(),
                      ", expected the value's shape ", p.value.shape().str());
  Node n;
  n.op = "parameter";
  n.param = &p;
  n.requires_grad = true;
  return push(std::move(n));
}

Var Tape::record(const char* op, Tensor value, std::initializer_list<Var> inputs, BackwardFn backward) {
  Node n;
  n.op = op;
  n.value = std::move(value);
  for (const Var& in : inputs)
    if (in.defined()) n.requires_grad = n.requires_grad || node(in, op).requires_grad;
  if (n.requires_grad) n.backward = std::move(backward);
  return push(std::move(n));
}

const Tensor& Tape::value(Var v) const {
  const Node& n = node(v, "value");
  if (n.released)
    raise<InvalidArgument>(
        "autograd: value of node ", v.index_, " ('", n.op,
        "') was released (by backward() with release_in_backward, or take_value); read it before");
  return value_of(this, n.value, n.borrowed, n.param);
}

Tensor Tape::take_value(Var v) {
  const Tensor& current = value(v);
  Node& n = nodes_[static_cast<size_t>(v.index_)];
  Tensor out = (n.param || n.borrowed) ? Tensor(current) : std::move(n.value);
  n.value = Tensor();
  n.grad = Tensor();
  n.backward = nullptr;
  n.released = true;
  released_ = true;
  return out;
}

const Tensor& Tape::grad(Var v) const {
  const Node& n = node(v, "grad");
  if (n.released)
    raise<InvalidArgument>("autograd: gradient of node ", v.index_, " ('", n.op,
                           "') was released (by backward() with release_in_backward, or take_value)");
  return n.param ? n.param->grad : n.grad;
}

bool Tape::requires_grad(Var v) const { return node(v, "requires_grad").requires_grad; }

const char* Tape::op_name(Var v) const { return node(v, "op_name").op; }

Tensor& Tape::grad_storage(int32_t index) {
  Node& n = nodes_[static_cast<size_t>(index)];
  if (n.param) return n.param->grad;
  if (n.grad.absent()) {
    n.grad = Tensor::uninitialized(value_of(this, n.value, n.borrowed, n.param).shape());
    detail::zero_into(n.grad.data(), n.grad.numel());
  } else if (n.grad.shares_storage()) {
    // A gradient handed on without a copy (e.g. reshape's): copy it before it is written, so the
    // other holder still reads its own value.
    n.grad = Tensor(n.grad);
  }
  return n.grad;
}

void Tape::backward(Var loss) {
  if (released_)
    raise<InvalidArgument>(
        "autograd: backward: this tape's values were released (by a backward() with "
        "release_in_backward, or take_value); clear() it and record the forward again");
  const Node& l = node(loss, "backward: loss");
  const Tensor& lv = value_of(this, l.value, l.borrowed, l.param);
  if (lv.numel() != 1 || lv.rank() > 1)
    raise<ShapeError>("autograd: backward: loss has shape ", lv.shape().str(),
                      ", expected a scalar (shape [] or [1])");
  backward_ops_run_ = 0;
  for (Node& n : nodes_) n.grad = Tensor();
  if (!l.requires_grad) return;  // no parameter feeds the loss: every gradient is zero
  grad_storage(loss.index()).data()[0] += 1.f;
  const bool release = release_in_backward;
  if (release) released_ = true;
  for (int32_t k = loss.index(); k >= 0; --k) {
    Node& n = nodes_[static_cast<size_t>(k)];
    // Nodes k + 1 .. loss have run: none of them reads node k again, and no earlier node reads it.
    const auto release_node = [&] {
      if (!release || n.param || n.borrowed) return;
      n.value = Tensor();
      n.grad = Tensor();
      n.backward = nullptr;
      n.released = true;
    };
    if (!n.backward || n.grad.absent()) {
      release_node();
      continue;
    }
    BackwardContext ctx(this, k);
    if (profiling) {
      const auto start = std::chrono::steady_clock::now();
      n.backward(ctx);
      OpTime& t = profile_[n.op];
      t.backward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++t.backward_calls;
    } else {
      n.backward(ctx);
    }
    ++backward_ops_run_;
    release_node();
  }
}

void Tape::clear() {
  nodes_.clear();
  released_ = false;
  backward_ops_run_ = 0;
  last_record_ = std::chrono::steady_clock::now();
}

}  // namespace edgeattn::autograd
