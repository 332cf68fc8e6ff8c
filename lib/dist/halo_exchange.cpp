#include "edgeattn/dist/halo_exchange.hpp"

#include <cstring>
#include <string>

#include "edgeattn/core/error.hpp"

namespace edgeattn::dist {
namespace {

// `shape` with its first dimension `rows`.
Shape with_rows(const Shape& shape, int64_t rows) {
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  dims[0] = rows;
  return Shape{std::span<const int64_t>(dims)};
}

// The output shape: h's with the first dimension num_src.
Shape expanded_shape(const Shape& shape, const LocalPartition& p) {
  if (shape.rank() < 1 || shape.dims()[0] != p.num_owned())
    raise<ShapeError>("halo_exchange: h has shape ", shape.str(), ", expected [num_owned=", p.num_owned(),
                      ", ...] (rank ", p.rank, "'s owned nodes)");
  return with_rows(shape, p.num_src());
}

void check_comm(const LocalPartition& p, const Communicator& comm) {
  if (comm.size() != p.parts || comm.rank() != p.rank)
    raise<InvalidArgument>("halo_exchange: the partition is rank ", p.rank, " of ", p.parts,
                           ", the communicator is ", comm.describe());
}

}  // namespace

Tensor exchange_halo(ConstView owned_rows, const LocalPartition& p, Communicator& comm) {
  check_comm(p, comm);
  Tensor out = Tensor::uninitialized(expanded_shape(owned_rows.shape(), p));
  const int64_t width = p.num_owned() > 0 ? owned_rows.numel() / p.num_owned() : 0;
  const float* h = owned_rows.data();
  float* y = out.data();
  if (owned_rows.numel() > 0) std::memcpy(y, h, sizeof(float) * static_cast<size_t>(owned_rows.numel()));
  std::vector<float> send(p.send_index.size() * static_cast<size_t>(width));
  for (size_t r = 0; r < p.send_index.size(); ++r)
    std::memcpy(send.data() + r * static_cast<size_t>(width),
                h + static_cast<int64_t>(p.send_index[r]) * width,
                sizeof(float) * static_cast<size_t>(width));
  comm.alltoallv_rows(send.data(), p.send_rows, y + p.num_owned() * width, p.recv_rows, width);
  return out;
}

Tensor reduce_halo(ConstView source_rows, const LocalPartition& p, Communicator& comm) {
  check_comm(p, comm);
  const Shape& shape = source_rows.shape();
  if (shape.rank() < 1 || shape.dims()[0] != p.num_src())
    raise<ShapeError>("halo_exchange (backward): the gradient has shape ", shape.str(),
                      ", expected [num_src=", p.num_src(), ", ...] (rank ", p.rank,
                      "'s owned and halo nodes)");
  Tensor out = Tensor::uninitialized(with_rows(shape, p.num_owned()));
  const int64_t width = p.num_src() > 0 ? source_rows.numel() / p.num_src() : 0;
  const float* g = source_rows.data();
  // Every rank takes part: the other ranks are waiting for these rows.
  std::vector<float> back(p.send_index.size() * static_cast<size_t>(width));
  comm.alltoallv_rows(g + p.num_owned() * width, p.recv_rows, back.data(), p.send_rows, width);
  float* dx = out.data();
  if (out.numel() > 0) std::memcpy(dx, g, sizeof(float) * static_cast<size_t>(out.numel()));
  for (size_t r = 0; r < p.send_index.size(); ++r) {
    float* row = dx + static_cast<int64_t>(p.send_index[r]) * width;
    const float* b = back.data() + r * static_cast<size_t>(width);
    for (int64_t f = 0; f < width; ++f) row[f] += b[f];
  }
  return out;
}

autograd::SourceExpansion halo_expansion(const LocalPartition& p, Communicator& comm) {
  check_comm(p, comm);
  return {.expand = [&p, &comm](ConstView owned) { return exchange_halo(owned, p, comm); },
          .reduce = [&p, &comm](ConstView sources) { return reduce_halo(sources, p, comm); },
          .parts = comm.size()};
}

autograd::Var halo_exchange(autograd::Tape& tape, autograd::Var h, const LocalPartition& p,
                            Communicator& comm) {
  return autograd::expand_sources(tape, h, halo_expansion(p, comm));
}

}  // namespace edgeattn::dist
