#include "edgeattn/nn/linear.hpp"

#include <cmath>

#include "edgeattn/autograd/ops/dropout.hpp"
#include "edgeattn/autograd/ops/linear.hpp"
#include "edgeattn/autograd/ops/shape.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/nn/init.hpp"

namespace edgeattn::nn {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

NodeInput NodeInput::dropped(NodeInput in, float p, uint64_t seed) {
  if (!(p >= 0.f && p < 1.f))
    raise<InvalidArgument>("NodeInput::with_dropout: p is ", p, ", expected in [0, 1)");
  in.dropout_p_ = p;
  in.dropout_seed_ = seed;
  return in;
}

NodeInput NodeInput::with_dropout(autograd::Var x, float p, uint64_t seed) { return dropped(x, p, seed); }

NodeInput NodeInput::with_dropout(const CsrMatrix& x, float p, uint64_t seed) { return dropped(x, p, seed); }

NodeInput NodeInput::selected_rows(autograd::Var x, std::shared_ptr<const std::vector<int64_t>> rows, float p,
                                   uint64_t seed) {
  if (!rows)
    raise<InvalidArgument>("NodeInput::selected_rows: rows is null, expected the selected rows' indices");
  NodeInput in = dropped(x, p, seed);
  in.selection_ = std::move(rows);
  return in;
}

NodeInput NodeInput::materialized(autograd::Tape& tape) const {
  if (!selection_) return *this;
  return with_dropout(tape.constant(gather_rows(tape.value(dense_).view(), *selection_)), dropout_p_,
                      dropout_seed_);
}

NodeInput NodeInput::first_rows(autograd::Tape& tape, int64_t rows) const {
  if (this->rows(tape) < rows)
    raise<ShapeError>("NodeInput::first_rows: x has ", this->rows(tape), " rows, cannot take its first ",
                      rows, " (a block's destinations are its first sources)");
  if (selection_) {  // the selection's first rows: their element indices, hence their mask, are the same
    auto first =
        std::make_shared<const std::vector<int64_t>>(selection_->begin(), selection_->begin() + rows);
    return selected_rows(dense_, std::move(first), dropout_p_, dropout_seed_);
  }
  if (!sparse_) return with_dropout(autograd::leading_rows(tape, dense_, rows), dropout_p_, dropout_seed_);
  raise<InvalidArgument>("NodeInput::first_rows: x is sparse (take its rows with CsrMatrix::select_rows)");
}

int64_t NodeInput::rows(const autograd::Tape& tape) const {
  if (sparse_) return sparse_->rows();
  if (selection_) return static_cast<int64_t>(selection_->size());
  const Tensor& v = tape.value(dense_);
  return v.rank() >= 1 ? v.dim(0) : 0;
}

int64_t NodeInput::cols(const autograd::Tape& tape) const {
  if (sparse_) return sparse_->cols();
  const Tensor& v = tape.value(dense_);
  return v.rank() >= 2 ? v.dim(v.rank() - 1) : 0;
}

void NodeInput::check(const autograd::Tape& tape, const std::string& who, int64_t rows, int64_t cols) const {
  if (!sparse_ && !selection_) {
    check_shape(who + ": x", tape.value(dense_), {rows, cols});
    return;
  }
  // Sparse, or a row selection: the shape is rows() x cols(), not a tensor's.
  const int64_t have_rows = this->rows(tape), have_cols = this->cols(tape);
  if ((rows != kAny && have_rows != rows) || (cols != kAny && have_cols != cols))
    raise<ShapeError>(who, ": x (", sparse_ ? "sparse" : "a row selection", ") has shape [", have_rows, ", ",
                      have_cols, "], expected [", rows == kAny ? std::string("*") : std::to_string(rows),
                      ", ", cols == kAny ? std::string("*") : std::to_string(cols), "]");
}

Linear::Linear(const std::string& name, int64_t in_channels, int64_t out_channels, bool bias, LinearInit init,
               uint64_t seed, bool zero_bias)
    : in_(in_channels), out_(out_channels), has_bias_(bias) {
  if (in_channels < 1 || out_channels < 1)
    raise<InvalidArgument>("Linear ", name, ": in_channels=", in_channels, ", out_channels=", out_channels,
                           ", expected both >= 1");
  weight.name = join_name(name, "weight");
  weight.value = init == LinearInit::glorot
                     ? glorot({out_channels, in_channels}, derive_seed(seed, weight.name))
                     : torch_linear_weight({out_channels, in_channels}, derive_seed(seed, weight.name));
  if (bias) {
    this->bias.name = join_name(name, "bias");
    this->bias.value = zero_bias ? zeros({out_channels})
                                 : uniform({out_channels}, 1.f / std::sqrt(static_cast<float>(in_channels)),
                                           derive_seed(seed, this->bias.name));
  }
}

autograd::Var Linear::forward(autograd::Tape& tape, const NodeInput& x) {
  x.check(tape, "Linear " + weight.name, kAny, in_);
  const autograd::Var w = tape.parameter(weight);
  const autograd::Var b = has_bias_ ? tape.parameter(bias) : autograd::Var{};
  // dropout_linear is the plain linear map at p = 0 (and when not training).
  if (x.is_sparse())
    return autograd::dropout_linear(tape, CsrMatrix(x.sparse()), x.dropout_p(), x.dropout_seed(), w, b);
  if (x.has_row_selection())  // the rows read in place, at any p
    return autograd::dropout_linear(tape, x.dense(), x.selection(), x.dropout_p(), x.dropout_seed(), w, b);
  if (x.dropout_p() > 0.f)
    return autograd::dropout_linear(tape, x.dense(), x.dropout_p(), x.dropout_seed(), w, b);
  return autograd::linear(tape, x.dense(), w, b);
}

void Linear::collect(std::vector<autograd::Parameter*>& out) {
  out.push_back(&weight);
  if (has_bias_) out.push_back(&bias);
}

}  // namespace edgeattn::nn
