// Graph-masked dot-product attention done the GraphBLAS way, with SuiteSparse:GraphBLAS (Davis,
// ACM TOMS 2019), as the peer benchmark's GraphBLAS baseline (`edgeattn bench graphblas`).
//
// Per head h, with X_h = the head's [N, d] slice of q = k = v (one full matrix, FullR):
//   S<M, structure> = X_h * X_h'      masked GrB_mxm, PLUS_TIMES: the SDDMM over the graph's
//                                     pattern M (row i = destination, column j = source)
//   S = S * (1 / sqrt(d))             GrB_apply with TIMES and a bound scalar
//   r = max over each row of S        GrB_reduce (MAX monoid) to a vector
//   S = diag(r) (+).(rminus) S        GrB_mxm with the diagonal matrix: S_ij - r_i (row scaling)
//   S = exp(S)                        GrB_apply (GxB_EXP_FP32)
//   r = sum over each row of S        GrB_reduce (PLUS monoid)
//   S = diag(r) (+).(rdiv) S          GrB_mxm: S_ij / r_i
//   O_h = S * X_h                     GrB_mxm, PLUS_TIMES: the SpMM
// and O_h is materialised (GrB_wait) before forward() returns, so a timing covers all the work.
// Rows without in-edges give zero output rows, as edgeattn's kernels do.
//
// Setup (importing the graph as a structural mask, copying each head's slice into a FullR matrix)
// happens in the constructor and is not part of forward().
//
// Example:
//   edgeattn::bench::GraphblasAttention gb(graph, x /*[N, H, d]*/, /*threads=*/2);
//   gb.forward();
//   edgeattn::Tensor out = gb.output();   // [N, H, d]
#pragma once

#include <memory>
#include <string>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::bench {

/// "SuiteSparse:GraphBLAS 7.4.0" (from GxB_IMPLEMENTATION_*).
std::string graphblas_version();

class GraphblasAttention {
 public:
  /// graph: N x N, CSR by destination; x: [N, H, d] used as queries, keys and values; `threads`
  /// becomes GraphBLAS's global GxB_NTHREADS. Throws ShapeError / Error naming the problem.
  GraphblasAttention(const Graph& graph, ConstView x, int threads);
  ~GraphblasAttention();
  GraphblasAttention(const GraphblasAttention&) = delete;
  GraphblasAttention& operator=(const GraphblasAttention&) = delete;

  /// The timed work: SDDMM, softmax and SpMM for every head.
  void forward();
  /// The last forward's output [N, H, d] (zeros where a row has no edges).
  Tensor output() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace edgeattn::bench
