// The autograd tape: a forward computation recorded as a list of nodes, replayed in reverse to
// compute gradients.
//
// A `Tape` is used for one training step: ops (autograd/ops.hpp) compute their output eagerly,
// then `record` it together with a backward function that reads the output gradient and adds
// into the gradients of its inputs. `backward(loss)` seeds d loss = 1 and runs the recorded
// backward functions in reverse order, skipping every node that no Parameter depends on (or that
// the loss does not depend on); parameter gradients are accumulated into `Parameter::grad`.
// Nothing is global: a tape owns its intermediate values and gradients, parameters are owned by
// layers and must outlive the tape's use of them. Call `clear()` (or use a new tape) per step.
//
// Gradients of intermediate values are allocated lazily, only for nodes that need them, and the
// first gradient an op produces as a fresh tensor is moved in rather than copied (`add_grad`).
//
// Example (one step of logistic regression):
//   edgeattn::autograd::Parameter w{"weight", Tensor({classes, in})}, b{"bias", Tensor({classes})};
//   edgeattn::autograd::Tape tape;                         // tape.training = true
//   Var x = tape.constant(features);                       // [N, in]
//   Var logits = linear(tape, x, tape.parameter(w), tape.parameter(b));   // [N, classes]
//   Var loss = cross_entropy(tape, logits, labels, train_ids);            // rank 0
//   tape.backward(loss);                                    // w.grad, b.grad now hold dloss/dw, dloss/db
//   float l = tape.value(loss).data()[0];
//
// Writing an op (see lib/autograd/ops/ for many):
//   Var twice(Tape& tape, Var x) {
//     Tensor y(tape.value(x));                             // compute the output
//     for (float& v : y.span()) v *= 2.f;
//     return tape.record("twice", std::move(y), {x}, [x](BackwardContext& ctx) {
//       if (!ctx.needs_grad(x)) return;
//       Tensor& dx = ctx.grad(x);                          // zero-initialised on first use
//       for (int64_t i = 0; i < dx.numel(); ++i) dx.data()[i] += 2.f * ctx.grad_out().data()[i];
//     });
//   }
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::autograd {

/// A trainable tensor and its gradient, owned by a layer (or a test). `grad` has the shape of
/// `value`; Tape::parameter allocates it (zeros) when absent, and backward adds into it.
struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;

  /// Sets grad to zeros (allocating it when absent).
  void zero_grad();
};

class Tape;

/// Handle to a value recorded on a tape: the tape's address and the node index. Cheap to copy.
/// A default-constructed Var is "none" (e.g. an absent optional bias).
class Var {
 public:
  Var() = default;
  bool defined() const { return tape_ != nullptr; }
  explicit operator bool() const { return defined(); }
  int32_t index() const { return index_; }

 private:
  friend class Tape;
  Var(const Tape* tape, int32_t index) : tape_(tape), index_(index) {}
  const Tape* tape_ = nullptr;
  int32_t index_ = -1;
};

/// What a backward function sees: the node's output and its gradient, and the tape's inputs.
class BackwardContext {
 public:
  /// dloss/d(output), shape of the output.
  const Tensor& grad_out() const;
  /// The node's output value.
  const Tensor& out() const;
  /// The output value, mutable, for kernels that want it inside a result struct (moved out and
  /// back). It must hold the same value again when the backward function returns.
  Tensor& mutable_out();
  const Tensor& value(Var v) const;
  /// True when `v` is defined and some parameter feeds it: only then is its gradient wanted.
  bool needs_grad(Var v) const;
  /// The gradient of `v` to add into (allocated as zeros on first use; for a parameter, its
  /// Parameter::grad). Call only when needs_grad(v).
  Tensor& grad(Var v);
  /// Adds `g` (shape of v) into v's gradient; moves it in when v has no gradient yet. No-op when
  /// !needs_grad(v).
  void add_grad(Var v, Tensor&& g);
  /// The node's gradient dy to overwrite in place, for element-wise backward functions that turn
  /// dy into an input's gradient (then add_grad it): moved out when the tape releases the node
  /// after this backward anyway (Tape::release_in_backward) and no other tensor shares it, else a
  /// copy. grad_out() is absent afterwards when it was moved.
  Tensor take_grad_out();
  /// Frees the node's output now, when the tape would free it after this backward anyway
  /// (Tape::release_in_backward); otherwise does nothing. For a backward that reads its output
  /// only in a first step and then allocates more: the output's memory is reused. out() must not
  /// be read afterwards.
  void release_out();

 private:
  friend class Tape;
  BackwardContext(Tape* tape, int32_t node) : tape_(tape), node_(node) {}
  Tape* tape_;
  int32_t node_;
};

using BackwardFn = std::function<void(BackwardContext&)>;

/// Time spent per op while Tape::profiling is on (see Tape::profile).
struct OpTime {
  double forward_seconds = 0, backward_seconds = 0;
  int64_t forward_calls = 0, backward_calls = 0;
};

class Tape {
 public:
  /// Training mode: dropout is active. Set false for evaluation (dropout becomes the identity).
  bool training = true;
  /// When true, time is accumulated per op name into profile(), across clear(). An op's forward
  /// time is the time since the previous node was recorded (ops compute, then record; clear()
  /// restarts the clock), its backward time that of its backward function.
  bool profiling = false;
  /// When true, backward() frees each recorded node's value, gradient and backward function as
  /// soon as no remaining backward function can read them: right after the node's own backward
  /// (its consumers, recorded later, ran before it). Peak memory is then about the forward's
  /// activations rather than activations plus every gradient, and the blocks freed early are
  /// reused (tensor cache) for the gradients still to come. Afterwards only parameter gradients
  /// (Parameter::grad) remain: value() and grad() of a released node, and a second backward(),
  /// throw InvalidArgument. Parameters and constant_refs, which the tape does not own, are never
  /// released. Read what you need (the loss) before backward().
  bool release_in_backward = false;

  Tape() = default;
  Tape(const Tape&) = delete;  // Vars point at their tape
  Tape& operator=(const Tape&) = delete;

  /// A value no gradient flows to (features, targets). The tape takes the tensor.
  Var constant(Tensor value);
  /// A constant that is not copied: `value` must outlive every use of the tape.
  Var constant_ref(const Tensor& value);
  /// A trainable value: `p` must outlive every use of the tape. Allocates p.grad (zeros) when
  /// absent; ShapeError when p.grad exists with another shape.
  Var parameter(Parameter& p);

  /// Records an op's output. `backward` is kept only when some input needs a gradient (else the
  /// node is a constant and the function, with whatever it captured, is dropped at once).
  /// `op` names the op (a string literal) for errors and profiles.
  Var record(const char* op, Tensor value, std::initializer_list<Var> inputs, BackwardFn backward);

  /// The value of `v`. InvalidArgument if `v` is none or from another tape, or was released (see
  /// release_in_backward). The reference stays valid until clear() (nodes never move).
  const Tensor& value(Var v) const;
  const Shape& shape(Var v) const { return value(v).shape(); }
  /// Moves the value of `v` out of the tape (a copy for a parameter or constant_ref, which the
  /// tape does not own): for a result that outlives the tape without a second copy of it, e.g.
  /// one layer's output in layer-wise inference (nn::Model::inference). The node is released:
  /// value() and grad() of it, and backward(), throw InvalidArgument until clear().
  Tensor take_value(Var v);
  /// The gradient of `v` from the last backward (for a parameter, Parameter::grad); absent when
  /// no gradient reached it.
  const Tensor& grad(Var v) const;
  /// True when some parameter feeds `v`.
  bool requires_grad(Var v) const;
  /// The op that produced `v` ("constant", "parameter", "linear", ...).
  const char* op_name(Var v) const;

  /// Seeds dloss/dloss = 1 and runs the backward functions of the nodes up to `loss`, in
  /// reverse. `loss` must hold one element (shape [] or [1]; ShapeError otherwise). Gradients of
  /// intermediate values from an earlier backward are discarded first, so calling it twice adds
  /// the parameter gradients twice and nothing else.
  void backward(Var loss);
  /// Number of backward functions the last backward() ran (nodes skipped are not counted).
  int64_t backward_ops_run() const { return backward_ops_run_; }

  /// Forgets every node (values, gradients, backward functions). Existing Vars become invalid.
  /// The profile is kept.
  void clear();
  /// Per-op times accumulated while `profiling` was on, by op name ("linear", "graph_attention", ...).
  const std::map<std::string, OpTime>& profile() const { return profile_; }
  void reset_profile() { profile_.clear(); }
  int64_t size() const { return static_cast<int64_t>(nodes_.size()); }

 private:
  friend class BackwardContext;
  struct Node {
    const char* op = "";
    Tensor value;                      // owned value (ops and constants)
    const Tensor* borrowed = nullptr;  // constant_ref
    Parameter* param = nullptr;        // parameters: value and grad live there
    Tensor grad;                       // intermediates, allocated lazily
    BackwardFn backward;
    bool requires_grad = false;
    bool released = false;  // value, grad and backward freed by backward() (release_in_backward)
  };
  const Node& node(Var v, const char* what) const;
  Var push(Node n);
  Tensor& grad_storage(int32_t index);

  std::deque<Node> nodes_;  // a deque: references to values stay valid as nodes are added
  int64_t backward_ops_run_ = 0;
  bool released_ = false;  // some node was released: no second backward until clear()
  std::map<std::string, OpTime> profile_;
  std::chrono::steady_clock::time_point last_record_ = std::chrono::steady_clock::now();
};

}  // namespace edgeattn::autograd
