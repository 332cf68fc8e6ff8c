// The halo exchange of distributed full-graph training, as an autograd op.
//
// Forward: a layer's output for the owned nodes, h [num_owned, ...], becomes the next layer's
// input for all local sources [num_owned + num_halo, ...]: the owned rows, then the halo rows
// received from their owners (one MPI_Alltoallv; rows sent are p.send_index, rows received land in
// halo order). Backward: the reverse exchange. The gradient of each halo row goes back to its
// owner, which adds it to the owned row's gradient (its own part first, then the ranks' parts in
// rank order: a fixed order, so the gradient does not depend on timing).
//
// Every rank must record the same sequence of exchanges (one per layer after the first) and run
// backward on them: both directions are collectives. The backward exchanges even where no
// gradient is needed locally, so ranks never wait for one another.
//
// Example (the input of layer l + 1 on this rank):
//   Var h = conv_l(...);                                   // [num_owned, H * C]
//   Var x_src = dist::halo_exchange(tape, h, part, comm);  // [num_src, H * C]
#pragma once

#include "edgeattn/autograd/ops/shape.hpp"
#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/dist/communicator.hpp"
#include "edgeattn/dist/local_partition.hpp"

namespace edgeattn::dist {

/// h: [p.num_owned(), ...] -> [p.num_src(), ...] (same trailing dims). ShapeError otherwise.
/// autograd::expand_sources with halo_expansion(p, comm).
autograd::Var halo_exchange(autograd::Tape& tape, autograd::Var h, const LocalPartition& p,
                            Communicator& comm);

/// The forward alone, on values: owned rows [p.num_owned(), ...] -> [p.num_src(), ...].
Tensor exchange_halo(ConstView owned_rows, const LocalPartition& p, Communicator& comm);

/// The backward alone, on values: a gradient over the sources [p.num_src(), ...] -> the owned
/// rows' [p.num_owned(), ...]: each owned row's own part, then what the ranks that hold it as a
/// halo row send back, in rank order.
Tensor reduce_halo(ConstView source_rows, const LocalPartition& p, Communicator& comm);

/// exchange_halo and reduce_halo as an autograd::SourceExpansion, for the ops that take one
/// (expand_sources; gat_attention, which exchanges a layer's projected rows rather than its
/// input). p and comm must outlive every tape that records an op with it.
autograd::SourceExpansion halo_expansion(const LocalPartition& p, Communicator& comm);

}  // namespace edgeattn::dist
