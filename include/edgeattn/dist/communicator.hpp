// The communication a distributed run needs, behind one small interface.
//
// dist/ never talks to a transport of its own: MpiCommunicator (dist/mpi_communicator.hpp, built
// when CMake finds MPI) implements this over an MPI communicator, and SelfCommunicator is the
// one-process case (a run with one part, and the library built without MPI). Everything a
// distributed run exchanges is one of two collectives:
//   alltoallv_rows  rows of a dense [rows, width] float block, a different number to each rank
//                   (the halo exchange of dist/halo_exchange.hpp, forward and backward)
//   allgather       every rank's bytes to every rank, in rank order (gradients, metrics, checks)
// Reductions are done in rank order from an allgather (sum_in_rank_order), never by the
// transport's reduction tree: the sum is then the same on every rank and in every run, whatever
// the timing, which is what keeps replicated parameters identical across ranks.
//
// Every rank must call the same collectives in the same order. A rank that cannot go on calls
// abort(), which ends every rank of the job with its message (MPI_Abort): no rank is left waiting.
// The communicator counts what this rank sends to other ranks (traffic()): the measured bytes a
// benchmark reports.
//
// Example:
//   dist::SelfCommunicator comm;                       // or dist::MpiCommunicator(MPI_COMM_WORLD)
//   std::vector<float> g = ...;                        // this rank's partial gradient
//   dist::sum_in_rank_order(comm, g);                  // now the sum over ranks, on every rank
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace edgeattn::dist {

/// What one rank has sent to the other ranks (rows it passes to itself are not counted).
struct Traffic {
  int64_t row_bytes = 0;       ///< alltoallv_rows: the halo exchange
  int64_t gathered_bytes = 0;  ///< allgather: this rank's bytes times the other ranks
  int64_t exchanges = 0;       ///< alltoallv_rows calls
  Traffic operator-(const Traffic& o) const {
    return {row_bytes - o.row_bytes, gathered_bytes - o.gathered_bytes, exchanges - o.exchanges};
  }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// send: [sum(send_rows), width] row-major, the rows for rank 0 first, then rank 1, ...;
  /// recv: [sum(recv_rows), width], filled in the same rank order. send_rows[k] on this rank must
  /// equal recv_rows[this rank] on rank k. Both spans have size() entries.
  void alltoallv_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                      std::span<const int64_t> recv_rows, int64_t width);
  /// Every rank's bytes, in rank order, on every rank (sizes may differ between ranks).
  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine);
  /// Ends every process of the job, printing `message` (prefixed with the rank) first.
  [[noreturn]] virtual void abort(const std::string& message, int code = 1) = 0;
  /// "MPI (rank 1 of 3)" or "one process".
  virtual std::string describe() const = 0;
  /// What this rank has sent since construction; differences of two readings measure a step.
  const Traffic& traffic() const { return traffic_; }

 protected:
  /// The transport's collectives, as alltoallv_rows and allgather describe (which count them).
  virtual void exchange_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                             std::span<const int64_t> recv_rows, int64_t width) = 0;
  virtual std::vector<std::vector<std::byte>> gather_bytes(std::span<const std::byte> mine) = 0;

 private:
  Traffic traffic_;
};

/// The one-process communicator: size 1; alltoallv copies, allgather returns its input.
class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  [[noreturn]] void abort(const std::string& message, int code = 1) override;
  std::string describe() const override { return "one process"; }

 protected:
  void exchange_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                     std::span<const int64_t> recv_rows, int64_t width) override;
  std::vector<std::vector<std::byte>> gather_bytes(std::span<const std::byte> mine) override;
};

/// values <- the sum over ranks of every rank's values (same length everywhere; InvalidArgument
/// naming the ranks' lengths otherwise), added in rank order: bit-identical on every rank.
void sum_in_rank_order(Communicator& comm, std::span<float> values);
/// The same for doubles (losses, metric numerators).
void sum_in_rank_order(Communicator& comm, std::span<double> values);
/// Every rank's value, in rank order.
std::vector<int64_t> allgather_value(Communicator& comm, int64_t value);
/// Every rank's vector concatenated in rank order (sizes may differ).
std::vector<int64_t> allgather_concat(Communicator& comm, std::span<const int64_t> mine);
std::vector<float> allgather_concat(Communicator& comm, std::span<const float> mine);

}  // namespace edgeattn::dist
