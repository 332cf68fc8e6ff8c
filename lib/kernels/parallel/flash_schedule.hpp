// What the tiled forward and backward share around the microkernels (flash_microkernel.hpp):
// tile sizes per vector policy, the per-head packed operands, the rows' source ranges with each
// tile's hull, and the one dispatch from SimdPath to a policy.
#pragma once

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/tensor_storage.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "kernels/parallel/flash_microkernel.hpp"
#include "kernels/parallel/tiled_attention.hpp"

namespace edgeattn::kernels::flash {

/// The widest run of sources RowRanges::mask takes: no pass's column block may be wider.
inline constexpr int64_t kMaxMaskedRun = 256;

/// Tile sizes, chosen by measurement at d = 64 (tiled_attention.hpp says what each one tiles): the
/// forward's on a 2-core Zen 3 (AVX2), the column pass's on a 2-core Ice Lake (AVX-512). Row tiles
/// are whole strips of MR rows; the column pass's sizes are multiples of every MR (4, 6, 12), as
/// they are the M of its products (the earlier 64 rows by 128 columns left AVX-512 remainder
/// strips of 4 and 8 rows, at a third and two thirds of the 12-row strip's speed: the backward
/// was about 1.25x slower).
template <class P>
struct TileShape {
  static constexpr int64_t kRows = int64_t{P::kRows} * 8;  // forward and row-pass row tile
  static constexpr int64_t kCols = 256;                    // forward and row-pass column block
  static constexpr int64_t kColumnTile = 192;              // column pass: columns per task
  static constexpr int64_t kColumnPassRows = 96;           // column pass: rows per product
  static_assert(kCols % kPanel<P> == 0 && kColumnTile % kPanel<P> == 0);
  static_assert(kColumnTile % P::kRows == 0 && kColumnPassRows % P::kRows == 0);
  static_assert(kCols <= kMaxMaskedRun && kColumnTile <= kMaxMaskedRun, "RowRanges::mask's runs are bounded");
};

/// A per-head view of one B operand holding heads [first, ...): head h starts at
/// base + (h - first) * head_step, rows ld apart.
struct HeadOperand {
  const float* base = nullptr;
  int64_t head_step = 0, ld = 0, first = 0;
  const float* head(int64_t h) const { return base + (h - first) * head_step; }
};

/// Heads [begin, end) of `heads`: the slice of them an operand is packed for.
struct HeadRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

/// Storage for packed copies and other per-call scratch; filled in parallel, never
/// zero-initialised first. Blocks come from and go back to the tensors' recycling cache
/// (core/tensor_storage.hpp): a forward and backward at H = 8, N = 1024 packs 14 MiB, and fresh
/// blocks each call were page-faulted and cleared again (72% of the process's page faults, about
/// 5% of its time on a 2-core Zen 3).
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { release(); }

  /// `n` floats. The previous contents are freed first, so that the next slice of heads' copy
  /// does not coexist with the last one's.
  float* allocate(int64_t n) {
    release();
    data_ = detail::acquire_storage(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float), capacity_);
    return data_;
  }
  float* data() const { return data_; }

 private:
  void release() noexcept {
    if (data_) detail::release_storage(data_, capacity_);
    data_ = nullptr;
  }
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

/// The packed operands' budget per slice of heads, in floats (0: the default); set by the test hook
/// set_tiled_budgets.
inline std::atomic<int64_t> g_packed_budget{0};
/// The tiled backward's dQ partials' budget per slice of heads, in floats (0: the default); set by
/// set_tiled_budgets.
inline std::atomic<int64_t> g_dq_partial_budget{0};

/// Heads per slice, when one head's packed operands take `per_head` floats: as many as fit in the
/// larger of 4 Mi floats (16 MiB) and a quarter of all heads' (or in g_packed_budget when set).
inline int64_t heads_per_slice(int64_t per_head, int64_t heads) {
  const int64_t cap = g_packed_budget.load(std::memory_order_relaxed);
  const int64_t budget = cap > 0 ? cap : std::max<int64_t>(int64_t{4} << 20, per_head * heads / 4);
  return std::clamp<int64_t>(budget / std::max<int64_t>(per_head, 1), 1, std::max<int64_t>(heads, 1));
}

/// Rows per packing task: a multiple of every panel width.
inline constexpr int64_t kPackRows = 512;

/// src [n, heads, w] packed per head as NR-wide panels of its transpose times `scale`:
/// panel p of head h = the B operand of S = Q (scale K)^T for sources [p NR, p NR + NR), rows
/// NR apart (ld = NR), panel_stride w * NR. Sources past n are zero. Only the heads of `hr`
/// (default: all) are packed.
template <class P>
HeadOperand pack_panels(int64_t n, int64_t heads, int64_t w, const float* src, float scale, PackBuffer& buf,
                        HeadRange hr = {}) {
  if (hr.size() <= 0) hr = {0, heads};
  const int64_t np = round_up_panel<P>(n), step = np * w;
  float* dst = buf.allocate(hr.size() * step);
  const int64_t chunks = (np + kPackRows - 1) / kPackRows;
  parallel_for(0, hr.size() * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t x = t / chunks, h = hr.begin + x, r0 = (t % chunks) * kPackRows,
                    rows = std::min(kPackRows, np - r0);
      float* panel = dst + x * step + r0 * w;
      // Chunks start on panel boundaries, so n - r0 > 0 and the last panel is zero-padded.
      pack_transposed_panels<P>(std::min(rows, n - r0), w, src + r0 * heads * w + h * w, heads * w, scale,
                                panel);
    }
  });
  return {dst, step, kPanel<P>, hr.begin};
}

/// True when rows_operand copies src (several heads, or a width that is no multiple of NR).
template <class P>
constexpr bool rows_operand_copies(int64_t heads, int64_t w) {
  return heads != 1 || w % kPanel<P> != 0;
}

/// src [n, heads, w] as a row-major B operand with width round_up_panel(w): src itself for one
/// head whose w is a multiple of NR, else a copy per head (padded) of the heads of `hr` (default:
/// all). With several heads the rows of one head lie heads * w floats apart, a large power of two
/// at the usual widths (8 x 64 floats: 2 KiB), so a block of them falls into a few L1 sets and
/// evicts itself; the per-head copy made the H = 8, d = 64 forward at N = 4096 1.7x faster (2-core
/// Zen 3).
template <class P>
HeadOperand rows_operand(int64_t n, int64_t heads, int64_t w, const float* src, PackBuffer& buf,
                         HeadRange hr = {}) {
  if (hr.size() <= 0) hr = {0, heads};
  if (!rows_operand_copies<P>(heads, w)) return {src, w, heads * w, 0};
  const int64_t wp = round_up_panel<P>(w);
  float* dst = buf.allocate(hr.size() * n * wp);
  const int64_t chunks = (n + kPackRows - 1) / kPackRows;
  parallel_for(0, hr.size() * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t x = t / chunks, h = hr.begin + x, r0 = (t % chunks) * kPackRows,
                    rows = std::min(kPackRows, n - r0);
      pack_rows<P>(rows, w, src + r0 * heads * w + h * w, heads * w, dst + x * n * wp + r0 * wp);
    }
  });
  return {dst, n * wp, wp, hr.begin};
}

/// A pattern the tiled schedule runs on: one whose rows are contiguous source ranges, or an
/// explicit graph (CsrPattern) whose rows then run over their hulls with the columns that are not
/// edges masked out. tiled_applies decides when the latter pays (the graph must have no
/// duplicate edge: the mask holds each (row, source) pair once).
template <class P>
concept TiledPattern = ContiguousRowPattern<P> || std::is_same_v<P, CsrPattern>;

/// The rows' sources as the schedule sees them. Row i's hull is [first, last): its whole range for
/// a contiguous-row pattern, or from its first to one past its last source for a graph, whose rows
/// are then `masked`: within the hull only the graph's columns are edges. Tiles of `tile` rows get
/// the hull of their rows' hulls (empty: lo >= hi). Edge ids are the pattern's CSR numbering.
struct RowRanges {
  std::vector<int64_t> first, last, hull_lo, hull_hi;
  int64_t tile = 1;

  template <class Pat>
  RowRanges(const Pat& p, int64_t tile_rows) : tile(tile_rows) {
    const int64_t nd = p.num_dst(), tiles = (nd + tile - 1) / tile;
    first.resize(static_cast<size_t>(nd));
    last.resize(static_cast<size_t>(nd));
    hull_lo.assign(static_cast<size_t>(tiles), INT64_MAX);
    hull_hi.assign(static_cast<size_t>(tiles), INT64_MIN);
    if constexpr (!ContiguousRowPattern<Pat>) {
      row_ptr_ = p.graph().row_ptr().data();
      cols_ = p.graph().col_idx().data();
    } else {
      base_.resize(static_cast<size_t>(nd));
    }
    for (int64_t i = 0; i < nd; ++i) {
      int64_t f = 0, e = 0;
      if constexpr (ContiguousRowPattern<Pat>) {
        std::tie(f, e) = p.row_range(i);
        base_[static_cast<size_t>(i)] = p.row_offset(i) - f;
      } else if (row_ptr_[i] < row_ptr_[i + 1]) {
        f = cols_[row_ptr_[i]];
        e = int64_t{cols_[row_ptr_[i + 1] - 1]} + 1;
      }
      first[static_cast<size_t>(i)] = f;
      last[static_cast<size_t>(i)] = e;
      if (f < e) {
        const size_t b = static_cast<size_t>(i / tile);
        hull_lo[b] = std::min(hull_lo[b], f);
        hull_hi[b] = std::max(hull_hi[b], e);
      }
    }
  }
  int64_t tiles() const { return static_cast<int64_t>(hull_lo.size()); }
  /// True when rows are masked within their hulls (a graph's rows).
  bool masked() const { return cols_ != nullptr; }

  /// Sources of row i's hull inside [c0, c1): [b, e) with b <= e (empty when the hull misses
  /// them). A masked row may have no edge in [b, e): `edges` says.
  std::pair<int64_t, int64_t> clip(int64_t i, int64_t c0, int64_t c1) const {
    const int64_t b = std::max(first[static_cast<size_t>(i)], c0);
    return {b, std::max(b, std::min(last[static_cast<size_t>(i)], c1))};
  }
  /// Union of the clipped ranges of rows [r0, r1) (empty: lo >= hi).
  std::pair<int64_t, int64_t> span(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = r0; i < r1; ++i) {
      const auto [b, e] = clip(i, c0, c1);
      if (b < e) lo = std::min(lo, b), hi = std::max(hi, e);
    }
    return {lo, hi};
  }
  /// The edges [k0, k1) of row i whose sources are in [b, e) (a clip of the row's hull): for
  /// contiguous rows all of them, for a masked row those the graph has. A masked row finds k0 by
  /// binary search, or by walking forward from `*cursor` (an edge of row i at or before k0, e.g.
  /// the k1 of the row's previous block when blocks are visited in ascending order), and k1 by
  /// walking on from k0; *cursor is then set to k1.
  std::pair<int64_t, int64_t> edges(int64_t i, int64_t b, int64_t e, int64_t* cursor = nullptr) const {
    if (!masked()) {
      const int64_t base = base_[static_cast<size_t>(i)];
      return {base + b, base + std::max(b, e)};
    }
    const int64_t end = row_ptr_[i + 1];
    int64_t k = row_ptr_[i];
    if (cursor) {
      k = std::max(k, *cursor);
      while (k < end && cols_[k] < b) ++k;
    } else if (b > first[static_cast<size_t>(i)]) {
      k = std::lower_bound(cols_ + k, cols_ + end, b) - cols_;
    }
    const int64_t k0 = k;
    while (k < end && cols_[k] < e) ++k;
    if (cursor) *cursor = k;
    return {k0, k};
  }
  /// f(j, k) for the edges k in [k0, k1) that `edges(i, b, e)` returned, j the source of edge k.
  template <class F>
  void for_each_edge(int64_t k0, int64_t k1, int64_t b, F&& f) const {
    if (masked())
      for (int64_t k = k0; k < k1; ++k) f(int64_t{cols_[k]}, k);
    else
      for (int64_t k = k0; k < k1; ++k) f(b + (k - k0), k);
  }
  /// Masked rows: row[j] = -inf for the sources j in [b, e) that are not among the edges
  /// [k0, k1) (which `edges(i, b, e)` returned, not empty); e - b <= kMaxMaskedRun. Sparse runs
  /// save the edges' entries, fill, and put them back; dense runs fill the gaps between edges.
  /// Nothing for contiguous rows.
  void mask(float* row, int64_t b, int64_t e, int64_t k0, int64_t k1) const {
    if (!masked()) return;
    if (2 * (k1 - k0) > e - b) {
      int64_t next = b;  // the first source not yet known to be an edge or masked
      for (int64_t k = k0; k < k1; ++k) {
        for (int64_t j = next; j < cols_[k]; ++j) row[j] = -INFINITY;
        next = int64_t{cols_[k]} + 1;
      }
      std::fill(row + next, row + e, -INFINITY);
      return;
    }
    float kept[kMaxMaskedRun];
    for (int64_t k = k0; k < k1; ++k) kept[k - k0] = row[cols_[k]];
    std::fill(row + b, row + e, -INFINITY);
    for (int64_t k = k0; k < k1; ++k) row[cols_[k]] = kept[k - k0];
  }

 private:
  const int64_t* row_ptr_ = nullptr;  // masked rows: the graph's CSR
  const int32_t* cols_ = nullptr;
  std::vector<int64_t> base_;  // contiguous rows: edge id of (i, j) = base_[i] + j
};

inline int64_t align_down(int64_t x, int64_t a) { return x / a * a; }
inline int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// One strip of the row schedule: rows [i, i + mr) against the column block [c0, c1), which the
/// rows reach at sources [u0, u1) (not empty), inside the panels [pa, pa + w) (w a multiple of NR).
struct Strip {
  int64_t i, mr, c0, c1, u0, u1, pa, w;
};

/// The row schedule of a tile, rows [r0, r0 + rows) over their hull [lo, hi): f(strip) for every
/// BC-column block (outer) and MR-row strip (inner), skipping strips whose rows reach no source of
/// the block. The forward and both row computations of the backward walk it in this order.
template <int64_t MR, int64_t BC, int64_t NR, class F>
void for_each_strip(const RowRanges& rr, int64_t r0, int64_t rows, int64_t lo, int64_t hi, F&& f) {
  for (int64_t c0 = lo < hi ? align_down(lo, BC) : hi; c0 < hi; c0 += BC) {
    const int64_t c1 = std::min(c0 + BC, hi);
    for (int64_t i = r0; i < r0 + rows; i += MR) {
      const int64_t mr = std::min(MR, r0 + rows - i);
      const auto [u0, u1] = rr.span(i, i + mr, c0, c1);
      if (u0 >= u1) continue;
      const int64_t pa = align_down(u0, NR);
      f(Strip{i, mr, c0, c1, u0, u1, pa, align_up(u1, NR) - pa});
    }
  }
}

/// Calls f(Policy{}) for the policy `path` names.
template <class F>
void with_policy(SimdPath path, F&& f) {
  switch (path) {
    case SimdPath::automatic:
      f(Best{});
      return;
    case SimdPath::portable:
      f(Portable{});
      return;
    case SimdPath::avx2:
#if defined(__AVX2__) && defined(__FMA__)
      f(Avx2{});
      return;
#else
      break;
#endif
    case SimdPath::avx512:
#if defined(__AVX512F__)
      f(Avx512{});
      return;
#else
      break;
#endif
  }
  throw InvalidArgument("tiled attention: SIMD path " + std::to_string(static_cast<int>(path)) +
                        " is not compiled into this build");
}

}  // namespace edgeattn::kernels::flash
