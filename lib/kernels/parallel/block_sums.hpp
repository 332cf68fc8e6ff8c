// Long sums of float terms with the error of a short one: the terms go into a float accumulator,
// as in any kernel loop, and every kSumBlock terms the accumulator is added into a double and
// cleared, so each float sum holds at most kSumBlock terms and the total is rounded to float once.
//
// Why: summed term by term into one float, a hub's million terms each round into an ever larger
// sum; the backward's sums over a 1M-edge row or column (D_i, d score_dst, dv_j, d score_src)
// were off by 1e-5 to 1e-4 of their scale, as the forward's row sums had been before its own
// blocks (parallel_forward_impl.hpp: spill_sums, which also rescales the spilled sums with the
// softmax shift and so keeps its own).
//
// Bits: a sum of at most kSumBlock terms is the plain float sum; one of up to 2 kSumBlock terms is
// the float sum of its two block sums, rounded once (two floats add exactly in double). Callers
// that must agree bit for bit (the backward's source pass from edge records and recomputing) cut
// their terms into the same blocks: per term with count(), or per block with spill() between
// blocks; both give the same sums.
//
//   BlockSums sums(width);
//   sums.start(acc);                       // acc [width] = 0
//   for (...) { acc[...] += term; sums.count(); }
//   sums.finish();                         // acc [width] = the totals, each rounded once
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace edgeattn::kernels {

/// Terms per float sum before it is added into the double total.
inline constexpr int64_t kSumBlock = 32;

class BlockSums {
 public:
  /// Sums of `size` accumulators.
  explicit BlockSums(int64_t size) : total_(static_cast<size_t>(size)) {}

  /// Starts new sums in acc [size], which it zeroes.
  void start(float* acc) {
    acc_ = acc;
    terms_ = 0;
    spilled_ = false;
    std::fill_n(acc_, total_.size(), 0.f);
  }
  /// One more term has been added to each accumulator (or to those it touches).
  void count() {
    if (++terms_ == kSumBlock) [[unlikely]]
      spill();
  }
  /// Runs body(begin, end) over the blocks of [0, n), kSumBlock terms each, and spills after each
  /// but the last: the sums that a count() per term gives, from loops that keep a block's sum in
  /// a register (a count() per term makes each term's sum go through memory).
  template <class Body>
  void blocks(int64_t n, Body&& body) {
    for (int64_t begin = 0; begin < n; begin += kSumBlock) {
      const int64_t end = std::min(n, begin + kSumBlock);
      body(begin, end);
      if (end < n) spill();
    }
  }
  /// Adds the accumulators into the totals and zeroes them (a block of terms is complete).
  [[gnu::noinline]] void spill() {
    const size_t n = total_.size();
    if (!spilled_) {
      for (size_t k = 0; k < n; ++k) total_[k] = acc_[k];
      spilled_ = true;
    } else {
      for (size_t k = 0; k < n; ++k) total_[k] += acc_[k];
    }
    std::fill_n(acc_, n, 0.f);
    terms_ = 0;
  }
  /// Leaves each total in its accumulator, rounded to float once.
  void finish() {
    if (!spilled_) return;
    for (size_t k = 0; k < total_.size(); ++k) acc_[k] = static_cast<float>(total_[k] + acc_[k]);
    spilled_ = false;  // acc holds the totals now: finishing again leaves them
  }
  /// Writes the totals unrounded to out [size] (partial sums that are summed further in double).
  void finish(double* out) const {
    for (size_t k = 0; k < total_.size(); ++k) out[k] = spilled_ ? total_[k] + acc_[k] : double{acc_[k]};
  }

 private:
  std::vector<double> total_;
  float* acc_ = nullptr;
  int64_t terms_ = 0;
  bool spilled_ = false;
};

}  // namespace edgeattn::kernels
