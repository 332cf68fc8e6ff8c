#include "edgeattn/dist/communicator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "edgeattn/core/error.hpp"

namespace edgeattn::dist {

void Communicator::alltoallv_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                                  std::span<const int64_t> recv_rows, int64_t width) {
  exchange_rows(send, send_rows, recv, recv_rows, width);
  int64_t rows = 0;
  for (size_t k = 0; k < send_rows.size(); ++k)
    if (static_cast<int>(k) != rank()) rows += send_rows[k];
  traffic_.row_bytes += rows * width * static_cast<int64_t>(sizeof(float));
  ++traffic_.exchanges;
}

std::vector<std::vector<std::byte>> Communicator::allgather(std::span<const std::byte> mine) {
  std::vector<std::vector<std::byte>> out = gather_bytes(mine);
  traffic_.gathered_bytes += static_cast<int64_t>(mine.size()) * (size() - 1);
  return out;
}

void SelfCommunicator::exchange_rows(const float* send, std::span<const int64_t> send_rows, float* recv,
                                     std::span<const int64_t> recv_rows, int64_t width) {
  if (send_rows.size() != 1 || recv_rows.size() != 1 || send_rows[0] != recv_rows[0])
    raise<InvalidArgument>("SelfCommunicator::alltoallv_rows: expected one equal send and receive count");
  if (send_rows[0] > 0) std::memcpy(recv, send, sizeof(float) * static_cast<size_t>(send_rows[0] * width));
}

std::vector<std::vector<std::byte>> SelfCommunicator::gather_bytes(std::span<const std::byte> mine) {
  return {std::vector<std::byte>(mine.begin(), mine.end())};
}

void SelfCommunicator::abort(const std::string& message, int code) {
  std::fprintf(stderr, "edgeattn: %s\n", message.c_str());
  std::fflush(stderr);
  std::exit(code);
}

namespace {

template <class T>
std::vector<std::vector<T>> allgather_typed(Communicator& comm, std::span<const T> mine) {
  const auto bytes = comm.allgather(std::as_bytes(mine));
  std::vector<std::vector<T>> out(bytes.size());
  for (size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r].size() % sizeof(T) != 0)
      raise<Error>("dist: rank ", r, " sent ", bytes[r].size(), " bytes, not a whole number of ", sizeof(T),
                   "-byte values");
    out[r].resize(bytes[r].size() / sizeof(T));
    if (!out[r].empty()) std::memcpy(out[r].data(), bytes[r].data(), bytes[r].size());
  }
  return out;
}

template <class T>
void sum_typed(Communicator& comm, std::span<T> values) {
  const auto all = allgather_typed<T>(comm, std::span<const T>(values.data(), values.size()));
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].size() != values.size())
      raise<InvalidArgument>("sum_in_rank_order: rank ", r, " has ", all[r].size(), " values, rank ",
                             comm.rank(), " has ", values.size(), " (every rank must sum the same length)");
  for (size_t i = 0; i < values.size(); ++i) {
    T s = all[0][i];
    for (size_t r = 1; r < all.size(); ++r) s += all[r][i];
    values[i] = s;
  }
}

template <class T>
std::vector<T> concat_typed(Communicator& comm, std::span<const T> mine) {
  std::vector<T> out;
  for (auto& part : allgather_typed<T>(comm, mine)) out.insert(out.end(), part.begin(), part.end());
  return out;
}

}  // namespace

void sum_in_rank_order(Communicator& comm, std::span<float> values) { sum_typed(comm, values); }
void sum_in_rank_order(Communicator& comm, std::span<double> values) { sum_typed(comm, values); }

std::vector<int64_t> allgather_value(Communicator& comm, int64_t value) {
  return concat_typed<int64_t>(comm, std::span<const int64_t>(&value, 1));
}
std::vector<int64_t> allgather_concat(Communicator& comm, std::span<const int64_t> mine) {
  return concat_typed(comm, mine);
}
std::vector<float> allgather_concat(Communicator& comm, std::span<const float> mine) {
  return concat_typed(comm, mine);
}

}  // namespace edgeattn::dist
