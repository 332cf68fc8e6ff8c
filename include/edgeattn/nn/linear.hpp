// Linear layer (torch.nn.Linear / torch_geometric.nn.Linear): y = x weight^T + bias.
//
//   weight: [out_channels, in_channels]   parameter "<name>.weight"
//   bias:   [out_channels]                parameter "<name>.bias" (absent when bias = false)
//
// The input is a `NodeInput`: a tape value x: [N, in] (dense), or a sparse constant CsrMatrix
// [N, in] (e.g. Cora's 1.3%-dense bag-of-words, after input dropout), which runs the sparse
// linear op: O(nnz * out) instead of O(N * in * out).
//
// Initialisation (`LinearInit`): `glorot` (PyG Linear(weight_initializer='glorot'), as in GATConv
// and GATv2Conv) or `torch_default` (PyG Linear's default and torch.nn.Linear: U(+-1/sqrt(in))),
// bias U(+-1/sqrt(in)) (PyG's default bias_initializer) or zeros (`zero_bias`).
//
// Example:
//   edgeattn::nn::Linear lin("conv1.lin", 1433, 64, /*bias=*/false, LinearInit::glorot, seed);
//   Var h = lin.forward(tape, x);     // x: CsrMatrix [N, 1433] or Var [N, 1433] -> [N, 64]
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/sparse_matrix.hpp"

namespace edgeattn::nn {

/// Node features entering a layer: a tape value [N, F] or a sparse constant [N, F]. Holds a
/// reference to the CsrMatrix, which must outlive the forward call.
///
/// A dense input may carry a dropout still to apply (`with_dropout`): Linear::forward then runs
/// autograd::dropout_linear, which never stores the dropped copy of x (for the input features of
/// a large graph, the largest tensor of a training step). Every Linear that reads the input
/// draws the same mask, as if they read one dropped tensor.
///
/// It may also be a row selection of a constant x (`selected_rows`: a sampled batch's input
/// nodes, rows of the whole feature matrix): Linear::forward reads those rows where they are
/// (autograd::dropout_linear's row selection), so the batch's features are never gathered into a
/// copy. A layer that needs the rows as one tensor takes `materialized(tape)`.
class NodeInput {
 public:
  NodeInput(autograd::Var x) : dense_(x) {}       // NOLINT(google-explicit-constructor)
  NodeInput(const CsrMatrix& x) : sparse_(&x) {}  // NOLINT(google-explicit-constructor)
  /// dropout(x, p, seed), applied by the layers that read it (p in [0, 1)).
  static NodeInput with_dropout(autograd::Var x, float p, uint64_t seed);
  /// The same for a sparse x: the layers apply autograd::dropout's sparse mask, keyed by x's
  /// (row, column) entries (x must outlive the forward; the ops that read it keep copies).
  static NodeInput with_dropout(const CsrMatrix& x, float p, uint64_t seed);
  /// dropout(x[rows], p, seed) for a constant x [M, F] (rows, each in [0, M), is shared, not
  /// copied): the input [rows.size(), F], its mask keyed by that input's element index.
  static NodeInput selected_rows(autograd::Var x, std::shared_ptr<const std::vector<int64_t>> rows, float p,
                                 uint64_t seed);
  bool is_sparse() const { return sparse_ != nullptr; }
  bool has_row_selection() const { return selection_ != nullptr; }
  /// The dense x, before any pending dropout (see dropout_p); with a row selection, the whole x
  /// the rows are selected from (see selection()).
  autograd::Var dense() const { return dense_; }
  /// The selected rows' indices into dense() (null without a selection).
  const std::shared_ptr<const std::vector<int64_t>>& selection() const { return selection_; }
  /// This input with its row selection gathered into a tape constant (itself when it has none),
  /// the pending dropout kept: for a layer that reads the rows as one tensor.
  NodeInput materialized(autograd::Tape& tape) const;
  /// The first `rows` rows of this input, the pending dropout kept (row i draws the mask it draws
  /// here): a block's destinations, the first of its sources.
  NodeInput first_rows(autograd::Tape& tape, int64_t rows) const;
  /// The pending dropout's probability (0: none) and seed.
  float dropout_p() const { return dropout_p_; }
  uint64_t dropout_seed() const { return dropout_seed_; }
  const CsrMatrix& sparse() const { return *sparse_; }
  int64_t rows(const autograd::Tape& tape) const;
  int64_t cols(const autograd::Tape& tape) const;
  /// ShapeError "<who>: x has shape [r, c], expected [rows, cols]" unless x is [rows, cols]
  /// (kAny matches any extent).
  void check(const autograd::Tape& tape, const std::string& who, int64_t rows, int64_t cols) const;

 private:
  static NodeInput dropped(NodeInput in, float p, uint64_t seed);

  autograd::Var dense_{};
  std::shared_ptr<const std::vector<int64_t>> selection_;
  const CsrMatrix* sparse_ = nullptr;
  float dropout_p_ = 0.f;
  uint64_t dropout_seed_ = 0;
};

enum class LinearInit { glorot, torch_default };

class Linear {
 public:
  /// `name` is the dotted prefix of the parameter names ("conv1.lin"); seeds derive from `seed`
  /// and the full parameter names. zero_bias: initialise the bias to zeros instead of U(+-1/sqrt(in)).
  Linear(const std::string& name, int64_t in_channels, int64_t out_channels, bool bias, LinearInit init,
         uint64_t seed, bool zero_bias = false);

  /// x: [N, in] (dense Var or sparse constant) -> [N, out]
  autograd::Var forward(autograd::Tape& tape, const NodeInput& x);

  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }
  bool has_bias() const { return has_bias_; }
  /// Appends weight (and bias) to `out`.
  void collect(std::vector<autograd::Parameter*>& out);

  autograd::Parameter weight;  ///< [out, in]
  autograd::Parameter bias;    ///< [out]; value absent when !has_bias()

 private:
  int64_t in_, out_;
  bool has_bias_;
};

/// "prefix.name", or "name" when prefix is empty.
std::string join_name(const std::string& prefix, const std::string& name);

}  // namespace edgeattn::nn
