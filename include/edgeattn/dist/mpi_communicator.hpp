// dist::Communicator over MPI (Open MPI, MPICH): available when the library was built with
// EDGEATTN_MPI (CMake finds MPI; EDGEATTN_HAVE_MPI is then 1).
//
// Programs that already own MPI wrap their communicator; a program that does not opens an
// MpiEnvironment first (MPI_Init_thread with MPI_THREAD_FUNNELED: only the main thread calls MPI,
// oneTBB's workers never do) and closes it last. Errors of MPI calls are returned, not fatal
// (MPI_ERRORS_RETURN on the wrapped communicator), and become dist::CommError naming the call and
// the rank; abort() is MPI_Abort, which ends every process of the job.
//
// Example (mpirun -np 2 ./program):
//   int main(int argc, char** argv) {
//     edgeattn::dist::MpiEnvironment mpi(argc, argv);
//     edgeattn::dist::MpiCommunicator comm(MPI_COMM_WORLD);
//     ... dist::fit_distributed(model, comm, inputs, labels, split, config) ...
//   }
#pragma once

#include <mpi.h>

#include "edgeattn/core/error.hpp"
#include "edgeattn/dist/communicator.hpp"

namespace edgeattn::dist {

/// An MPI call failed (its error string, the call and the rank are in the message).
class CommError : public Error {
 public:
  using Error::Error;
};

/// MPI_Init_thread (unless MPI is already initialised) and, if it initialised MPI, MPI_Finalize.
class MpiEnvironment {
 public:
  MpiEnvironment(int& argc, char**& argv);
  /// Without the program's arguments (MPI 2 allows it): for a library or a subcommand.
  MpiEnvironment();
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

 private:
  bool owns_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  /// Does not take ownership of `comm`; MPI must be initialised. Sets MPI_ERRORS_RETURN on it.
  explicit MpiCommunicator(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  [[noreturn]] void abort(const std::string& message, int code = 1) override;
  std::string describe() const override;
  MPI_Comm comm() const { return comm_; }

 protected:
  void exchange_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                     std::span<const int64_t> recv_rows, int64_t width) override;
  std::vector<std::vector<std::byte>> gather_bytes(std::span<const std::byte> mine) override;

 private:
  void check(int rc, const char* call) const;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace edgeattn::dist
