#include "edgeattn/dist/halo_exchange.hpp"

#include <cstring>
#include <string>

#include "edgeattn/core/error.hpp"

namespace edgeattn::dist {
namespace {

// The output shape: h's with the first dimension num_src.
Shape expanded_shape(const Shape& shape, const LocalPartition& p) {
  if (shape.rank() < 1 || shape.dims()[0] != p.num_owned())
    raise<ShapeError>("halo_exchange: h has shape ", shape.str(), ", expected [num_owned=", p.num_owned(),
                      ", ...] (rank ", p.rank, "'s owned nodes)");
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  dims[0] = p.num_src();
  return Shape{std::span<const int64_t>(dims)};
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

autograd::Var halo_exchange(autograd::Tape& tape, autograd::Var h, const LocalPartition& p,
                            Communicator& comm) {
  Tensor y = exchange_halo(tape.value(h), p, comm);
  const int64_t width = p.num_owned() > 0 ? y.numel() / p.num_src() : 0;
  return tape.record(
      "halo_exchange", std::move(y), {h}, [h, &p, &comm, width](autograd::BackwardContext& ctx) {
        const Tensor& g = ctx.grad_out();
        // Every rank takes part, needed or not: the other ranks are waiting for these rows.
        std::vector<float> back(p.send_index.size() * static_cast<size_t>(width));
        comm.alltoallv_rows(g.data() + p.num_owned() * width, p.recv_rows, back.data(), p.send_rows, width);
        if (!ctx.needs_grad(h)) return;
        float* dx = ctx.grad(h).data();
        const float* gd = g.data();
        for (int64_t i = 0, n = p.num_owned() * width; i < n; ++i) dx[i] += gd[i];
        for (size_t r = 0; r < p.send_index.size(); ++r) {
          float* row = dx + static_cast<int64_t>(p.send_index[r]) * width;
          const float* b = back.data() + r * static_cast<size_t>(width);
          for (int64_t f = 0; f < width; ++f) row[f] += b[f];
        }
      });
}

}  // namespace edgeattn::dist
