// Inline bodies of the structured attention patterns declared in pattern.hpp.
//
// These loops run inside the attention kernels, once per row or column, so every member here is
// O(1) or O(log) per edge and never materialises a row: a row's sources and their CSR edge
// numbers are computed from the pattern's parameters and the row offsets cached at construction.
// Included at the end of pattern.hpp; do not include directly.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "edgeattn/graph/graph.hpp"
#include "edgeattn/graph/pattern.hpp"

namespace edgeattn {

// ---------------------------------------------------------------------------------------------
// PatternRows
// ---------------------------------------------------------------------------------------------

template <class RowCount>
void PatternRows::init_rows(int64_t num_dst, int64_t num_src, RowCount&& row_count) {
  num_dst_ = num_dst;
  num_src_ = num_src;
  auto offsets = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(num_dst) + 1);
  int64_t* o = offsets->data();
  o[0] = 0;
  for (int64_t i = 0; i < num_dst; ++i) o[i + 1] = o[i] + static_cast<int64_t>(row_count(i));
  // The chunk size depends on the pattern's size only (never on the thread count), so per-chunk
  // partial results are reproducible; about 256 chunks for large patterns, none tiny.
  const int64_t target = std::max<int64_t>(2048, (o[num_dst] + num_dst) / 256);
  partition_ = std::make_shared<const std::vector<int64_t>>(balanced_row_chunks(*offsets, target));
  offsets_ = std::move(offsets);
}

// ---------------------------------------------------------------------------------------------
// CompletePattern: row i holds every j, so edge (i, j) is i * num_src + j.
// ---------------------------------------------------------------------------------------------

inline bool CompletePattern::contains(int64_t i, int64_t j) const {
  return i >= 0 && i < num_dst() && j >= 0 && j < num_src();
}

inline std::pair<int64_t, int64_t> CompletePattern::row_range(int64_t) const { return {0, num_src()}; }

template <class F>
void CompletePattern::for_each_in_row(int64_t i, F&& f) const {
  const int64_t ns = num_src();
  const int64_t base = i * ns;
  for (int64_t j = 0; j < ns; ++j) f(static_cast<int32_t>(j), base + j);
}

template <class F>
void CompletePattern::for_each_in_col(int64_t j, F&& f) const {
  const int64_t nd = num_dst(), ns = num_src();
  for (int64_t i = 0; i < nd; ++i) f(static_cast<int32_t>(i), i * ns + j);
}

// ---------------------------------------------------------------------------------------------
// CausalPattern: row i is the prefix [0, i + shift + 1) clamped to [0, num_src), so the rank of j
// in its row is j itself.
// ---------------------------------------------------------------------------------------------

inline bool CausalPattern::contains(int64_t i, int64_t j) const {
  return i >= 0 && i < num_dst() && j >= 0 && j < num_src() && j <= i + shift_;
}

inline std::pair<int64_t, int64_t> CausalPattern::row_range(int64_t i) const {
  // i + shift_ + 1 <= num_src for every row i < num_dst; only the lower clamp is needed.
  return {0, std::max<int64_t>(0, i + shift_ + 1)};
}

template <class F>
void CausalPattern::for_each_in_row(int64_t i, F&& f) const {
  const int64_t last = std::max<int64_t>(0, i + shift_ + 1);
  const int64_t base = row_offset(i);
  for (int64_t j = 0; j < last; ++j) f(static_cast<int32_t>(j), base + j);
}

template <class F>
void CausalPattern::for_each_in_col(int64_t j, F&& f) const {
  const int64_t nd = num_dst();
  const std::span<const int64_t> off = row_offsets();
  for (int64_t i = std::max<int64_t>(0, j - shift_); i < nd; ++i)
    f(static_cast<int32_t>(i), off[static_cast<size_t>(i)] + j);
}

// ---------------------------------------------------------------------------------------------
// WindowPattern: row i holds j = i + k*d for k in [k_lo(i), k_hi(i)], where
//   k_lo(i) = -min(left, floor(i / d)),  k_hi(i) = min(right, floor((n - 1 - i) / d)).
// k = 0 is always inside, so no row is empty, and the rank of j = i + k*d is k - k_lo(i).
// The bounds are written with min() on the quotients so that huge left/right never overflow.
// ---------------------------------------------------------------------------------------------

inline bool WindowPattern::contains(int64_t i, int64_t j) const {
  const int64_t n = num_dst();
  if (i < 0 || i >= n || j < 0 || j >= n) return false;
  const int64_t diff = j - i;
  if (diff % dilation_ != 0) return false;
  const int64_t k = diff / dilation_;
  return k >= -left_ && k <= right_;
}

inline std::pair<int64_t, int64_t> WindowPattern::row_range(int64_t i) const {
  const int64_t n = num_dst();
  const int64_t k_lo = std::min(left_, i / dilation_);
  const int64_t k_hi = std::min(right_, (n - 1 - i) / dilation_);
  return {i - k_lo * dilation_, i + k_hi * dilation_ + 1};
}

template <class F>
void WindowPattern::for_each_in_row(int64_t i, F&& f) const {
  const int64_t n = num_dst(), d = dilation_;
  const int64_t back = std::min(left_, i / d);            // steps to the left, -k_lo
  const int64_t fwd = std::min(right_, (n - 1 - i) / d);  // steps to the right, k_hi
  const int64_t base = row_offset(i);
  const int64_t count = back + fwd + 1;
  const int64_t first = i - back * d;
  for (int64_t r = 0; r < count; ++r) f(static_cast<int32_t>(first + r * d), base + r);
}

template <class F>
void WindowPattern::for_each_in_col(int64_t j, F&& f) const {
  // Row i = j + m*d holds j with k = -m, m in [-right, left]; its rank there is
  // -m + min(left, floor(i / d)).
  const int64_t n = num_dst(), d = dilation_;
  const int64_t m_lo = -std::min(right_, j / d);
  const int64_t m_hi = std::min(left_, (n - 1 - j) / d);
  const std::span<const int64_t> off = row_offsets();
  for (int64_t m = m_lo; m <= m_hi; ++m) {
    const int64_t i = j + m * d;
    f(static_cast<int32_t>(i), off[static_cast<size_t>(i)] - m + std::min(left_, i / d));
  }
}

// ---------------------------------------------------------------------------------------------
// BlockDiagonalPattern: row i in block b holds [start_b, start_b + valid_b); every row of a block
// has valid_b edges, so row_offset(i) = row_offset(start_b) + (i - start_b) * valid_b.
// ---------------------------------------------------------------------------------------------

inline int64_t BlockDiagonalPattern::num_blocks() const { return static_cast<int64_t>(valid_->size()); }

inline std::span<const int64_t> BlockDiagonalPattern::block_starts() const { return *starts_; }

inline std::span<const int64_t> BlockDiagonalPattern::valid_lengths() const { return *valid_; }

inline int64_t BlockDiagonalPattern::block_of(int64_t i) const {
  // The last block starting at or before i: empty blocks (equal starts) are stepped over.
  const auto& s = *starts_;
  return static_cast<int64_t>(std::upper_bound(s.begin(), s.end(), i) - s.begin()) - 1;
}

inline bool BlockDiagonalPattern::contains(int64_t i, int64_t j) const {
  const int64_t n = num_dst();
  if (i < 0 || i >= n || j < 0 || j >= n) return false;
  const size_t b = static_cast<size_t>(block_of(i));
  const int64_t start = (*starts_)[b];
  return j >= start && j < start + (*valid_)[b];
}

inline std::pair<int64_t, int64_t> BlockDiagonalPattern::row_range(int64_t i) const {
  const size_t b = static_cast<size_t>(block_of(i));
  const int64_t start = (*starts_)[b];
  return {start, start + (*valid_)[b]};
}

template <class F>
void BlockDiagonalPattern::for_each_in_row(int64_t i, F&& f) const {
  const size_t b = static_cast<size_t>(block_of(i));
  const int64_t start = (*starts_)[b];
  const int64_t valid = (*valid_)[b];
  const int64_t base = row_offset(i) - start;
  for (int64_t j = start; j < start + valid; ++j) f(static_cast<int32_t>(j), base + j);
}

template <class F>
void BlockDiagonalPattern::for_each_in_col(int64_t j, F&& f) const {
  const size_t b = static_cast<size_t>(block_of(j));
  const int64_t start = (*starts_)[b];
  const int64_t end = (*starts_)[b + 1];
  const int64_t valid = (*valid_)[b];
  if (j - start >= valid) return;  // a padded position: nobody attends to it
  const int64_t base = row_offset(start) + (j - start);
  for (int64_t i = start; i < end; ++i) f(static_cast<int32_t>(i), base + (i - start) * valid);
}

// ---------------------------------------------------------------------------------------------
// WindowGlobalPattern: a global row holds all n sources; a non-global row i holds the window
// [lo, hi] = [max(0, i - r), min(n - 1, i + r)] merged with the sorted global list G.
// With c(x) = |{g in G : g < x}|, the rank of j in such a row is
//   c(j) - (c(m) - c(lo)) + (m - lo),   m = clamp(j, lo, hi + 1)
// (globals below j, minus those already counted inside the window, plus window positions < j).
// ---------------------------------------------------------------------------------------------

inline std::span<const int64_t> WindowGlobalPattern::global_tokens() const { return *globals_; }

inline bool WindowGlobalPattern::is_global(int64_t i) const {
  return i >= 0 && i < num_dst() && (*is_global_)[static_cast<size_t>(i)] != 0;
}

inline bool WindowGlobalPattern::contains(int64_t i, int64_t j) const {
  const int64_t n = num_dst();
  if (i < 0 || i >= n || j < 0 || j >= n) return false;
  const auto& g = *is_global_;
  return g[static_cast<size_t>(i)] != 0 || g[static_cast<size_t>(j)] != 0 ||
         (i - j <= radius_ && j - i <= radius_);
}

inline int64_t WindowGlobalPattern::rank_in_row(int64_t i, int64_t j) const {
  const int64_t n = num_dst();
  const int64_t r = std::min(radius_, n);  // keeps i + r from overflowing
  const int64_t lo = std::max<int64_t>(0, i - r);
  const int64_t hi = std::min(n - 1, i + r);
  const int64_t m = std::clamp(j, lo, hi + 1);
  const auto& g = *globals_;
  const auto c = [&](int64_t x) {
    return static_cast<int64_t>(std::lower_bound(g.begin(), g.end(), x) - g.begin());
  };
  return c(j) - c(m) + c(lo) + (m - lo);
}

template <class F>
void WindowGlobalPattern::for_each_in_row(int64_t i, F&& f) const {
  const int64_t n = num_dst();
  int64_t e = row_offset(i);
  if ((*is_global_)[static_cast<size_t>(i)] != 0) {
    for (int64_t j = 0; j < n; ++j) f(static_cast<int32_t>(j), e + j);
    return;
  }
  const int64_t r = std::min(radius_, n);
  const int64_t lo = std::max<int64_t>(0, i - r);
  const int64_t hi = std::min(n - 1, i + r);
  const int64_t* g = globals_->data();
  const int64_t* g_end = g + globals_->size();
  const int64_t* before_end = std::lower_bound(g, g_end, lo);
  for (const int64_t* p = g; p != before_end; ++p) f(static_cast<int32_t>(*p), e++);
  for (int64_t j = lo; j <= hi; ++j) f(static_cast<int32_t>(j), e++);
  for (const int64_t* p = std::upper_bound(before_end, g_end, hi); p != g_end; ++p)
    f(static_cast<int32_t>(*p), e++);
}

template <class F>
void WindowGlobalPattern::for_each_in_col(int64_t j, F&& f) const {
  const int64_t n = num_dst();
  const std::span<const int64_t> off = row_offsets();
  const auto& is_g = *is_global_;
  if (is_g[static_cast<size_t>(j)] != 0) {
    // Every row holds a global source; a non-global row needs its rank (binary searches).
    for (int64_t i = 0; i < n; ++i) {
      const int64_t rank = is_g[static_cast<size_t>(i)] != 0 ? j : rank_in_row(i, j);
      f(static_cast<int32_t>(i), off[static_cast<size_t>(i)] + rank);
    }
    return;
  }
  // j is not global: the global rows, and the non-global rows whose window holds j.
  const int64_t r = std::min(radius_, n);
  const int64_t lo = std::max<int64_t>(0, j - r);
  const int64_t hi = std::min(n - 1, j + r);
  const int64_t* g = globals_->data();
  const int64_t* g_end = g + globals_->size();
  const int64_t* before_end = std::lower_bound(g, g_end, lo);
  for (const int64_t* p = g; p != before_end; ++p)
    f(static_cast<int32_t>(*p), off[static_cast<size_t>(*p)] + j);
  // For non-global i in [lo, hi], j lies in i's window, so its rank is c(lo_i) + (j - lo_i);
  // lo_i grows with i, so c(lo_i) is tracked by a pointer that only moves forward.
  const int64_t* c_ptr = std::lower_bound(g, g_end, std::max<int64_t>(0, lo - r));
  for (int64_t i = lo; i <= hi; ++i) {
    if (is_g[static_cast<size_t>(i)] != 0) {
      f(static_cast<int32_t>(i), off[static_cast<size_t>(i)] + j);
      continue;
    }
    const int64_t lo_i = std::max<int64_t>(0, i - r);
    while (c_ptr != g_end && *c_ptr < lo_i) ++c_ptr;
    f(static_cast<int32_t>(i), off[static_cast<size_t>(i)] + (c_ptr - g) + (j - lo_i));
  }
  for (const int64_t* p = std::upper_bound(before_end, g_end, hi); p != g_end; ++p)
    f(static_cast<int32_t>(*p), off[static_cast<size_t>(*p)] + j);
}

}  // namespace edgeattn
