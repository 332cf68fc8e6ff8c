// Dropout masks from a counter-based hash (the SplitMix64 finaliser, core/rng.hpp's mix64): 24
// bits per dense element keyed by its flat index, or per sparse entry keyed by (row, column). The
// dense backward draws the same mask again instead of storing it.
#include "edgeattn/autograd/ops/dropout.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#include "autograd/elementwise.hpp"
#include "edgeattn/core/rng.hpp"

namespace edgeattn::autograd {
namespace {

// Counter streams, so dense, sparse and attention masks under one seed are independent.
constexpr uint32_t kDenseStream = 0x64656e73u;   // "dens"
constexpr uint32_t kSparseStream = 0x73707273u;  // "sprs"

void check_p(const char* op, float p) {
  if (!(p >= 0.f && p < 1.f)) raise<InvalidArgument>(op, ": p is ", p, ", expected in [0, 1)");
}

// Feature masks are large (every element of every hidden layer, every step), so they use the
// SplitMix64 finaliser on a (seed, stream, position) counter: a few multiply-xorshifts per
// element, vectorisable, and as counter-based as Philox (pure function of its inputs; the
// generator Java's SplittableRandom and xoshiro's seeding use; core/rng.hpp's mix64).

inline uint64_t stream_key(uint64_t seed, uint32_t stream) { return mix64(seed ^ (uint64_t{stream} << 32)); }

inline uint32_t element_bits(uint64_t key, uint64_t position) {
  return static_cast<uint32_t>(mix64(key + position * 0x9e3779b97f4a7c15ULL) >> 40);
}

inline uint32_t element_bits(uint64_t seed, uint32_t stream, uint64_t position) {
  return element_bits(stream_key(seed, stream), position);
}

// 24 random bits against p: kept when bits24 * 2^-24 >= p, i.e. bits24 >= ceil(p * 2^24) (both
// sides exact: bits24 < 2^24, and p * 2^24 is p with another exponent).
inline uint32_t keep_threshold(float p) {
  return static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 16777216.0));
}
inline bool keep_from_bits(uint32_t bits24, uint32_t threshold) { return bits24 >= threshold; }

// keep ? v : +0.f, without a branch (the decision is random, so a branch mispredicts every other
// element; it made the dense dropout ~4 ns per element). Bitwise, so a dropped inf or NaN is +0
// as before.
inline float keep_or_zero(bool keep, float v) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & (0u - static_cast<uint32_t>(keep)));
}

// Elements [begin, begin + n) of a dense dropout: y = x * scale or 0. The forward applies it to x,
// the backward to dy (dx = dy * scale or 0): the mask is a function of (key, position), so it is
// drawn again rather than stored (storing it cost a byte per element of fresh memory every step).
// Plain loop over restrict pointers, so the 64-bit hashing vectorises.
void dropout_span(uint64_t key, int64_t begin, int64_t n, uint32_t threshold, float scale,
                  const float* __restrict x, float* __restrict y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = keep_from_bits(element_bits(key, static_cast<uint64_t>(begin + i)), threshold);
    y[i] = keep_or_zero(keep, x[i] * scale);
  }
}

// One row of a sparse dropout, keyed by (row, column): the mask follows the entry, not its slot.
void sparse_dropout_row(uint64_t key, int64_t row, int64_t n, uint32_t threshold, float scale,
                        const int32_t* __restrict cols, float* __restrict values) {
  const uint64_t row_bits = static_cast<uint64_t>(row) << 32;
#pragma omp simd
  for (int64_t q = 0; q < n; ++q) {
    const uint64_t position = row_bits | static_cast<uint32_t>(cols[q]);
    values[q] = keep_or_zero(keep_from_bits(element_bits(key, position), threshold), values[q] * scale);
  }
}

}  // namespace

bool dropout_keeps_element(uint64_t seed, int64_t index, float p) {
  return p <= 0.f ||
         keep_from_bits(element_bits(seed, kDenseStream, static_cast<uint64_t>(index)), keep_threshold(p));
}

Var dropout(Tape& tape, Var x, float p, uint64_t seed) {
  check_p("dropout", p);
  const Tensor& xv = tape.value(x);
  if (!tape.training || p == 0.f) {
    // The identity; recorded as its own node so the caller's graph has the same shape in both modes.
    // The output shares x's storage: recorded values are never written again.
    return tape.record("dropout", xv.share_reshaped(xv.shape()), {x}, [x](BackwardContext& ctx) {
      if (!ctx.needs_grad(x)) return;
      detail::add_into(ctx.grad(x).data(), ctx.grad_out().data(), ctx.grad_out().numel());
    });
  }
  const int64_t n = xv.numel();
  const float scale = 1.f / (1.f - p);
  const uint32_t threshold = keep_threshold(p);
  Tensor y = Tensor::uninitialized(xv.shape());
  const float* xd = xv.data();
  float* yd = y.data();
  const uint64_t key = stream_key(seed, kDenseStream);
  detail::for_each_span(
      n, [&](int64_t b, int64_t e) { dropout_span(key, b, e - b, threshold, scale, xd + b, yd + b); });
  return tape.record("dropout", std::move(y), {x}, [x, key, threshold, scale](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const float* g = ctx.grad_out().data();
    Tensor dx = Tensor::uninitialized(ctx.grad_out().shape());
    float* dxd = dx.data();
    detail::for_each_span(ctx.grad_out().numel(), [&](int64_t b, int64_t e) {
      dropout_span(key, b, e - b, threshold, scale, g + b, dxd + b);
    });
    ctx.add_grad(x, std::move(dx));
  });
}

CsrMatrix dropout(const Tape& tape, const CsrMatrix& x, float p, uint64_t seed) {
  check_p("dropout (sparse x)", p);
  CsrMatrix y = x;
  if (!tape.training || p == 0.f) return y;
  const float scale = 1.f / (1.f - p);
  const uint32_t threshold = keep_threshold(p);
  const auto indptr = x.indptr();
  const auto indices = x.indices();
  auto values = y.values();
  const uint64_t key = stream_key(seed, kSparseStream);
  detail::for_each_row_block(
      x.rows(), std::max<int64_t>(1, x.nnz() / std::max<int64_t>(x.rows(), 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t begin = indptr[static_cast<size_t>(r)], end = indptr[static_cast<size_t>(r) + 1];
          sparse_dropout_row(key, r, end - begin, threshold, scale, indices.data() + begin,
                             values.data() + begin);
        }
      });
  return y;
}

}  // namespace edgeattn::autograd
