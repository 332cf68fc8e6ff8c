// Synthetic graph generators: uniform random, and R-MAT (Chakrabarti, Zhan, Faloutsos, "R-MAT: A
// Recursive Model for Graph Mining", SDM 2004) with Graph500's parameters and vertex relabelling.
//
// Determinism: the random bits of edge k depend on (seed, k) alone, never on the thread count or
// on how the edge range is split. A uniform edge takes both endpoints from one block
// philox4x32(seed, {k_lo, k_hi, 0, stream}). An R-MAT draw needs 32 bits per level, so one philox
// block for (k, attempt) keys a splitmix64 sequence, several times cheaper per bit than further
// philox blocks; each level picks a quadrant with one 32-bit uniform, without branches.
//
// Vertex relabelling is a 4-round Feistel network on the smallest even number of bits covering n,
// restricted to [0, n) by cycle walking (Black and Rogaway, "Ciphers with Arbitrary Finite
// Domains", 2002): a seeded bijection evaluated per endpoint in O(1) memory.
#include "edgeattn/graph/generators.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "core/huge_pages.hpp"
#include "core/physical_memory.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"

namespace edgeattn {
namespace {

// Philox counter word 3: keeps the random streams of different generators apart.
constexpr uint32_t kStreamUniform = 0x75726e64;   // "urnd"
constexpr uint32_t kStreamRmat = 0x726d6174;      // "rmat"
constexpr uint32_t kStreamScramble = 0x7363726d;  // "scrm"

// Edges per parallel piece: large enough to amortise scheduling, small enough to balance 2-64 cores.
constexpr int64_t kGrain = 1 << 15;
// R-MAT rejections in a row before an edge falls back to modulo (see generators.hpp).
constexpr uint32_t kMaxAttempts = 64;

std::array<uint32_t, 4> draw(uint64_t seed, int64_t edge, uint32_t word2, uint32_t stream) {
  const auto k = static_cast<uint64_t>(edge);
  return philox4x32(seed, {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32), word2, stream});
}

// splitmix64's increment (the golden ratio).
constexpr uint64_t kSplitMixIncrement = 0x9e3779b97f4a7c15ull;

// One R-MAT level: the 32-bit uniform u picks quadrant a, b, c or d (u below t_a, t_ab, t_abc, or
// none), which sets bit `level` of the source (c, d) and of the destination (b, d). Branch-free:
// random comparisons would mispredict about half the time.
inline void quadrant_bits(uint64_t u, int level, uint64_t& s, uint64_t& d, uint64_t t_a, uint64_t t_ab,
                          uint64_t t_abc) {
  const auto ge_a = static_cast<uint64_t>(u >= t_a), ge_ab = static_cast<uint64_t>(u >= t_ab),
             ge_abc = static_cast<uint64_t>(u >= t_abc);
  s |= ge_ab << level;                    // quadrants c, d
  d |= (ge_a ^ ge_ab ^ ge_abc) << level;  // quadrants b, d
}

// The random bits of one R-MAT edge draw: one philox block keys a splitmix64 sequence, which is
// several times cheaper per bit than further philox blocks (R-MAT needs 32 bits per level).
class EdgeStream {
 public:
  explicit EdgeStream(std::array<uint32_t, 4> key) : state_((uint64_t{key[0]} << 32) | key[1]) {}
  uint64_t next() {
    state_ += kSplitMixIncrement;
    return mix64(state_);
  }

 private:
  uint64_t state_;
};

// floor(x * n / 2^64) without 128-bit arithmetic; n < 2^31. Unbiased to within n / 2^64.
uint32_t scale_to(uint64_t x, uint64_t n) {
  const uint64_t hi = (x >> 32) * n;
  const uint64_t lo = ((x & 0xffffffffu) * n) >> 32;
  return static_cast<uint32_t>((hi + lo) >> 32);
}

void check_sizes(const char* fn, int64_t n, int64_t num_edges) {
  if (n < 1 || n > std::numeric_limits<int32_t>::max())
    raise<InvalidArgument>(fn, ": n is ", n, ", expected in [1, ", std::numeric_limits<int32_t>::max(), "]");
  if (num_edges < 0) raise<InvalidArgument>(fn, ": num_edges is ", num_edges, ", expected >= 0");
  // The drawn pairs (8 bytes an edge) and the graph built from them (about 12 more) must fit: a
  // request for 10^11 edges would otherwise end in std::bad_alloc or the system's OOM killer.
  const auto memory = static_cast<double>(detail::physical_memory_bytes());
  const double need = 20.0 * static_cast<double>(num_edges) + 16.0 * static_cast<double>(n);
  if (need > 0.75 * memory)
    raise<InvalidArgument>(fn, ": ", num_edges, " edges over ", n, " nodes need about ", need / 1e9,
                           " GB to draw and build, more than 3/4 of this machine's ", memory / 1e9, " GB");
}

EdgeList allocate(int64_t n, int64_t num_edges) {
  EdgeList list;
  list.num_nodes = n;
  list.src = detail::huge_page_vector<int32_t>(static_cast<size_t>(num_edges));
  list.dst = detail::huge_page_vector<int32_t>(static_cast<size_t>(num_edges));
  return list;
}

// A seeded bijection of [0, n): Feistel network on 2*half bits plus cycle walking.
class Scrambler {
 public:
  Scrambler(uint64_t seed, int64_t n) : n_(static_cast<uint64_t>(n)) {
    const int bits = n <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(n - 1));
    half_ = (bits + 1) / 2;
    mask_ = (uint64_t{1} << half_) - 1;
    for (uint32_t round = 0; round < keys_.size(); ++round) {
      const auto r = philox4x32(seed, {round, 0, 0, kStreamScramble});
      keys_[round] = (static_cast<uint64_t>(r[0]) << 32) | r[1];
    }
  }

  uint32_t operator()(uint32_t id) const {
    if (n_ <= 1) return id;
    uint64_t x = id;
    do x = permute(x);
    while (x >= n_);
    return static_cast<uint32_t>(x);
  }

 private:
  uint64_t permute(uint64_t x) const {
    uint64_t left = x >> half_, right = x & mask_;
    for (uint64_t key : keys_) {
      const uint64_t next = left ^ (mix64(right ^ key) & mask_);
      left = right;
      right = next;
    }
    return (left << half_) | right;
  }
  uint64_t n_;
  int half_ = 0;
  uint64_t mask_ = 0;
  std::array<uint64_t, 4> keys_{};
};

}  // namespace

EdgeList erdos_renyi_edges(int64_t n, int64_t num_edges, uint64_t seed) {
  check_sizes("erdos_renyi_edges", n, num_edges);
  EdgeList list = allocate(n, num_edges);
  const auto un = static_cast<uint64_t>(n);
  parallel_for(0, num_edges, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      const auto r = draw(seed, e, 0, kStreamUniform);
      list.src[static_cast<size_t>(e)] = static_cast<int32_t>(scale_to((uint64_t{r[0]} << 32) | r[1], un));
      list.dst[static_cast<size_t>(e)] = static_cast<int32_t>(scale_to((uint64_t{r[2]} << 32) | r[3], un));
    }
  });
  return list;
}

EdgeList rmat_edges(int64_t n, int64_t num_edges, uint64_t seed, const RmatParams& params) {
  check_sizes("rmat_edges", n, num_edges);
  const double probs[4] = {params.a, params.b, params.c, params.d};
  const char* names[4] = {"a", "b", "c", "d"};
  for (int q = 0; q < 4; ++q)
    if (!(probs[q] >= 0.0 && probs[q] <= 1.0))
      raise<InvalidArgument>("rmat_edges: params.", names[q], " is ", probs[q], ", expected in [0, 1]");
  const double sum = params.a + params.b + params.c + params.d;
  if (std::abs(sum - 1.0) > 1e-6)
    raise<InvalidArgument>("rmat_edges: params a + b + c + d is ", sum, ", expected 1");

  // Cumulative 32-bit thresholds: u < t_a -> a, u < t_ab -> b, u < t_abc -> c, else d.
  const auto threshold = [](double p) {
    return static_cast<uint64_t>(std::min(std::llround(p * 4294967296.0), 4294967296ll));
  };
  const uint64_t t_a = threshold(params.a);
  const uint64_t t_ab = threshold(params.a + params.b);
  const uint64_t t_abc = threshold(params.a + params.b + params.c);

  const int scale = n <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(n - 1));
  const auto un = static_cast<uint64_t>(n);
  const Scrambler scramble(seed, n);
  EdgeList list = allocate(n, num_edges);

  // One draw of edge e: `scale` levels, each picking a quadrant with one 32-bit uniform (two
  // levels per splitmix64 word), branch-free. Endpoints are below 2^scale, maybe not below n.
  const auto draw_endpoints = [&](int64_t e, uint32_t attempt, uint64_t& s, uint64_t& d) {
    EdgeStream bits(draw(seed, e, attempt, kStreamRmat));
    s = 0;
    d = 0;
    for (int level = 0; level < scale; level += 2) {
      const uint64_t word = bits.next();
      quadrant_bits(word & 0xffffffffu, level, s, d, t_a, t_ab, t_abc);
      if (level + 1 < scale) quadrant_bits(word >> 32, level + 1, s, d, t_a, t_ab, t_abc);
    }
  };

  // Edges go in batches of kLanes: the first attempt of every lane runs level by level across the
  // lanes (loops the compiler vectorises), then lanes whose draw fell outside [0, n) are redrawn
  // one at a time with the next attempt counters, exactly as a per-edge loop would.
  constexpr int kLanes = 16;
  parallel_for(0, num_edges, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t e0 = begin; e0 < end; e0 += kLanes) {
      const int lanes = static_cast<int>(std::min<int64_t>(kLanes, end - e0));
      uint64_t state[kLanes], s[kLanes], d[kLanes];
      for (int l = 0; l < kLanes; ++l) {
        const auto key = draw(seed, e0 + l, 0, kStreamRmat);
        state[l] = (uint64_t{key[0]} << 32) | key[1];
        s[l] = 0;
        d[l] = 0;
      }
      for (int level = 0; level < scale; level += 2) {
        const bool second = level + 1 < scale;
        for (int l = 0; l < kLanes; ++l) {  // GCC vectorises this across lanes (-O3)
          state[l] += kSplitMixIncrement;
          const uint64_t word = mix64(state[l]);
          quadrant_bits(word & 0xffffffffu, level, s[l], d[l], t_a, t_ab, t_abc);
          uint64_t s2 = 0, d2 = 0;
          quadrant_bits(word >> 32, level + 1, s2, d2, t_a, t_ab, t_abc);
          s[l] |= second ? s2 : 0;
          d[l] |= second ? d2 : 0;
        }
      }
      for (int l = 0; l < lanes; ++l) {
        uint64_t sl = s[l], dl = d[l];
        for (uint32_t attempt = 1; (sl >= un || dl >= un) && attempt < kMaxAttempts; ++attempt)
          draw_endpoints(e0 + l, attempt, sl, dl);
        if (sl >= un || dl >= un) {  // kMaxAttempts rejections in a row
          sl %= un;
          dl %= un;
        }
        uint32_t s32 = static_cast<uint32_t>(sl), d32 = static_cast<uint32_t>(dl);
        if (params.scramble_ids) {
          s32 = scramble(s32);
          d32 = scramble(d32);
        }
        list.src[static_cast<size_t>(e0 + l)] = static_cast<int32_t>(s32);
        list.dst[static_cast<size_t>(e0 + l)] = static_cast<int32_t>(d32);
      }
    }
  });
  return list;
}

Graph erdos_renyi_graph(int64_t n, int64_t num_edges, uint64_t seed, const BuildOptions& options) {
  const EdgeList list = erdos_renyi_edges(n, num_edges, seed);
  return build_graph(n, n, std::span<const int32_t>(list.src), std::span<const int32_t>(list.dst), options);
}

Graph rmat_graph(int64_t n, int64_t num_edges, uint64_t seed, const RmatParams& params,
                 const BuildOptions& options) {
  const EdgeList list = rmat_edges(n, num_edges, seed, params);
  return build_graph(n, n, std::span<const int32_t>(list.src), std::span<const int32_t>(list.dst), options);
}

}  // namespace edgeattn
