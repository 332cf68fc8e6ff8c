// Neighbour sampling, one hop at a time, each hop a row rebuild (as lib/graph/transforms.cpp):
//   1. count each destination row's sampled edges in parallel, prefix-sum them into row_ptr;
//   2. fill each row in parallel with the input CSR positions of its sampled edges, ascending
//      (Floyd's algorithm without replacement, independent draws with; every draw is
//      neighbor_draw(seed, hop, node, t), so a row depends on nothing but its node; weighted
//      rows descend a sum tree over the row's weights with neighbor_unit(seed, hop, node, t));
//   3. relabel the sources, in parallel and without a hash table, through a scratch array indexed
//      by global id. In order of first appearance (SourceOrder::appearance): every node has a
//      "position" (destination i: i; sampled edge e: num_dst + e). An atomic min over the scratch
//      finds each source's first position; the edges holding one are counted per fixed piece, and
//      a prefix sum over pieces gives each new source its local id, which replaces the position in
//      the scratch array (as -(id + 1), so it can never equal a position). Atomic min is
//      order-independent, so the numbering is the serial one for any thread count.
//      In ascending order (SourceOrder::ascending): the destinations' slots take their ids first;
//      each edge whose source's slot is still unseen claims it (compare-and-swap to kMarked, so
//      each new source is listed once, by whichever edge wins), and the listed sources are
//      ordered by global id: sorted where they are few, else read off a parallel scan of the
//      whole scratch array (counts per piece, a prefix sum, then the ids). Which edge wins a
//      claim varies between runs; the numbering, a function of the set, does not;
//   4. map each edge to its local source, sort each row by (local source, input position) as
//      Graph requires, and reset the touched scratch entries for the next hop.
// The oracle is lib/graph/reference/reference_neighbor_sampler.cpp; tests/graph compares the two
// bit for bit.
#include "edgeattn/graph/neighbor_sampler.hpp"

#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <utility>

#include "core/physical_memory.hpp"
#include "core/prefetch.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "trusted_csr.hpp"

namespace edgeattn {
namespace {

constexpr int64_t kRowGrain = 512;     // destination rows per parallel piece
constexpr int64_t kEdgeGrain = 16384;  // sampled edges per parallel piece (fixes the relabel pieces)
constexpr int64_t kUnseen = std::numeric_limits<int64_t>::max();
// Ascending numbering: a new source claimed by an edge, not yet numbered. Above every position.
constexpr int64_t kMarked = kUnseen - 1;
// Ascending numbering reads the new sources off a scan of the whole scratch array when they are
// at least 1 / kScanFraction of the input's nodes (the scan then costs less than a sort).
constexpr int64_t kScanFraction = 16;
// Up to this fanout Floyd's membership test scans the picks so far; beyond it, a per-thread byte
// mask over the row (both give the same picks: they only answer "was r picked?").
constexpr int64_t kScanFanout = 64;
// Prefetch distances of the relabelling's random scratch accesses: in accesses, and (the local
// columns' pass) in rows.
constexpr int64_t kSlotAhead = 16;
constexpr int64_t kRowsAhead = 4;

// The scratch array of the relabelling: one entry per source node of the input graph, kUnseen
// between hops. Filled in parallel once per call.
class Scratch {
 public:
  explicit Scratch(int64_t n)
      : n_(n), data_(std::make_unique_for_overwrite<int64_t[]>(static_cast<size_t>(n))) {
    int64_t* d = data_.get();
    parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) { std::fill(d + b, d + e, kUnseen); });
  }
  int64_t* data() const { return data_.get(); }
  int64_t size() const { return n_; }

 private:
  int64_t n_;
  std::unique_ptr<int64_t[]> data_;
};

int64_t sample_count(int64_t degree, int64_t fanout, bool replace) {
  if (fanout == -1 || (!replace && degree <= fanout)) return degree;
  if (replace) return degree == 0 ? 0 : fanout;
  return fanout;
}

// The draws of one node at one hop, in order: draws 2t and 2t + 1 are the two halves of one
// philox block (neighbor_bits), computed once for the pair.
class NodeDraws {
 public:
  NodeDraws(uint64_t seed, int64_t hop, int64_t node) : seed_(seed), hop_(hop), node_(node) {}
  /// neighbor_draw(seed, hop, node, t, n), for t = 0, 1, 2, ... in turn.
  uint64_t next(uint64_t t, uint64_t n) {
    if ((t & 1) == 0) bits_ = neighbor_bits(seed_, hop_, node_, t >> 1);
    return scale_draw(bits_[t & 1], n);
  }

 private:
  uint64_t seed_;
  int64_t hop_, node_;
  std::array<uint64_t, 2> bits_{};
};

// Writes the within-row positions of the sampled in-edges of `node` into `out`
// (out.size() == sample_count(degree, fanout, replace)), ascending.
void sample_row(int64_t degree, int64_t fanout, bool replace, uint64_t seed, int64_t hop, int64_t node,
                std::span<int64_t> out) {
  const auto k = static_cast<int64_t>(out.size());
  if (fanout == -1 || (!replace && degree <= fanout)) {
    std::iota(out.begin(), out.end(), int64_t{0});
    return;
  }
  NodeDraws draws(seed, hop, node);
  if (replace) {
    for (int64_t t = 0; t < k; ++t)
      out[static_cast<size_t>(t)] =
          static_cast<int64_t>(draws.next(static_cast<uint64_t>(t), static_cast<uint64_t>(degree)));
  } else if (k <= kScanFanout) {
    for (int64_t t = 0; t < k; ++t) {
      const int64_t j = degree - k + t;
      const auto r = static_cast<int64_t>(draws.next(static_cast<uint64_t>(t), static_cast<uint64_t>(j + 1)));
      const bool seen = std::find(out.begin(), out.begin() + t, r) != out.begin() + t;
      out[static_cast<size_t>(t)] = seen ? j : r;
    }
  } else {
    thread_local std::vector<uint8_t> picked;
    if (static_cast<int64_t>(picked.size()) < degree) picked.resize(static_cast<size_t>(degree), 0);
    for (int64_t t = 0; t < k; ++t) {
      const int64_t j = degree - k + t;
      const auto r = static_cast<int64_t>(draws.next(static_cast<uint64_t>(t), static_cast<uint64_t>(j + 1)));
      const int64_t p = picked[static_cast<size_t>(r)] ? j : r;
      picked[static_cast<size_t>(p)] = 1;
      out[static_cast<size_t>(t)] = p;
    }
    for (int64_t p : out) picked[static_cast<size_t>(p)] = 0;
  }
  std::sort(out.begin(), out.end());
}

// Weighted rows (NeighborSamplerOptions::weights; see the header).
bool bad_weight(float w) { return !(w >= 0.f) || std::isinf(w); }

// Writes the within-row positions of the in-edges of `node` sampled by weight into `out`
// (w: the row's `degree` weights, all valid; out.size() == sample_count(positive weights, fanout,
// replace)), ascending: picks descend the row's sum tree (see the header), a heap in `tree` (node 1
// the root, node i's children 2i and 2i + 1, leaf q at P + q).
void sample_weighted_row(const float* w, int64_t degree, int64_t fanout, bool replace, uint64_t seed,
                         int64_t hop, int64_t node, std::span<int64_t> out) {
  const auto k = static_cast<int64_t>(out.size());
  const int64_t leaves = std::bit_ceil(static_cast<uint64_t>(degree));
  thread_local std::vector<double> tree;
  tree.assign(static_cast<size_t>(2 * leaves), 0.0);
  int64_t positive = 0;  // counted as the leaves are filled: the row's weights are read once
  for (int64_t q = 0; q < degree; ++q) {
    tree[static_cast<size_t>(leaves + q)] = static_cast<double>(w[q]);
    positive += static_cast<int64_t>(w[q] > 0.f);
  }
  if (fanout == -1 || (!replace && positive <= fanout)) {  // every positive in-edge
    size_t t = 0;
    for (int64_t q = 0; q < degree; ++q)
      if (w[q] > 0.f) out[t++] = q;
    return;
  }
  for (int64_t i = leaves - 1; i >= 1; --i)
    tree[static_cast<size_t>(i)] = tree[static_cast<size_t>(2 * i)] + tree[static_cast<size_t>(2 * i + 1)];
  for (int64_t t = 0; t < k; ++t) {
    double x = neighbor_unit(seed, hop, node, static_cast<uint64_t>(t)) * tree[1];
    int64_t i = 1;
    while (i < leaves) {
      const double left = tree[static_cast<size_t>(2 * i)], right = tree[static_cast<size_t>(2 * i + 1)];
      if (left != 0.0 && (right == 0.0 || x < left)) {
        i = 2 * i;
      } else {
        x -= left;
        i = 2 * i + 1;
      }
    }
    out[static_cast<size_t>(t)] = i - leaves;
    if (!replace) {  // the picked leaf leaves the tree; its ancestors are summed again
      tree[static_cast<size_t>(i)] = 0.0;
      for (i /= 2; i >= 1; i /= 2)
        tree[static_cast<size_t>(i)] =
            tree[static_cast<size_t>(2 * i)] + tree[static_cast<size_t>(2 * i + 1)];
    }
  }
  std::sort(out.begin(), out.end());
}

void atomic_min(int64_t& slot, int64_t value) {
  std::atomic_ref<int64_t> ref(slot);
  int64_t seen = ref.load(std::memory_order_relaxed);
  while (value < seen && !ref.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

int64_t load(int64_t& slot) { return std::atomic_ref<int64_t>(slot).load(std::memory_order_relaxed); }

void check_fanout(const char* what, int64_t fanout) {
  if (fanout < -1) raise<InvalidArgument>(what, " is ", fanout, ", expected -1 (all neighbours) or >= 0");
}

// Throws GraphError unless `nodes` are distinct and in [0, graph.num_dst()). `scratch` (square
// graphs) must be all kUnseen and is left so.
void check_destinations(const char* fn, const char* what, const Graph& graph, std::span<const int64_t> nodes,
                        Scratch* scratch) {
  const int64_t n = graph.num_dst();
  const auto m = static_cast<int64_t>(nodes.size());
  const int64_t bad = parallel_find_first(0, m, 1 << 16, [&](int64_t k) {
    const int64_t v = nodes[static_cast<size_t>(k)];
    return (v < 0) | (v >= n);
  });
  if (bad < m)
    raise<GraphError>(fn, ": ", what, "[", bad, "] is ", nodes[static_cast<size_t>(bad)],
                      ", expected in [0, ", n, ")");
  std::vector<int64_t> own;
  int64_t* first = nullptr;
  if (scratch != nullptr) {
    first = scratch->data();
  } else {
    own.assign(static_cast<size_t>(n), kUnseen);
    first = own.data();
  }
  int64_t repeated = -1;
  for (int64_t k = 0; k < m && repeated < 0; ++k) {
    int64_t& slot = first[nodes[static_cast<size_t>(k)]];
    if (slot != kUnseen)
      repeated = k;
    else
      slot = k;
  }
  const int64_t checked = repeated < 0 ? m : repeated;
  int64_t earlier = -1;
  if (repeated >= 0) earlier = first[nodes[static_cast<size_t>(repeated)]];
  if (scratch != nullptr)
    for (int64_t k = 0; k < checked; ++k) first[nodes[static_cast<size_t>(k)]] = kUnseen;
  if (repeated >= 0)
    raise<GraphError>(fn, ": ", what, "[", repeated, "] is ", nodes[static_cast<size_t>(repeated)],
                      ", which appears earlier at ", what, "[", earlier, "]: expected distinct nodes");
}

// Every pass over the scratch reads or writes it at random (2 MiB for a 250k-node graph: beyond
// L2), each access a cache miss, and the atomics do not overlap: each loop prefetches the slot
// kSlotAhead accesses ahead.
template <class Id>
void prefetch_slot(int64_t* first, std::span<const Id> nodes, int64_t k, int64_t end) {
  if (k + kSlotAhead < end) detail::prefetch_write(first + nodes[static_cast<size_t>(k + kSlotAhead)]);
}

// first[nodes[k]] = value(k) for k in [begin, end), in parallel.
template <class Value>
void set_slots(int64_t* first, std::span<const int64_t> nodes, int64_t begin, int64_t end, Value value) {
  parallel_for(begin, end, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      prefetch_slot(first, nodes, k, e);
      first[nodes[static_cast<size_t>(k)]] = value(k);
    }
  });
}

// Step 3 of sample_hop (see the file comment) in order of first appearance: `lead` are the
// destinations that lead the sources (square graphs), `sources` each sampled edge's global source;
// leaves each source's slot in `first` as -(local id + 1) and fills `src_nodes`.
void number_by_appearance(std::span<const int64_t> lead, std::span<const int32_t> sources, int64_t* first,
                          std::vector<int64_t>& src_nodes) {
  const auto num_lead = static_cast<int64_t>(lead.size());
  const auto num_edges = static_cast<int64_t>(sources.size());
  auto source = [&](int64_t e) -> int64_t { return sources[static_cast<size_t>(e)]; };
  auto prefetch_source = [&](int64_t k, int64_t end) { prefetch_slot(first, sources, k, end); };
  set_slots(first, lead, 0, num_lead, [](int64_t i) { return i; });
  parallel_for(0, num_edges, kEdgeGrain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      prefetch_source(k, e);
      atomic_min(first[source(k)], num_lead + k);
    }
  });
  const int64_t pieces = (num_edges + kEdgeGrain - 1) / kEdgeGrain;
  std::vector<int64_t> piece_start(static_cast<size_t>(pieces) + 1, 0);
  parallel_for(0, num_edges, kEdgeGrain, [&](int64_t b, int64_t e) {
    int64_t fresh = 0;
    for (int64_t k = b; k < e; ++k) {
      prefetch_source(k, e);
      fresh += load(first[source(k)]) == num_lead + k;
    }
    piece_start[static_cast<size_t>(b / kEdgeGrain) + 1] = fresh;
  });
  std::partial_sum(piece_start.begin(), piece_start.end(), piece_start.begin());
  const int64_t num_src = num_lead + piece_start.back();

  // Local ids, stored in the scratch as -(id + 1): no position is negative, so the test "is edge
  // k the first?" stays exact while other pieces overwrite their own first entries.
  src_nodes.resize(static_cast<size_t>(num_src));
  std::copy(lead.begin(), lead.end(), src_nodes.begin());
  parallel_for(0, num_edges, kEdgeGrain, [&](int64_t b, int64_t e) {
    int64_t next = num_lead + piece_start[static_cast<size_t>(b / kEdgeGrain)];
    for (int64_t k = b; k < e; ++k) {
      prefetch_source(k, e);
      const int64_t g = source(k);
      if (load(first[g]) != num_lead + k) continue;
      src_nodes[static_cast<size_t>(next)] = g;
      std::atomic_ref<int64_t>(first[g]).store(-(next + 1), std::memory_order_relaxed);
      ++next;
    }
  });
  set_slots(first, lead, 0, num_lead, [](int64_t i) { return -(i + 1); });
}

// Step 3 in ascending order (same contract as number_by_appearance); `num_nodes` is the scratch's
// length, the input graph's sources.
void number_ascending(int64_t num_nodes, std::span<const int64_t> lead, std::span<const int32_t> sources,
                      int64_t* first, std::vector<int64_t>& src_nodes) {
  const auto num_lead = static_cast<int64_t>(lead.size());
  const auto num_edges = static_cast<int64_t>(sources.size());
  set_slots(first, lead, 0, num_lead, [](int64_t i) { return -(i + 1); });
  // Claims: each piece lists the sources it was first to mark (which piece lists a source varies
  // with the schedule; the set of all of them does not).
  const int64_t pieces = (num_edges + kEdgeGrain - 1) / kEdgeGrain;
  std::vector<std::vector<int64_t>> claimed(static_cast<size_t>(pieces));
  parallel_for(0, num_edges, kEdgeGrain, [&](int64_t b, int64_t e) {
    std::vector<int64_t>& mine = claimed[static_cast<size_t>(b / kEdgeGrain)];
    for (int64_t k = b; k < e; ++k) {
      prefetch_slot(first, sources, k, e);
      const int64_t g = sources[static_cast<size_t>(k)];
      std::atomic_ref<int64_t> slot(first[g]);
      int64_t seen = slot.load(std::memory_order_relaxed);
      if (seen == kUnseen && slot.compare_exchange_strong(seen, kMarked, std::memory_order_relaxed))
        mine.push_back(g);
    }
  });
  int64_t fresh = 0;
  for (const auto& c : claimed) fresh += static_cast<int64_t>(c.size());
  src_nodes.resize(static_cast<size_t>(num_lead + fresh));
  std::copy(lead.begin(), lead.end(), src_nodes.begin());
  int64_t* out = src_nodes.data() + num_lead;
  if (fresh * kScanFraction >= num_nodes) {
    // Many: the marked slots of the whole scratch array, in index order.
    constexpr int64_t kScanGrain = int64_t{1} << 16;
    const int64_t scan_pieces = (num_nodes + kScanGrain - 1) / kScanGrain;
    std::vector<int64_t> start(static_cast<size_t>(scan_pieces) + 1, 0);
    parallel_for(0, num_nodes, kScanGrain, [&](int64_t b, int64_t e) {
      start[static_cast<size_t>(b / kScanGrain) + 1] = std::count(first + b, first + e, kMarked);
    });
    std::partial_sum(start.begin(), start.end(), start.begin());
    parallel_for(0, num_nodes, kScanGrain, [&](int64_t b, int64_t e) {
      int64_t next = start[static_cast<size_t>(b / kScanGrain)];
      for (int64_t g = b; g < e; ++g)
        if (first[g] == kMarked) out[next++] = g;
    });
  } else {
    // Few: the claims, concatenated and sorted.
    int64_t at = 0;
    for (const auto& c : claimed) {
      std::copy(c.begin(), c.end(), out + at);
      at += static_cast<int64_t>(c.size());
    }
    tbb::parallel_sort(out, out + fresh);
  }
  set_slots(first, src_nodes, num_lead, num_lead + fresh, [](int64_t j) { return -(j + 1); });
}

// Throws InvalidArgument unless `weights` is empty or one per edge of `graph`.
void check_weight_count(const char* fn, const Graph& graph, std::span<const float> weights) {
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != graph.num_edges())
    raise<InvalidArgument>(fn, ": weights has ", weights.size(),
                           " entries, expected none (uniform sampling) or ", graph.num_edges(),
                           " (one per edge of the graph, by CSR position)");
}

// A hop's sampled edges must fit in memory: with replacement a fanout is taken at its word (exactly
// that many draws a node), so fanouts = {1000000000} would otherwise grow the process until the
// system kills it. counts[1 + i] is destination i's edge count; the check sums them in double
// (they may overflow int64) against 3/4 of physical memory, at 24 bytes an edge (its input position, source,
// local column, the sort's pair).
void check_sample_fits(const char* fn, const std::vector<int64_t>& counts, int64_t hop, int64_t fanout,
                       bool replace) {
  double edges = 0;
  for (size_t i = 1; i < counts.size(); ++i) edges += static_cast<double>(counts[i]);
  const double limit = 0.75 * static_cast<double>(detail::physical_memory_bytes());
  constexpr double kBytesPerEdge = 24;
  if (edges * kBytesPerEdge <= limit && edges < static_cast<double>(std::numeric_limits<int64_t>::max() / 2))
    return;
  raise<InvalidArgument>(fn, ": hop ", hop, " would sample ", edges, " edges (fanout ", fanout,
                         replace ? " with replacement: exactly that many draws per node" : "", ", over ",
                         counts.size() - 1, " nodes): about ", edges * kBytesPerEdge / 1e9,
                         " GB, more than the ", limit / 1e9,
                         " GB a sample may take (3/4 of this machine's memory); lower the fanout");
}

// One hop over validated destinations; `first` is the scratch (all kUnseen in and out). `weights`:
// empty or one per edge (checked); each weight read is checked here, `fn` naming the caller.
Block sample_hop(const char* fn, const Graph& graph, std::span<const int64_t> dst, int64_t fanout,
                 bool replace, uint64_t seed, int64_t hop, SourceOrder order, std::span<const float> weights,
                 int64_t* first) {
  const auto m = static_cast<int64_t>(dst.size());
  const bool square = graph.num_dst() == graph.num_src();
  const int64_t num_lead = square ? m : 0;  // sources that are the destinations themselves
  const auto in_ptr = graph.row_ptr();
  const int32_t* in_col = graph.col_idx().data();

  Block block;
  block.dst_nodes.assign(dst.begin(), dst.end());

  auto degree = [&](int64_t v) {
    return in_ptr[static_cast<size_t>(v) + 1] - in_ptr[static_cast<size_t>(v)];
  };
  // The destinations are scattered over the graph, so both passes over them are bound by the
  // latency of their random reads: each prefetches the row offsets kAhead destinations ahead and
  // (pass 2) the row's columns half as far ahead, once its offsets have arrived.
  constexpr int64_t kAhead = 16, kRowLines = 8;
  auto prefetch_offsets = [&](int64_t i, int64_t end) {
    if (i + kAhead < end)
      detail::prefetch_read<3>(&in_ptr[static_cast<size_t>(dst[static_cast<size_t>(i + kAhead)])]);
  };
  // Weighted rows read every weight of the row, in both passes: up to kRowLines lines of them,
  // kAhead / 2 destinations ahead.
  const bool weighted = !weights.empty();
  auto prefetch_weights = [&](int64_t i, int64_t end) {
    if (!weighted || i + kAhead / 2 >= end) return;
    const int64_t u = dst[static_cast<size_t>(i + kAhead / 2)];
    const float* first_w = weights.data() + in_ptr[static_cast<size_t>(u)];
    const float* last_w =
        std::min(weights.data() + in_ptr[static_cast<size_t>(u) + 1], first_w + 16 * kRowLines);
    for (const float* x = first_w; x < last_w; x += 16) detail::prefetch_read<3>(x);
  };

  // 1. Row counts; weighted, the positive in-edges' counts, every weight read checked (the lowest
  // bad position is reported, whatever the thread count).
  std::vector<int64_t> row_ptr(static_cast<size_t>(m) + 1, 0);
  int64_t bad = kUnseen;
  parallel_for(0, m, kRowGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      prefetch_offsets(i, e);
      prefetch_weights(i, e);
      const int64_t v = dst[static_cast<size_t>(i)];
      int64_t d = degree(v);
      if (weighted) {  // d becomes the count of positive weights, checked in the same pass
        const float* w = weights.data() + in_ptr[static_cast<size_t>(v)];
        int64_t positive = 0;
        for (int64_t q = 0; q < d; ++q) {
          if (bad_weight(w[q])) {  // the row's count no longer matters: the call fails below
            atomic_min(bad, in_ptr[static_cast<size_t>(v)] + q);
            break;
          }
          positive += static_cast<int64_t>(w[q] > 0.f);
        }
        d = positive;
      }
      row_ptr[static_cast<size_t>(i) + 1] = sample_count(d, fanout, replace);
    }
  });
  if (bad != kUnseen) {
    const auto node = std::upper_bound(in_ptr.begin(), in_ptr.end(), bad) - in_ptr.begin() - 1;
    raise<InvalidArgument>(fn, ": weights[", bad, "] (an in-edge of node ", node, ") is ",
                           weights[static_cast<size_t>(bad)], ", expected a finite weight >= 0");
  }
  check_sample_fits(fn, row_ptr, hop, fanout, replace);
  std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
  const int64_t num_edges = row_ptr.back();

  // 2. Sampled input CSR positions, ascending within each row, and their global sources (read here,
  // next to the row's other columns, rather than gathered from the whole graph by each later pass).
  std::vector<int64_t> edge_ids(static_cast<size_t>(num_edges));
  std::vector<int32_t> sources(static_cast<size_t>(num_edges));
  parallel_for(0, m, kRowGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      prefetch_offsets(i, e);
      if (i + kAhead / 2 < e) {  // the row's columns, up to kRowLines cache lines
        const int64_t u = dst[static_cast<size_t>(i + kAhead / 2)];
        const int32_t* first_col = in_col + in_ptr[static_cast<size_t>(u)];
        const int32_t* last_col =
            std::min(in_col + in_ptr[static_cast<size_t>(u) + 1], first_col + 16 * kRowLines);
        for (const int32_t* c = first_col; c < last_col; c += 16) detail::prefetch_read<3>(c);
      }
      prefetch_weights(i, e);
      const int64_t v = dst[static_cast<size_t>(i)];
      const int64_t begin = row_ptr[static_cast<size_t>(i)];
      const auto out = std::span<int64_t>(edge_ids).subspan(
          static_cast<size_t>(begin), static_cast<size_t>(row_ptr[static_cast<size_t>(i) + 1] - begin));
      const int64_t base = in_ptr[static_cast<size_t>(v)];
      if (weighted) {
        sample_weighted_row(weights.data() + base, degree(v), fanout, replace, seed, hop, v, out);
      } else {
        sample_row(degree(v), fanout, replace, seed, hop, v, out);
      }
      int32_t* src = sources.data() + begin;
      for (int64_t& p : out) {
        p += base;
        *src++ = in_col[p];
      }
    }
  });

  // 3. Local source ids (number_by_appearance, number_ascending), left in the scratch as
  // -(id + 1); 4 reads them back and resets the touched slots.
  auto source = [&](int64_t e) -> int64_t { return sources[static_cast<size_t>(e)]; };
  if (order == SourceOrder::ascending) {
    number_ascending(graph.num_src(), dst.first(static_cast<size_t>(num_lead)), sources, first,
                     block.src_nodes);
  } else {
    number_by_appearance(dst.first(static_cast<size_t>(num_lead)), sources, first, block.src_nodes);
  }
  const auto num_src = static_cast<int64_t>(block.src_nodes.size());

  // 4. Local columns, rows sorted by (local source, input position).
  std::vector<int32_t> col_idx(static_cast<size_t>(num_edges));
  parallel_for(0, m, kRowGrain, [&](int64_t b, int64_t e) {
    thread_local std::vector<std::pair<int32_t, int64_t>> row;
    for (int64_t i = b; i < e; ++i) {
      if (i + kRowsAhead < e)  // the local ids of a row some rows ahead
        for (int64_t k = row_ptr[static_cast<size_t>(i + kRowsAhead)];
             k < row_ptr[static_cast<size_t>(i + kRowsAhead) + 1]; ++k)
          detail::prefetch_read<3>(first + source(k));
      const auto begin = static_cast<size_t>(row_ptr[static_cast<size_t>(i)]);
      const auto end = static_cast<size_t>(row_ptr[static_cast<size_t>(i) + 1]);
      row.clear();
      for (size_t k = begin; k < end; ++k)
        row.emplace_back(static_cast<int32_t>(-first[sources[k]] - 1), edge_ids[k]);
      if (!std::is_sorted(row.begin(), row.end())) std::sort(row.begin(), row.end());
      for (size_t k = begin; k < end; ++k) {
        col_idx[k] = row[k - begin].first;
        edge_ids[k] = row[k - begin].second;
      }
    }
  });
  set_slots(first, block.src_nodes, 0, num_src, [](int64_t) { return kUnseen; });

  block.graph = detail::TrustedCsr::make(m, num_src, std::move(row_ptr), std::move(col_idx), {}, {});
  block.edge_ids = std::move(edge_ids);
  return block;
}

}  // namespace

SourceOrder parse_source_order(const std::string& name) {
  if (name == "appearance") return SourceOrder::appearance;
  if (name == "ascending") return SourceOrder::ascending;
  raise<InvalidArgument>("source order '", name, "': expected appearance or ascending");
}

const char* to_string(SourceOrder order) {
  return order == SourceOrder::ascending ? "ascending" : "appearance";
}

Block sample_block(const Graph& graph, std::span<const int64_t> dst_nodes, int64_t fanout, bool replace,
                   uint64_t seed, int64_t hop, SourceOrder order, std::span<const float> weights) {
  check_fanout("sample_block: fanout", fanout);
  check_weight_count("sample_block", graph, weights);
  Scratch scratch(graph.num_src());
  const bool square = graph.num_dst() == graph.num_src();
  check_destinations("sample_block", "dst_nodes", graph, dst_nodes, square ? &scratch : nullptr);
  return sample_hop("sample_block", graph, dst_nodes, fanout, replace, seed, hop, order, weights,
                    scratch.data());
}

SampledSubgraph sample_neighbors(const Graph& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options) {
  const auto& fanouts = options.fanouts;
  if (fanouts.empty())
    raise<InvalidArgument>("sample_neighbors: options.fanouts is empty, expected one fanout per layer");
  for (size_t h = 0; h < fanouts.size(); ++h)
    if (fanouts[h] < -1)
      raise<InvalidArgument>("sample_neighbors: options.fanouts[", h, "] is ", fanouts[h],
                             ", expected -1 (all neighbours) or >= 0");
  const bool square = graph.num_dst() == graph.num_src();
  if (!square && fanouts.size() > 1)
    raise<GraphError>("sample_neighbors: a bipartite graph (num_dst=", graph.num_dst(),
                      ", num_src=", graph.num_src(),
                      ") has sources that are not destinations, so it can be sampled for 1 hop, got ",
                      fanouts.size(), " fanouts");
  check_weight_count("sample_neighbors", graph, options.weights);
  Scratch scratch(graph.num_src());
  check_destinations("sample_neighbors", "seeds", graph, seeds, square ? &scratch : nullptr);

  SampledSubgraph out;
  out.seeds.assign(seeds.begin(), seeds.end());
  const auto layers = fanouts.size();
  out.blocks.resize(layers);
  for (size_t h = 0; h < layers; ++h) {
    // Hop h is the (layers - 1 - h)-th block; its destinations are hop h - 1's sources.
    const std::span<const int64_t> dst =
        h == 0 ? seeds : std::span<const int64_t>(out.blocks[layers - h].src_nodes);
    out.blocks[layers - 1 - h] =
        sample_hop("sample_neighbors", graph, dst, fanouts[h], options.replace, options.seed,
                   static_cast<int64_t>(h), options.order, options.weights, scratch.data());
  }
  out.input_nodes = out.blocks.front().src_nodes;
  return out;
}

Block full_neighborhood_block(const Graph& graph, std::span<const int64_t> dst_nodes) {
  return sample_block(graph, dst_nodes, /*fanout=*/-1, /*replace=*/false, /*seed=*/0, /*hop=*/0);
}

}  // namespace edgeattn
