// Stochastic block model generation (see data/synthetic.hpp for the model).
//
// Sampling works in "block space", where block c is the contiguous position range
// [start_c, start_c+1); a seeded bijection then maps positions to node ids. Row i (a position in
// block b) samples only the pairs {i, j} with j > i: first j in (i, end_b) with p_in, then
// j in [end_b, N) with p_out, each by geometric skipping (the gap to the next success of a
// Bernoulli(p) sequence is Geometric(p): floor(log U / log(1 - p))), so the cost is O(edges).
// Row i's random bits come from one Philox block keyed by (seed, i) seeding a splitmix64 sequence.
//
// Assembly: rows are generated in fixed chunks (independent of the thread count) into per-chunk
// lists of pairs; both directions of every pair are placed into CSR rows by the graph layer's
// parallel counting sort (lib/graph/counting_sort.hpp), then each row is sorted, so the graph is
// the same for every thread count.
#include "edgeattn/data/synthetic.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/huge_pages.hpp"
#include "core/prefetch.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "graph/counting_sort.hpp"

namespace edgeattn::data {
namespace {

// Philox counter word 3: separate streams for the separate uses of the seed.
constexpr uint32_t kStreamEdges = 0x73626d65;     // "sbme"
constexpr uint32_t kStreamShuffle = 0x73626d73;   // "sbms"
constexpr uint32_t kStreamMeans = 0x73626d6d;     // "sbmm"
constexpr uint32_t kStreamFeatures = 0x73626d66;  // "sbmf"
constexpr uint32_t kStreamSplit = 0x73626d70;     // "sbmp"

constexpr int64_t kRowsPerChunk = 4096;

std::array<uint32_t, 4> draw(uint64_t seed, int64_t index, uint32_t word2, uint32_t stream) {
  const auto k = static_cast<uint64_t>(index);
  return philox4x32(seed, {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32), word2, stream});
}

uint64_t draw64(uint64_t seed, int64_t index, uint32_t word2, uint32_t stream) {
  const auto r = draw(seed, index, word2, stream);
  return (uint64_t{r[0]} << 32) | r[1];
}

// splitmix64 seeded from one Philox block: cheap uniform doubles for one row.
class RowStream {
 public:
  explicit RowStream(uint64_t state) : state_(state) {}
  /// Uniform in (0, 1].
  double uniform_open0() {
    state_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>((z >> 11) + 1) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

// Two standard normals from one Philox block (Box-Muller).
std::pair<float, float> gaussian_pair(std::array<uint32_t, 4> r) {
  const double u1 = (static_cast<double>(r[0]) + 1.0) * 0x1.0p-32;  // (0, 1]
  const double u2 = static_cast<double>(r[1]) * 0x1.0p-32;          // [0, 1)
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  return {static_cast<float>(radius * std::cos(angle)), static_cast<float>(radius * std::sin(angle))};
}

// Calls emit(j) for each j in [begin, end) independently with probability p.
template <class Emit>
void sample_range(RowStream& rng, int64_t begin, int64_t end, double p, double log_q, Emit&& emit) {
  if (p <= 0.0 || begin >= end) return;
  if (p >= 1.0) {
    for (int64_t j = begin; j < end; ++j) emit(j);
    return;
  }
  int64_t j = begin - 1;
  for (;;) {
    const double skip = std::floor(std::log(rng.uniform_open0()) / log_q);
    if (skip >= static_cast<double>(end - j - 1)) return;
    j += 1 + static_cast<int64_t>(skip);
    emit(j);
  }
}

struct Blocks {
  std::vector<int64_t> start;  // [K + 1] position ranges
  double p_in = 0.0, p_out = 0.0;
};

Blocks validate(const SbmConfig& c) {
  const int64_t n = c.num_nodes;
  if (n < 1 || n > std::numeric_limits<int32_t>::max())
    raise<InvalidArgument>("sbm_dataset: num_nodes is ", n, ", expected in [1, ",
                           std::numeric_limits<int32_t>::max(), "]");
  if (c.num_classes < 1 || c.num_classes > n)
    raise<InvalidArgument>("sbm_dataset: num_classes is ", c.num_classes, ", expected in [1, num_nodes=", n,
                           "]");
  Blocks b;
  b.start.assign(1, 0);
  if (c.block_sizes.empty()) {
    for (int64_t k = 0; k < c.num_classes; ++k)
      b.start.push_back(b.start.back() + n / c.num_classes + (k < n % c.num_classes ? 1 : 0));
  } else {
    if (static_cast<int64_t>(c.block_sizes.size()) != c.num_classes)
      raise<InvalidArgument>("sbm_dataset: block_sizes has ", c.block_sizes.size(),
                             " entries, expected num_classes = ", c.num_classes);
    for (size_t k = 0; k < c.block_sizes.size(); ++k) {
      if (c.block_sizes[k] < 1)
        raise<InvalidArgument>("sbm_dataset: block_sizes[", k, "] is ", c.block_sizes[k], ", expected >= 1");
      b.start.push_back(b.start.back() + c.block_sizes[k]);
    }
    if (b.start.back() != n)
      raise<InvalidArgument>("sbm_dataset: block_sizes sum to ", b.start.back(),
                             ", expected num_nodes = ", n);
  }
  if (!(c.expected_in_degree >= 0.0) || !std::isfinite(c.expected_in_degree))
    raise<InvalidArgument>("sbm_dataset: expected_in_degree is ", c.expected_in_degree, ", expected >= 0");
  if (!(c.expected_out_degree >= 0.0) || !std::isfinite(c.expected_out_degree))
    raise<InvalidArgument>("sbm_dataset: expected_out_degree is ", c.expected_out_degree, ", expected >= 0");
  const double s = static_cast<double>(n) / static_cast<double>(c.num_classes);
  if (c.expected_in_degree > 0.0) b.p_in = s > 1.0 ? c.expected_in_degree / (s - 1.0) : 2.0;
  if (c.expected_out_degree > 0.0)
    b.p_out = n > s ? c.expected_out_degree / (static_cast<double>(n) - s) : 2.0;
  if (b.p_in > 1.0)
    raise<InvalidArgument>("sbm_dataset: expected_in_degree is ", c.expected_in_degree,
                           ", expected <= mean block size - 1 = ", s - 1.0, " (p_in <= 1)");
  if (b.p_out > 1.0)
    raise<InvalidArgument>("sbm_dataset: expected_out_degree is ", c.expected_out_degree,
                           ", expected <= num_nodes - mean block size = ", static_cast<double>(n) - s,
                           " (p_out <= 1)");
  if (c.feature_dim < 0)
    raise<InvalidArgument>("sbm_dataset: feature_dim is ", c.feature_dim, ", expected >= 0");
  if (!std::isfinite(c.signal))
    raise<InvalidArgument>("sbm_dataset: signal is ", c.signal, ", expected finite");
  if (!(c.noise >= 0.f) || !std::isfinite(c.noise))
    raise<InvalidArgument>("sbm_dataset: noise is ", c.noise, ", expected finite and >= 0");
  if (c.train_per_class < 0)
    raise<InvalidArgument>("sbm_dataset: train_per_class is ", c.train_per_class, ", expected >= 0");
  for (int64_t k = 0; k < c.num_classes; ++k) {
    const int64_t size = b.start[static_cast<size_t>(k) + 1] - b.start[static_cast<size_t>(k)];
    if (size < c.train_per_class)
      raise<InvalidArgument>("sbm_dataset: class ", k, " has ", size,
                             " nodes, expected at least train_per_class = ", c.train_per_class);
  }
  if (c.num_val < 0) raise<InvalidArgument>("sbm_dataset: num_val is ", c.num_val, ", expected >= 0");
  if (c.num_test < -1) raise<InvalidArgument>("sbm_dataset: num_test is ", c.num_test, ", expected >= -1");
  const int64_t needed = c.train_per_class * c.num_classes + c.num_val + std::max<int64_t>(c.num_test, 0);
  if (needed > n)
    raise<InvalidArgument>("sbm_dataset: train_per_class * num_classes + num_val + num_test = ", needed,
                           ", expected <= num_nodes = ", n);
  return b;
}

// node_of_pos: identity, or the rank of each position under seeded random keys.
std::vector<int32_t> node_ids(const SbmConfig& c) {
  const int64_t n = c.num_nodes;
  std::vector<int32_t> node_of_pos(static_cast<size_t>(n));
  std::iota(node_of_pos.begin(), node_of_pos.end(), 0);
  if (!c.shuffle_nodes) return node_of_pos;
  std::vector<std::pair<uint64_t, int32_t>> keyed(static_cast<size_t>(n));
  parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      keyed[static_cast<size_t>(i)] = {draw64(c.seed, i, 0, kStreamShuffle), static_cast<int32_t>(i)};
  });
  std::sort(keyed.begin(), keyed.end());
  for (size_t k = 0; k < keyed.size(); ++k)
    node_of_pos[static_cast<size_t>(keyed[k].second)] = static_cast<int32_t>(k);
  return node_of_pos;
}

Graph sample_graph(const SbmConfig& c, const Blocks& blocks, const std::vector<int32_t>& node_of_pos) {
  const int64_t n = c.num_nodes;
  const double log_q_in = std::log1p(-blocks.p_in), log_q_out = std::log1p(-blocks.p_out);
  const int64_t num_chunks = (n + kRowsPerChunk - 1) / kRowsPerChunk;
  // Each chunk's pairs {u, v}, already as node ids.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> chunks(static_cast<size_t>(num_chunks));
  const double expected_per_row = 0.5 * (c.expected_in_degree + c.expected_out_degree);
  parallel_for(0, num_chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch) {
      auto& edges = chunks[static_cast<size_t>(ch)];
      const int64_t begin = ch * kRowsPerChunk, end = std::min(n, begin + kRowsPerChunk);
      edges.reserve(static_cast<size_t>(expected_per_row * static_cast<double>(end - begin) * 1.1) + 16);
      size_t block = static_cast<size_t>(std::upper_bound(blocks.start.begin(), blocks.start.end(), begin) -
                                         blocks.start.begin() - 1);
      for (int64_t i = begin; i < end; ++i) {
        while (i >= blocks.start[block + 1]) ++block;
        RowStream rng(draw64(c.seed, i, 0, kStreamEdges));
        const int32_t u = node_of_pos[static_cast<size_t>(i)];
        auto emit = [&](int64_t j) { edges.emplace_back(u, node_of_pos[static_cast<size_t>(j)]); };
        sample_range(rng, i + 1, blocks.start[block + 1], blocks.p_in, log_q_in, emit);
        sample_range(rng, blocks.start[block + 1], n, blocks.p_out, log_q_out, emit);
      }
    }
  });

  // Both directions of every pair, sorted by row with detail::CountingSort (per-block cursors, no
  // atomics). The pairs are numbered across the chunks; for_pairs visits those in [begin, end).
  std::vector<int64_t> chunk_start(static_cast<size_t>(num_chunks) + 1, 0);
  for (int64_t ch = 0; ch < num_chunks; ++ch)
    chunk_start[static_cast<size_t>(ch) + 1] =
        chunk_start[static_cast<size_t>(ch)] + static_cast<int64_t>(chunks[static_cast<size_t>(ch)].size());
  auto for_pairs = [&](int64_t begin, int64_t end, auto&& f) {
    auto ch = static_cast<size_t>(std::upper_bound(chunk_start.begin(), chunk_start.end(), begin) -
                                  chunk_start.begin() - 1);
    for (int64_t k = begin; k < end; ++ch) {
      const auto& pairs = chunks[ch];
      const int64_t stop = std::min(end, chunk_start[ch + 1]);
      const auto* first = pairs.data() + (k - chunk_start[ch]);
      f(first, first + (stop - k));
      k = stop;
    }
  };
  // Cursors of rows a few pairs ahead are prefetched: the rows are random, and the cursor array
  // (8 bytes a node) is larger than the caches for large graphs.
  constexpr ptrdiff_t kAhead = 8;
  using Pair = std::pair<int32_t, int32_t>;
  detail::CountingSort sort(chunk_start.back(), n, [&](int64_t b, int64_t e, int64_t* count) {
    for_pairs(b, e, [&](const Pair* first, const Pair* last) {
      for (const Pair* p = first; p < last; ++p) {
        if (last - p > kAhead) {
          edgeattn::detail::prefetch_write(&count[p[kAhead].first]);
          edgeattn::detail::prefetch_write(&count[p[kAhead].second]);
        }
        ++count[p->first];
        ++count[p->second];
      }
    });
  });
  std::vector<int32_t> cols =
      edgeattn::detail::huge_page_vector<int32_t>(static_cast<size_t>(sort.num_sorted()));
  sort.scatter([&](int64_t b, int64_t e, int64_t* next) {
    for_pairs(b, e, [&](const Pair* first, const Pair* last) {
      for (const Pair* p = first; p < last; ++p) {
        if (last - p > kAhead) {
          edgeattn::detail::prefetch_write(&next[p[kAhead].first]);
          edgeattn::detail::prefetch_write(&next[p[kAhead].second]);
        }
        cols[static_cast<size_t>(next[p->first]++)] = p->second;
        cols[static_cast<size_t>(next[p->second]++)] = p->first;
      }
    });
  });
  chunks = {};
  std::vector<int64_t> row_ptr = sort.release_key_start();
  parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::sort(cols.begin() + row_ptr[static_cast<size_t>(i)],
                cols.begin() + row_ptr[static_cast<size_t>(i) + 1]);
  });
  return Graph::from_csr(n, n, std::move(row_ptr), std::move(cols));
}

Tensor sample_features(const SbmConfig& c, const std::vector<int32_t>& classes) {
  const int64_t n = c.num_nodes, f = c.feature_dim;
  Tensor means({c.num_classes, f});
  for (int64_t k = 0; k < c.num_classes; ++k)
    for (int64_t d = 0; d < f; d += 2) {
      const auto [z0, z1] = gaussian_pair(draw(c.seed, k, static_cast<uint32_t>(d / 2), kStreamMeans));
      means(k, d) = c.signal * z0;
      if (d + 1 < f) means(k, d + 1) = c.signal * z1;
    }
  Tensor x({n, f});
  parallel_for(0, n, 1024, [&](int64_t b, int64_t e) {
    for (int64_t v = b; v < e; ++v) {
      const float* mu = means.data() + static_cast<int64_t>(classes[static_cast<size_t>(v)]) * f;
      float* row = x.data() + v * f;
      for (int64_t d = 0; d < f; d += 2) {
        const auto [z0, z1] = gaussian_pair(draw(c.seed, v, static_cast<uint32_t>(d / 2), kStreamFeatures));
        row[d] = mu[d] + c.noise * z0;
        if (d + 1 < f) row[d + 1] = mu[d + 1] + c.noise * z1;
      }
    }
  });
  return x;
}

Split sample_split(const SbmConfig& c, const std::vector<int32_t>& classes) {
  const int64_t n = c.num_nodes;
  std::vector<std::pair<uint64_t, int64_t>> order(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) order[static_cast<size_t>(v)] = {draw64(c.seed, v, 0, kStreamSplit), v};
  std::sort(order.begin(), order.end());
  Split s;
  std::vector<int64_t> taken(static_cast<size_t>(c.num_classes), 0);
  std::vector<int64_t> rest;
  for (const auto& [key, v] : order) {
    auto& t = taken[static_cast<size_t>(classes[static_cast<size_t>(v)])];
    if (t < c.train_per_class) {
      ++t;
      s.train.push_back(v);
    } else {
      rest.push_back(v);
    }
  }
  const auto num_val = static_cast<size_t>(c.num_val);
  const size_t num_test = c.num_test < 0 ? rest.size() - num_val : static_cast<size_t>(c.num_test);
  s.val.assign(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(num_val));
  s.test.assign(rest.begin() + static_cast<std::ptrdiff_t>(num_val),
                rest.begin() + static_cast<std::ptrdiff_t>(num_val + num_test));
  for (auto* part : {&s.train, &s.val, &s.test}) std::sort(part->begin(), part->end());
  return s;
}

}  // namespace

Dataset sbm_dataset(const SbmConfig& config) {
  const Blocks blocks = validate(config);
  const std::vector<int32_t> node_of_pos = node_ids(config);

  Dataset ds;
  ds.name = "sbm";
  ds.format = "synthetic";
  ds.labels.num_classes = config.num_classes;
  ds.labels.classes.resize(static_cast<size_t>(config.num_nodes));
  for (int64_t k = 0; k < config.num_classes; ++k)
    for (int64_t p = blocks.start[static_cast<size_t>(k)]; p < blocks.start[static_cast<size_t>(k) + 1]; ++p)
      ds.labels.classes[static_cast<size_t>(node_of_pos[static_cast<size_t>(p)])] = static_cast<int32_t>(k);

  ds.graph = sample_graph(config, blocks, node_of_pos);
  if (config.feature_dim > 0) ds.features = Features(sample_features(config, ds.labels.classes));
  ds.splits["random"] = sample_split(config, ds.labels.classes);
  ds.default_split = "random";
  std::ostringstream note;
  note << "sbm: " << config.num_nodes << " nodes, " << config.num_classes << " classes, p_in=" << blocks.p_in
       << ", p_out=" << blocks.p_out << ", " << ds.graph.num_edges()
       << " directed edges, feature_dim=" << config.feature_dim << ", signal=" << config.signal
       << ", noise=" << config.noise << ", seed=" << config.seed;
  ds.notes.push_back(note.str());
  return ds;
}

}  // namespace edgeattn::data
