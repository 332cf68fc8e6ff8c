#include "edgeattn/dist/mpi_communicator.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace edgeattn::dist {

namespace {
bool init_mpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return false;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    raise<CommError>("MPI_Init_thread failed");
  return true;
}
}  // namespace

MpiEnvironment::MpiEnvironment(int& argc, char**& argv) : owns_(init_mpi(&argc, &argv)) {}
MpiEnvironment::MpiEnvironment() : owns_(init_mpi(nullptr, nullptr)) {}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    raise<CommError>("MpiCommunicator: MPI is not initialised (open an MpiEnvironment first)");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

void MpiCommunicator::check(int rc, const char* call) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  raise<CommError>("rank ", rank_, ": ", call, " failed: ", std::string(text, static_cast<size_t>(len)));
}

namespace {
int to_int(int64_t v, int rank, const char* what) {
  if (v < 0 || v > INT_MAX)
    raise<CommError>("rank ", rank, ": ", what, " is ", v, ", beyond what one MPI call takes (", INT_MAX,
                     ")");
  return static_cast<int>(v);
}
}  // namespace

void MpiCommunicator::exchange_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                                    std::span<const int64_t> recv_rows, int64_t width) {
  const auto p = static_cast<size_t>(size_);
  if (send_rows.size() != p || recv_rows.size() != p)
    raise<InvalidArgument>("MpiCommunicator::alltoallv_rows: ", send_rows.size(), " send and ",
                           recv_rows.size(), " receive counts for ", size_, " ranks");
  // One row is one element of a contiguous type, so counts and displacements are rows: a halo of
  // 2^31 floats still fits the int counts.
  MPI_Datatype row;
  check(MPI_Type_contiguous(to_int(width, rank_, "the row width"), MPI_FLOAT, &row), "MPI_Type_contiguous");
  check(MPI_Type_commit(&row), "MPI_Type_commit");
  std::vector<int> sc(p), sd(p), rc(p), rd(p);
  int64_t s_off = 0, r_off = 0;
  for (size_t k = 0; k < p; ++k) {
    sc[k] = to_int(send_rows[k], rank_, "a send count (rows)");
    sd[k] = to_int(s_off, rank_, "a send offset (rows)");
    rc[k] = to_int(recv_rows[k], rank_, "a receive count (rows)");
    rd[k] = to_int(r_off, rank_, "a receive offset (rows)");
    s_off += send_rows[k];
    r_off += recv_rows[k];
  }
  // MPI wants valid pointers even for empty buffers.
  static float dummy = 0.f;
  const int status = MPI_Alltoallv(s_off ? send : &dummy, sc.data(), sd.data(), row, r_off ? recv : &dummy,
                                   rc.data(), rd.data(), row, comm_);
  MPI_Type_free(&row);
  check(status, "MPI_Alltoallv");
}

std::vector<std::vector<std::byte>> MpiCommunicator::gather_bytes(std::span<const std::byte> mine) {
  const int n = to_int(static_cast<int64_t>(mine.size()), rank_, "an allgather's size (bytes)");
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  check(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_), "MPI_Allgather");
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<size_t>(r)] = to_int(total, rank_, "an allgather's total size (bytes)");
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<std::byte> all(static_cast<size_t>(total) + 1);
  std::byte one{};
  check(MPI_Allgatherv(n ? mine.data() : &one, n, MPI_BYTE, all.data(), counts.data(), displs.data(),
                       MPI_BYTE, comm_),
        "MPI_Allgatherv");
  std::vector<std::vector<std::byte>> out(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const auto* begin = all.data() + displs[static_cast<size_t>(r)];
    out[static_cast<size_t>(r)].assign(begin, begin + counts[static_cast<size_t>(r)]);
  }
  return out;
}

void MpiCommunicator::abort(const std::string& message, int code) {
  std::fprintf(stderr, "edgeattn: rank %d of %d: %s\n", rank_, size_, message.c_str());
  std::fflush(stderr);
  MPI_Abort(comm_, code);
  std::_Exit(code);  // MPI_Abort does not return; in case an implementation does
}

std::string MpiCommunicator::describe() const {
  return "MPI (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
}

}  // namespace edgeattn::dist
