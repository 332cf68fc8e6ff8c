#include "edgeattn/dist/local_partition.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "edgeattn/core/error.hpp"

namespace edgeattn::dist {

std::vector<int64_t> LocalPartition::sources() const {
  std::vector<int64_t> out(owned);
  out.insert(out.end(), halo.begin(), halo.end());
  return out;
}

LocalPartition make_local_partition(const Graph& graph, std::span<const int32_t> part, int parts, int rank) {
  const int64_t n = graph.num_dst();
  if (graph.num_src() != n)
    raise<InvalidArgument>("make_local_partition: needs a square graph, got ", graph.describe());
  if (static_cast<int64_t>(part.size()) != n)
    raise<InvalidArgument>("make_local_partition: part has ", part.size(),
                           " entries, expected one per node (", n, ")");
  if (parts < 1 || rank < 0 || rank >= parts)
    raise<InvalidArgument>("make_local_partition: rank ", rank, " of ", parts,
                           " parts, expected 0 <= rank < parts");
  LocalPartition p;
  p.rank = rank;
  p.parts = parts;
  p.num_nodes = n;
  for (int64_t v = 0; v < n; ++v) {
    const int32_t q = part[static_cast<size_t>(v)];
    if (q < 0 || q >= parts)
      raise<InvalidArgument>("make_local_partition: part[", v, "] is ", q, ", expected in [0, ", parts, ")");
    if (q == rank) p.owned.push_back(v);
  }
  if (p.owned.empty())
    raise<InvalidArgument>("make_local_partition: rank ", rank, " owns no node of ", graph.describe(),
                           " (every part must own at least one)");
  const auto owner = [&](int64_t v) { return part[static_cast<size_t>(v)]; };

  // The halo: remote sources of the owned rows, by (owner, id).
  std::vector<std::pair<int32_t, int64_t>> remote;
  for (int64_t i : p.owned)
    for (int32_t j : graph.row(i))
      if (owner(j) != rank) remote.emplace_back(owner(j), j);
  std::sort(remote.begin(), remote.end());
  remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
  p.recv_rows.assign(static_cast<size_t>(parts), 0);
  std::vector<int64_t> halo_begin(static_cast<size_t>(parts) + 1, 0);  // per owner, in halo
  p.halo.reserve(remote.size());
  for (const auto& [q, j] : remote) {
    ++p.recv_rows[static_cast<size_t>(q)];
    p.halo.push_back(j);
  }
  for (int q = 0; q < parts; ++q)
    halo_begin[static_cast<size_t>(q) + 1] =
        halo_begin[static_cast<size_t>(q)] + p.recv_rows[static_cast<size_t>(q)];

  // Local id of a source: its index among the owned, or num_owned + its index in the halo.
  const int64_t num_owned = p.num_owned();
  const auto local_of = [&](int64_t j) -> int64_t {
    const int32_t q = owner(j);
    if (q == rank) return std::lower_bound(p.owned.begin(), p.owned.end(), j) - p.owned.begin();
    const auto b = p.halo.begin() + halo_begin[static_cast<size_t>(q)];
    const auto e = p.halo.begin() + halo_begin[static_cast<size_t>(q) + 1];
    return num_owned + (std::lower_bound(b, e, j) - p.halo.begin());
  };

  // Rows in local ids, columns ascending; each edge keeps its global CSR position.
  std::vector<int64_t> row_ptr(static_cast<size_t>(num_owned) + 1, 0);
  for (int64_t k = 0; k < num_owned; ++k)
    row_ptr[static_cast<size_t>(k) + 1] =
        row_ptr[static_cast<size_t>(k)] + graph.degree(p.owned[static_cast<size_t>(k)]);
  std::vector<int32_t> col(static_cast<size_t>(row_ptr.back()));
  p.edge_ids.resize(col.size());
  std::vector<std::pair<int64_t, int64_t>> row;  // (local source, global edge)
  for (int64_t k = 0; k < num_owned; ++k) {
    const int64_t i = p.owned[static_cast<size_t>(k)];
    const int64_t first = graph.row_ptr()[static_cast<size_t>(i)];
    const auto sources = graph.row(i);
    row.clear();
    for (size_t t = 0; t < sources.size(); ++t)
      row.emplace_back(local_of(sources[t]), first + static_cast<int64_t>(t));
    std::sort(row.begin(), row.end());  // by local source, then by global position (duplicates)
    for (size_t t = 0; t < row.size(); ++t) {
      const auto e = static_cast<size_t>(row_ptr[static_cast<size_t>(k)]) + t;
      col[e] = static_cast<int32_t>(row[t].first);
      p.edge_ids[e] = row[t].second;
    }
  }
  p.graph = Graph::from_csr(num_owned, num_owned + p.num_halo(), std::move(row_ptr), std::move(col),
                            CsrCheck::sort);

  // What each rank needs from this one: owned nodes with an out-edge into that rank's nodes, in
  // ascending id (its halo order within this rank's block).
  const Transpose& t = graph.transpose();
  std::vector<std::vector<int32_t>> send(static_cast<size_t>(parts));
  std::vector<int64_t> last(static_cast<size_t>(parts), -1);
  for (int64_t k = 0; k < num_owned; ++k) {
    const int64_t j = p.owned[static_cast<size_t>(k)];
    for (int64_t e = t.col_ptr[static_cast<size_t>(j)]; e < t.col_ptr[static_cast<size_t>(j) + 1]; ++e) {
      const int32_t q = owner(t.row_idx[static_cast<size_t>(e)]);
      if (q == rank || last[static_cast<size_t>(q)] == k) continue;
      last[static_cast<size_t>(q)] = k;
      send[static_cast<size_t>(q)].push_back(static_cast<int32_t>(k));
    }
  }
  p.send_rows.assign(static_cast<size_t>(parts), 0);
  for (int q = 0; q < parts; ++q) {
    p.send_rows[static_cast<size_t>(q)] = static_cast<int64_t>(send[static_cast<size_t>(q)].size());
    p.send_index.insert(p.send_index.end(), send[static_cast<size_t>(q)].begin(),
                        send[static_cast<size_t>(q)].end());
  }
  return p;
}

std::string exchange_counts_error(std::span<const int64_t> counts, int rank, int64_t total) {
  int64_t sum = 0;
  for (size_t q = 0; q < counts.size(); ++q) {
    const bool own = static_cast<int>(q) == rank;
    if (counts[q] < 0 || counts[q] > total || (own && counts[q] != 0))
      return "entry " + std::to_string(q) + " is " + std::to_string(counts[q]) + ", expected " +
             (own ? "0 (this rank's own)" : "a count in [0, " + std::to_string(total) + "]");
    sum += counts[q];
  }
  return sum == total ? std::string()
                      : "the counts add up to " + std::to_string(sum) + ", expected " + std::to_string(total);
}

}  // namespace edgeattn::dist
