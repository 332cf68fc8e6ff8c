// Dropout masks from counter-based hashes: a 16-bit draw per dense element keyed by its flat
// index, two per 32-bit hash (MurmurHash3's finaliser under a SplitMix64 key), or per sparse entry
// keyed by (row, column). The dense backward draws the same mask again instead of storing it.
#include "edgeattn/autograd/ops/dropout.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"
#include "autograd/ops/dropped_projection.hpp"
#include "autograd/ops/output_epilogue.hpp"
#include "core/prefetch.hpp"
#include "edgeattn/autograd/ops/linear.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/kernels/spmm.hpp"
#include "kernels/blas.hpp"
#include "kernels/packed_gemm.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::autograd {
namespace {

// Counter streams, so dense, sparse and attention masks under one seed are independent.
constexpr uint32_t kDenseStream = 0x64656e73u;   // "dens"
constexpr uint32_t kSparseStream = 0x73707273u;  // "sprs"

void check_p(const char* op, float p) {
  if (!(p >= 0.f && p < 1.f)) raise<InvalidArgument>(op, ": p is ", p, ", expected in [0, 1)");
}

// Feature masks are large (every element of every hidden layer, every step), so a dense mask is
// drawn with a 32-bit hash that vectorises on AVX2 (whose lanes multiply 32-bit integers in one
// instruction, 64-bit ones in three plus shifts): MurmurHash3's finaliser (fmix32, a bijection
// with full avalanche; core/rng.hpp's sparse_entry_draw_in_row, which sparse masks use) of a
// counter under the site's key. One hash gives the 16-bit draws of two consecutive elements, the
// resolution of the attention dropout's per-head draws (core/rng.hpp's dropout_keep). The key is
// a SplitMix64 mix of (seed, stream, segment), a segment being 2^32 pairs of elements, so the
// counter never wraps. The masks are 11-12% of a sampled step's samples (the first layer's input,
// 24M elements drawn in the forward and again in the backward, and the hidden layers' outputs),
// most of them on the loads of the masked rows; a SplitMix64 mix per four elements (three
// multiplies a 64-bit lane on AVX2) took 9% more of them than this hash (bench/RESULTS.md,
// forty-fourth session). Sparse entries are keyed
// by (row, column): a SplitMix64 mix per row, then the same 32-bit finaliser per entry
// (core/rng.hpp's sparse_entry_draw), which kernels/spmm.cpp's packing draws 8 lanes at a time.

inline uint64_t stream_key(uint64_t seed, uint32_t stream) { return mix64(seed ^ (uint64_t{stream} << 32)); }

// The key of pairs [2^32 s, 2^32 (s + 1)) of a site keyed `key`, and the hash of pair q within
// it: the draws of dense elements [2q, 2q + 2), element 2q + l in bits [16 l, 16 l + 16). The
// sparse masks' two steps (core/rng.hpp), the segment as the row and the pair as the column:
// sparse_row_key, and all 32 bits of sparse_entry_draw_in_row's hash (which keeps the top 16).
inline uint64_t segment_key(uint64_t key, uint64_t segment) {
  return sparse_row_key(key, static_cast<int64_t>(segment));
}
inline uint32_t pair_hash(uint64_t k, uint32_t q) {
  uint32_t h = (static_cast<uint32_t>(k) ^ q) + static_cast<uint32_t>(k >> 32);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

inline uint32_t dense_draw(uint64_t key, uint64_t position) {
  const uint64_t pair = position >> 1;
  const uint32_t h = pair_hash(segment_key(key, pair >> 32), static_cast<uint32_t>(pair));
  return (h >> (16 * (position & 1))) & 0xffffu;
}

// The dense mask of one dropout site (kept: draw >= dropout_threshold16(p), core/rng.hpp): draws
// in blocks of up to kDraws consecutive positions.
struct DenseMask {
  static constexpr int64_t kDraws = 512;
  uint64_t key;
  uint32_t threshold;
  float scale;
  uint64_t first_segment_key = segment_key(key, 0);  // every tensor's segment, short of 2^33 elements

  // draws[k] for k in [0, n), n <= kDraws: the draw of position begin + k. `buffer` holds
  // kDraws + 2 draws; the result points into it.
  const uint16_t* draw(uint64_t begin, int64_t n, uint16_t* buffer) const {
    const uint64_t q0 = begin >> 1;
    const int64_t pairs = static_cast<int64_t>(((begin + static_cast<uint64_t>(n) + 1) >> 1) - q0);
    alignas(64) uint32_t hashes[kDraws / 2 + 1];
    const uint64_t segment = q0 >> 32;
    if (segment == (q0 + static_cast<uint64_t>(pairs) - 1) >> 32) {  // one segment (all but ~never)
      const uint64_t k = segment == 0 ? first_segment_key : segment_key(key, segment);
      const auto base = static_cast<uint32_t>(q0);
#pragma omp simd
      for (int64_t g = 0; g < pairs; ++g) hashes[g] = pair_hash(k, base + static_cast<uint32_t>(g));
    } else {
      for (int64_t g = 0; g < pairs; ++g) {
        const uint64_t q = q0 + static_cast<uint64_t>(g);
        hashes[g] = pair_hash(segment_key(key, q >> 32), static_cast<uint32_t>(q));
      }
    }
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(buffer, hashes, static_cast<size_t>(pairs) * sizeof(uint32_t));
    } else {
      for (int64_t g = 0; g < pairs; ++g)
        for (int l = 0; l < 2; ++l) buffer[2 * g + l] = static_cast<uint16_t>(hashes[g] >> (16 * l));
    }
    return buffer + (begin & 1);
  }

  // f(offset, m, draws) over [begin, begin + n) in blocks: draws[k] is position begin + offset + k's.
  template <class F>
  void for_each_block(uint64_t begin, int64_t n, F&& f) const {
    alignas(64) uint16_t buffer[kDraws + 2];
    for (int64_t offset = 0; offset < n; offset += kDraws) {
      const int64_t m = std::min(kDraws, n - offset);
      f(offset, m, draw(begin + static_cast<uint64_t>(offset), m, buffer));
    }
  }
};

inline DenseMask dense_mask(uint64_t seed, float p) {
  return {stream_key(seed, kDenseStream), dropout_threshold16(p), 1.f / (1.f - p)};
}

// keep ? v : +0.f, without a branch (the decision is random, so a branch mispredicts every other
// element; it made the dense dropout ~4 ns per element). Bitwise, so a dropped inf or NaN is +0
// as before.
inline float keep_or_zero(bool keep, float v) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & (0u - static_cast<uint32_t>(keep)));
}

// Elements [begin, begin + n) of a dense dropout: y = x * scale or 0. The forward applies it to x,
// the backward to dy (dx = dy * scale or 0): the mask is a function of (key, position), so it is
// drawn again rather than stored (storing it cost a byte per element of fresh memory every step).
void dropout_span(const DenseMask& mask, int64_t begin, int64_t n, const float* __restrict x,
                  float* __restrict y) {
  mask.for_each_block(static_cast<uint64_t>(begin), n, [&](int64_t o, int64_t m, const uint16_t* draws) {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i)
      y[o + i] = keep_or_zero(draws[i] >= mask.threshold, x[o + i] * mask.scale);
  });
}

// ELU's derivative at v, from ELU's value as the elu op computes both (activation.cpp), so the
// fused elu_dropout gives the unfused pair's bits.
inline float elu_derivative(float v, float alpha) {
  return kernels::elu_grad_from_output(kernels::elu(v, alpha), alpha);
}

// Elements [begin, begin + n) of y = dropout(elu(x)).
void elu_dropout_span(const DenseMask& mask, int64_t begin, int64_t n, float alpha, const float* __restrict x,
                      float* __restrict y) {
  mask.for_each_block(static_cast<uint64_t>(begin), n, [&](int64_t o, int64_t m, const uint16_t* draws) {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i)
      y[o + i] = keep_or_zero(draws[i] >= mask.threshold, kernels::elu(x[o + i], alpha) * mask.scale);
  });
}

// g[i] = (keep ? g[i] * scale : 0) * elu'(x[i]), in place (dy becomes dx): the backward of
// elu_dropout_span, in the unfused pair's order (dropout's backward, then elu's).
void elu_dropout_backward_span(const DenseMask& mask, int64_t begin, int64_t n, float alpha,
                               const float* __restrict x, float* __restrict g) {
  mask.for_each_block(static_cast<uint64_t>(begin), n, [&](int64_t o, int64_t m, const uint16_t* draws) {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i)
      g[o + i] =
          keep_or_zero(draws[i] >= mask.threshold, g[o + i] * mask.scale) * elu_derivative(x[o + i], alpha);
  });
}

// g[i] = keep ? g[i] * scale : 0, in place: the dense dropout's backward (dy becomes dx).
void dropout_span_in_place(const DenseMask& mask, int64_t begin, int64_t n, float* __restrict g) {
  mask.for_each_block(static_cast<uint64_t>(begin), n, [&](int64_t o, int64_t m, const uint16_t* draws) {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i)
      g[o + i] = keep_or_zero(draws[i] >= mask.threshold, g[o + i] * mask.scale);
  });
}

// A dropped input's recorded mask (detail::KeepBits) in words of 32 decisions. Plain loops that
// GCC vectorises: AVX-512 intrinsics (a compare into a mask register, masked multiplies) made
// the 1M/10M step's three passes over x~ 8% of its samples instead of 4-5%.
// The word of draws[0, n), n <= 32: bit i set when element i is kept (draws[i] >= threshold).
inline uint32_t keep_word(const uint16_t* draws, int64_t n, uint32_t threshold) {
  uint32_t word = 0;
  for (int64_t i = 0; i < n; ++i) word |= static_cast<uint32_t>(draws[i] >= threshold) << i;
  return word;
}

// y[i] = x[i] * scale where bit i of `word` is set, else +0 (keep_or_zero), for i < n <= 32.
// y may be x.
inline void apply_keep_word(uint32_t word, int64_t n, float scale, const float* x, float* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = keep_or_zero(((word >> i) & 1u) != 0u, x[i] * scale);
}

// Rows [r0, r1) of x~, `in` elements each (x and y hold just those rows; y may be x): y = x * scale
// or 0, the mask drawn at the flat positions r * in + c as dropout_span draws it, and each
// decision recorded in `bits` (detail::KeepBits). The same values as dropout_span.
void dropout_rows_recording(const DenseMask& mask, int64_t r0, int64_t r1, int64_t in, const float* x,
                            float* y, detail::KeepBits& bits) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + (r - r0) * in;
    float* yr = y + (r - r0) * in;
    uint32_t* words = bits.words.data() + r * bits.words_per_row;
    mask.for_each_block(static_cast<uint64_t>(r * in), in, [&](int64_t o, int64_t m, const uint16_t* draws) {
      // o is a multiple of kDraws, so each 32 elements from it are one word (the row's last in part)
      for (int64_t c = 0; c < m; c += 32) {
        const int64_t n = std::min<int64_t>(32, m - c);
        const uint32_t word = keep_word(draws + c, n, mask.threshold);
        words[(o + c) >> 5] = word;
        apply_keep_word(word, n, mask.scale, xr + o + c, yr + o + c);
      }
    });
  }
}

// The same from recorded bits, drawing nothing: the same values.
void dropout_rows_from_bits(const detail::KeepBits& bits, float scale, int64_t r0, int64_t r1, int64_t in,
                            const float* x, float* y) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint32_t* words = bits.words.data() + r * bits.words_per_row;
    const int64_t row = (r - r0) * in;
    for (int64_t c = 0; c < in; c += 32)
      apply_keep_word(words[c >> 5], std::min<int64_t>(32, in - c), scale, x + row + c, y + row + c);
  }
}

// One row of a sparse dropout, keyed by (row, column): the mask follows the entry, not its slot.
void sparse_dropout_row(uint64_t key, int64_t row, int64_t n, uint32_t threshold, float scale,
                        const int32_t* __restrict cols, float* __restrict values) {
  const uint64_t row_key = sparse_row_key(key, row);
#pragma omp simd
  for (int64_t q = 0; q < n; ++q)
    values[q] = keep_or_zero(sparse_entry_draw_in_row(row_key, cols[q]) >= threshold, values[q] * scale);
}

}  // namespace

void detail::dense_keep_decisions(uint64_t seed, float p, int64_t begin, int64_t n, uint8_t* keep) {
  const DenseMask mask = dense_mask(seed, p);
  mask.for_each_block(static_cast<uint64_t>(begin), n, [&](int64_t o, int64_t m, const uint16_t* draws) {
    for (int64_t i = 0; i < m; ++i) keep[o + i] = static_cast<uint8_t>(draws[i] >= mask.threshold);
  });
}

bool dropout_keeps_element(uint64_t seed, int64_t index, float p) {
  return p <= 0.f ||
         dense_draw(stream_key(seed, kDenseStream), static_cast<uint64_t>(index)) >= dropout_threshold16(p);
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
  const DenseMask mask = dense_mask(seed, p);
  Tensor y = Tensor::uninitialized(xv.shape());
  const float* xd = xv.data();
  float* yd = y.data();
  detail::for_each_span(n, [&](int64_t b, int64_t e) { dropout_span(mask, b, e - b, xd + b, yd + b); });
  return tape.record("dropout", std::move(y), {x}, [x, mask](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    Tensor dx = ctx.take_grad_out();
    float* g = dx.data();
    detail::for_each_span(dx.numel(),
                          [&](int64_t b, int64_t e) { dropout_span_in_place(mask, b, e - b, g + b); });
    ctx.add_grad(x, std::move(dx));
  });
}

namespace {

// Rows per block of the fused dropout + linear: a dropped block (kBlockRows x in floats) stays in
// L2 between the mask and the product that reads it; whole microkernel strips (packed_gemm.hpp).
constexpr int64_t kBlockRows = kernels::kPackedBlockRows;
// Rows per partial weight gradient: kWeightGradRows, or fewer when x has under 8 such chunks
// (whole blocks, at least kMinWeightGradBlocks of them), so that a small graph's weight gradient
// (Cora's 2708 rows) runs on every thread instead of one. A function of the row count only, and
// the partials are summed in order, so the weight gradient is bit-identical for any thread count.
constexpr int64_t kWeightGradRows = 8192;
constexpr int64_t kWeightGradChunks = 8;
constexpr int64_t kMinWeightGradBlocks = 2;
int64_t weight_grad_rows(int64_t rows) {
  const int64_t per_chunk = (rows + kWeightGradChunks - 1) / kWeightGradChunks;
  const int64_t blocks = std::max(kMinWeightGradBlocks, (per_chunk + kBlockRows - 1) / kBlockRows);
  return std::min(kWeightGradRows, blocks * kBlockRows);
}

// Runs f(r0, r1, buffer) over blocks of kBlockRows rows of [0, rows) in parallel; `buffer` holds
// kBlockRows * buffer_cols floats, one per task.
template <class F>
void for_each_row_block_with_buffer(int64_t rows, int64_t buffer_cols, F&& f) {
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> buffer(static_cast<size_t>(kBlockRows * buffer_cols));
    for (int64_t b = b0; b < b1; ++b) f(b * kBlockRows, std::min(rows, (b + 1) * kBlockRows), buffer.data());
  });
}

}  // namespace

namespace detail {

namespace {

// Row blocks of x~ (dropped_projection.hpp's DroppedInput). With DroppedInput::keep, the first
// product records the mask and the later ones read it; a product that records calls finish()
// once every row block is done.
class DroppedRows {
 public:
  explicit DroppedRows(const DroppedInput& d)
      : d_(d), mask_(dense_mask(d.seed, d.p)), in_(d.x.dim(1)), keep_all_(d.p == 0.f) {
    // Only x's own rows are recorded: a selection's rows (a sampled batch's input nodes, ~100
    // features) are short, and there each row's words cost more than drawing the mask again
    // (measured: 1.6% of a sampled step to record, 0.8% to read, 1.6% for both draws before).
    if (keep_all_ || d.keep == nullptr || !d.rows.empty()) return;
    KeepBits& bits = *d.keep;
    const int64_t words_per_row = (in_ + 31) / 32;
    if (bits.filled) {
      if (bits.rows != d.count() || bits.words_per_row != words_per_row)
        raise<InvalidArgument>("dropped input: the recorded mask has ", bits.rows, " rows of ",
                               bits.words_per_row, " words, expected ", d.count(), " rows of ", words_per_row,
                               " (", in_, " elements); it was recorded for another input");
      read_ = &bits;
      return;
    }
    bits.rows = d.count();
    bits.words_per_row = words_per_row;
    bits.words.resize(static_cast<size_t>(bits.rows * words_per_row));  // every word is written
    record_ = &bits;
  }
  /// Whether x~'s rows are x's own, read in place (p = 0, no selection).
  bool in_place() const { return keep_all_ && d_.rows.empty(); }
  /// Rows [r0, r1) of x~: in place, or written to dst ((r1 - r0) * in floats).
  const float* rows(int64_t r0, int64_t r1, float* dst) const {
    const float* xd = d_.x.data();
    if (d_.rows.empty()) {
      if (keep_all_) return xd + r0 * in_;
      mask(xd + r0 * in_, r0, r1, dst);
      return dst;
    }
    // The rows are met at random (a sampled batch's input nodes): prefetch each one kRowsAhead
    // rows before it is read, as gather_rows does, past the block's end too (the next block's).
    constexpr int64_t kRowsAhead = 8, kMaxLines = 16;
    const int64_t lines = std::min<int64_t>(kMaxLines, (in_ * static_cast<int64_t>(sizeof(float)) + 63) / 64);
    const auto count = static_cast<int64_t>(d_.rows.size());
    for (int64_t r = r0; r < r1; ++r) {  // the selection's row r, x's row rows[r]
      if (r + kRowsAhead < count) {
        const auto* ahead =
            reinterpret_cast<const char*>(xd + d_.rows[static_cast<size_t>(r + kRowsAhead)] * in_);
        for (int64_t l = 0; l < lines; ++l) edgeattn::detail::prefetch_read<3>(ahead + 64 * l);
      }
      const float* src = xd + d_.rows[static_cast<size_t>(r)] * in_;
      // Masked as it is copied (the selection's position r * in_ onwards: the draws of a mask
      // over the whole block, the same values), rather than copied and then masked in place: one
      // pass over the block instead of two.
      if (keep_all_)
        std::copy_n(src, in_, dst + (r - r0) * in_);
      else
        dropout_span(mask_, r * in_, in_, src, dst + (r - r0) * in_);
    }
    return dst;
  }
  /// dst = the mask (times scale) of rows [r0, r1) applied to src, both holding just those rows
  /// (dst does not overlap src).
  void mask(const float* src, int64_t r0, int64_t r1, float* dst) const {
    if (read_)
      dropout_rows_from_bits(*read_, mask_.scale, r0, r1, in_, src, dst);
    else if (record_)
      dropout_rows_recording(mask_, r0, r1, in_, src, dst, *record_);
    else
      dropout_span(mask_, r0 * in_, (r1 - r0) * in_, src, dst);
  }
  /// After a product over every row: a recorded mask is complete.
  void finish() const {
    if (record_) record_->filled = true;
  }

 private:
  const DroppedInput& d_;
  DenseMask mask_;
  int64_t in_;
  bool keep_all_;
  KeepBits* record_ = nullptr;      // drawn and recorded by this product
  const KeepBits* read_ = nullptr;  // read by this product
};

}  // namespace

namespace {

// Row blocks of a [rows, k] operand times op(w), [k, n]: the packed microkernel for a layer-sized
// w (as kernels::matmul, so that p = 0 gives linear's bits), BLAS otherwise.
class RightOperand {
 public:
  RightOperand(const float* w, int64_t ldw, bool trans_w, int64_t k, int64_t n)
      : w_(w), ldw_(ldw), trans_w_(trans_w), k_(k), n_(n) {
    if (kernels::PackedRight::suits(k, n)) packed_.emplace(w, ldw, trans_w, k, n);
  }
  /// Scratch floats per row that multiply needs.
  int64_t scratch_cols() const { return packed_ ? packed_->scratch_floats(1) : 0; }
  /// c [rows, n] (row stride n) = a [rows, k] (row stride k) op(w).
  void multiply(int64_t rows, const float* a, float* c, float* scratch) const {
    if (packed_)
      packed_->multiply(rows, a, k_, c, n_, false, scratch);
    else
      kernels::gemm(false, trans_w_, rows, n_, k_, 1.f, a, k_, w_, ldw_, 0.f, c, n_);
  }

 private:
  const float* w_;
  int64_t ldw_;
  bool trans_w_;
  int64_t k_, n_;
  std::optional<kernels::PackedRight> packed_;
};

}  // namespace

void dropped_project(const DroppedInput& d, const Tensor& w, Tensor& y) { dropped_project(d, w, y.data()); }

void dropped_project(const DroppedInput& d, const Tensor& w, float* yd) {
  const DroppedRows dropped(d);
  const int64_t in = d.x.dim(1), out = w.dim(0);
  const RightOperand right(w.data(), in, /*trans_w=*/true, in, out);
  const int64_t masked = dropped.in_place() ? 0 : in;  // per row of the buffer, then the product's scratch
  for_each_row_block_with_buffer(d.count(), masked + right.scratch_cols(),
                                 [&](int64_t r0, int64_t r1, float* buffer) {
                                   const float* rows = dropped.rows(r0, r1, buffer);
                                   right.multiply(r1 - r0, rows, yd + r0 * out, buffer + masked * kBlockRows);
                                 });
  dropped.finish();
}

void dropped_transpose_products(const DroppedInput& d, std::span<const TransposeProduct> products) {
  const DroppedRows dropped(d);
  const int64_t rows = d.count(), in = d.x.dim(1);
  const int64_t chunk_rows = weight_grad_rows(rows);
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  int64_t size = 0;  // floats of one chunk's partials, all products together
  for (const TransposeProduct& t : products) size += t.cols * in;
  std::vector<float> partial(static_cast<size_t>(chunks * size), 0.f);
  // Weight-sized sums (every layer's): the packed microkernel, summing in L2 across the chunk's
  // blocks; BLAS (repacking both operands every block) for wider ones.
  bool packed = true;
  for (const TransposeProduct& t : products)
    packed = packed && kernels::TransposeAccumulator::suits(t.cols, in);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> buffer(static_cast<size_t>(dropped.in_place() ? 0 : kBlockRows * in));
    std::vector<kernels::TransposeAccumulator> sums;
    if (packed)
      for (const TransposeProduct& t : products) sums.emplace_back(t.cols, in);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t end = std::min(rows, (c + 1) * chunk_rows);
      for (kernels::TransposeAccumulator& s : sums) s.reset();
      for (int64_t r0 = c * chunk_rows; r0 < end; r0 += kBlockRows) {
        const int64_t r1 = std::min(end, r0 + kBlockRows);
        const float* block = dropped.rows(r0, r1, buffer.data());  // once for every product
        float* part = partial.data() + c * size;
        for (size_t i = 0; i < products.size(); ++i) {
          const TransposeProduct& t = products[i];
          if (packed)
            sums[i].add(r1 - r0, t.g + r0 * t.cols, t.cols, block, in);
          else
            kernels::gemm(true, false, t.cols, in, r1 - r0, 1.f, t.g + r0 * t.cols, t.cols, block, in, 1.f,
                          part, in);
          part += t.cols * in;
        }
      }
      float* part = partial.data() + c * size;
      for (size_t i = 0; i < sums.size(); ++i) {
        sums[i].write(part, in, false);
        part += products[i].cols * in;
      }
    }
  });
  dropped.finish();
  int64_t offset = 0;
  for (const TransposeProduct& t : products) {
    const int64_t n = t.cols * in;
    for_each_span(n, [&](int64_t b, int64_t e) {
      for (int64_t c = 0; c < chunks; ++c) add_span(t.out + b, partial.data() + c * size + offset + b, e - b);
    });
    offset += n;
  }
}

void dropped_input_grad(const DroppedInput& d, const float* dy, const Tensor& w, Tensor& dx) {
  if (!d.rows.empty())
    raise<InvalidArgument>("dropped_input_grad: x with a row selection is a constant, it has no gradient");
  const DroppedRows dropped(d);
  const int64_t in = d.x.dim(1), out = w.dim(0);
  float* dxd = dx.data();
  const bool keep_all = d.p == 0.f;                                    // dx = dy w, straight into dx
  const RightOperand right(w.data(), in, /*trans_w=*/false, out, in);  // w [out, in]: k = out, n = in
  const int64_t product = keep_all ? 0 : in;  // per row of the buffer, then the product's scratch
  for_each_row_block_with_buffer(
      d.x.dim(0), product + right.scratch_cols(), [&](int64_t r0, int64_t r1, float* buffer) {
        float* target = keep_all ? dxd + r0 * in : buffer;
        right.multiply(r1 - r0, dy + r0 * out, target, buffer + product * kBlockRows);
        if (!keep_all) dropped.mask(buffer, r0, r1, dxd + r0 * in);
      });
  dropped.finish();
}

}  // namespace detail

Var dropout_linear(Tape& tape, Var x, float p, uint64_t seed, Var weight, Var bias) {
  check_p("dropout_linear", p);
  if (!tape.training || p == 0.f) return linear(tape, x, weight, bias);
  const Tensor& xv = tape.value(x);
  const Tensor& wv = tape.value(weight);
  detail::expect_rank("dropout_linear", "x", xv, 2, "[N, in]");
  detail::expect_shape("dropout_linear", "weight", wv, {kAny, xv.dim(1)});
  if (bias) detail::expect_shape("dropout_linear", "bias", tape.value(bias), {wv.dim(0)});
  Tensor y = Tensor::uninitialized({xv.dim(0), wv.dim(0)});  // every row block is written
  // The forward records the mask (a bit an element) for the backward's two products to read.
  auto keep = std::make_shared<detail::KeepBits>();
  detail::dropped_project({xv, p, seed, {}, keep.get()}, wv, y);
  if (bias) detail::add_bias_rows(y, tape.value(bias));
  return tape.record(
      "dropout_linear", std::move(y), {x, weight, bias},
      [x, weight, bias, p, seed, keep](BackwardContext& ctx) {
        const Tensor& xv = ctx.value(x);
        const detail::DroppedInput dropped{xv, p, seed, {}, keep.get()};
        const float* g = ctx.grad_out().data();
        if (ctx.needs_grad(x)) {                          // dx = mask * scale * (dy w)
          Tensor dx = Tensor::uninitialized(xv.shape());  // every row block is written
          detail::dropped_input_grad(dropped, g, ctx.value(weight), dx);
          ctx.add_grad(x, std::move(dx));
        }
        if (ctx.needs_grad(weight)) {  // dw [out, in] += dy^T dropout(x), from fixed partials
          const detail::TransposeProduct dw{g, ctx.value(weight).dim(0), ctx.grad(weight).data()};
          detail::dropped_transpose_products(dropped, {&dw, 1});
        }
        detail::bias_backward(ctx, bias);
      });
}

Var dropout_linear(Tape& tape, Var x, std::shared_ptr<const std::vector<int64_t>> rows, float p,
                   uint64_t seed, Var weight, Var bias) {
  static const char* const kOp = "dropout_linear (row selection)";
  check_p(kOp, p);
  if (!rows) raise<InvalidArgument>(kOp, ": rows is null, expected the selected rows' indices");
  const Tensor& xv = tape.value(x);
  const Tensor& wv = tape.value(weight);
  detail::expect_rank(kOp, "x", xv, 2, "[M, in]");
  detail::expect_shape(kOp, "weight", wv, {kAny, xv.dim(1)});
  if (bias) detail::expect_shape(kOp, "bias", tape.value(bias), {wv.dim(0)});
  if (tape.requires_grad(x))
    raise<InvalidArgument>(kOp,
                           ": x requires a gradient, expected a constant (the rows are read in place and "
                           "no gradient is scattered back to them)");
  const int64_t table_rows = xv.dim(0);
  for (size_t i = 0; i < rows->size(); ++i)
    if (const int64_t r = (*rows)[i]; r < 0 || r >= table_rows)
      raise<InvalidArgument>(kOp, ": rows[", i, "] is ", r, ", expected a row of x in [0, ", table_rows, ")");
  const float q = tape.training ? p : 0.f;  // not training: the plain map of the selected rows
  Tensor y =
      Tensor::uninitialized({static_cast<int64_t>(rows->size()), wv.dim(0)});  // every row block is written
  detail::dropped_project({xv, q, seed, *rows}, wv, y);
  if (bias) detail::add_bias_rows(y, tape.value(bias));
  return tape.record("dropout_linear", std::move(y), {x, weight, bias},
                     [x, rows = std::move(rows), weight, bias, q, seed](BackwardContext& ctx) {
                       if (ctx.needs_grad(weight)) {  // dw [out, in] += dy^T dropout(x[rows])
                         const detail::TransposeProduct dw{ctx.grad_out().data(), ctx.value(weight).dim(0),
                                                           ctx.grad(weight).data()};
                         detail::dropped_transpose_products({ctx.value(x), q, seed, *rows}, {&dw, 1});
                       }
                       detail::bias_backward(ctx, bias);
                     });
}

Var elu_dropout(Tape& tape, Var x, float alpha, float p, uint64_t seed) {
  if (!(alpha > 0.f)) raise<InvalidArgument>("elu_dropout: alpha is ", alpha, ", expected > 0");
  check_p("elu_dropout", p);
  const Tensor& xv = tape.value(x);
  // Not training, or p == 0: nothing is dropped (threshold 0 keeps every element, scale 1).
  const bool active = tape.training && p > 0.f;
  const DenseMask mask = active ? dense_mask(seed, p) : DenseMask{0, 0, 1.f};
  Tensor y = Tensor::uninitialized(xv.shape());
  const float* xd = xv.data();
  float* yd = y.data();
  detail::for_each_span(xv.numel(), [&](int64_t b, int64_t e) {
    if (active)
      elu_dropout_span(mask, b, e - b, alpha, xd + b, yd + b);
    else
      detail::map_span(xd + b, yd + b, e - b, [alpha](float v) { return kernels::elu(v, alpha); });
  });
  return tape.record("elu_dropout", std::move(y), {x}, [x, mask, alpha](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const float* xd = ctx.value(x).data();
    Tensor dx = ctx.take_grad_out();
    float* g = dx.data();
    detail::for_each_span(dx.numel(), [&](int64_t b, int64_t e) {
      elu_dropout_backward_span(mask, b, e - b, alpha, xd + b, g + b);
    });
    ctx.add_grad(x, std::move(dx));
  });
}

namespace detail {

namespace {

// f.template operator()<b0, b1, ...>() for the runtime flags: a loop body per combination, so
// that no flag is tested inside a vectorised loop (with the tests inside, GCC left the
// epilogue's loops scalar: 8x the unfused element-wise ops).
template <bool... kFlags, class F>
void with_flags(F&& f) {
  f.template operator()<kFlags...>();
}
template <bool... kFlags, class F, class... Rest>
void with_flags(F&& f, bool first, Rest... rest) {
  if (first)
    with_flags<kFlags..., true>(std::forward<F>(f), rest...);
  else
    with_flags<kFlags..., false>(std::forward<F>(f), rest...);
}

}  // namespace

void apply_output_epilogue(Tensor& y, const float* bias, int64_t width, const OutputEpilogue& e) {
  const int64_t n = y.numel(), rows = width > 0 ? n / width : 0;
  const bool active = e.dropout > 0.f;
  const DenseMask mask = active ? dense_mask(e.seed, e.dropout) : DenseMask{0, 0, 1.f};
  const float alpha = e.elu_alpha;
  float* yd = y.data();
  // Rows narrower than a vector without dropout (GAT's output layer: 7 classes, bias only) go
  // kNarrowRows rows at a time as one flat span, the bias tiled to the span's length: a loop per
  // row of 7 elements ran masked and scalar. Every element's operations are the row loop's.
  constexpr int64_t kNarrowRows = 16;
  const bool narrow = width < 16 && !active;
  std::vector<float> tiled(narrow && bias ? static_cast<size_t>(kNarrowRows * width) : 0);
  for (size_t k = 0; k < tiled.size(); ++k) tiled[k] = bias[k % static_cast<size_t>(width)];
  with_flags(
      [&]<bool kBias, bool kElu, bool kDrop>() {
        for_each_row_block(rows, width, [&](int64_t r0, int64_t r1) {
          if constexpr (!kDrop) {
            if (narrow) {
              const int64_t span = kNarrowRows * width;
              for (; r0 + kNarrowRows <= r1; r0 += kNarrowRows) {
                float* __restrict out = yd + r0 * width;
                const float* __restrict b = tiled.data();
#pragma omp simd
                for (int64_t i = 0; i < span; ++i) {
                  float v = out[i];
                  if constexpr (kBias) v = v + b[i];
                  if constexpr (kElu) v = kernels::elu(v, alpha);
                  out[i] = v;
                }
              }
            }
          }
          for (int64_t r = r0; r < r1; ++r) {
            float* row = yd + r * width;
            // Columns [c0, c0 + m) of the row; draws: theirs (kDrop).
            auto columns = [&](int64_t c0, int64_t m, const uint16_t* draws) {
              float* __restrict out = row + c0;
              const float* __restrict b = kBias ? bias + c0 : nullptr;
#pragma omp simd
              for (int64_t i = 0; i < m; ++i) {
                float v = out[i];
                if constexpr (kBias) v = v + b[i];
                if constexpr (kElu) v = kernels::elu(v, alpha);
                if constexpr (kDrop) v = keep_or_zero(draws[i] >= mask.threshold, v * mask.scale);
                out[i] = v;
              }
            };
            if constexpr (kDrop)
              mask.for_each_block(static_cast<uint64_t>(r * width), width, columns);
            else
              columns(0, width, nullptr);
          }
        });
      },
      bias != nullptr, e.elu, active);
}

void output_epilogue_backward(Tensor& g, const Tensor& y, int64_t width, const OutputEpilogue& e,
                              float* dbias) {
  const int64_t n = g.numel(), rows = width > 0 ? n / width : 0;
  const bool active = e.dropout > 0.f;
  const DenseMask mask = active ? dense_mask(e.seed, e.dropout) : DenseMask{0, 0, 1.f};
  const float scale = mask.scale, alpha_scale = e.elu_alpha * scale;
  float* gd = g.data();
  const float* yd = y.data();
  // Without ELU and dropout the element-wise factor is 1 (g * 1 is g): only the bias sums remain.
  if (e.elu || active)
    with_flags(
        [&]<bool kElu, bool kDrop>() {
          for_each_row_block(rows, width, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
              // Columns [c0, c0 + m) of the row; draws: theirs (kDrop).
              auto columns = [&](int64_t c0, int64_t m, const uint16_t* draws) {
                float* __restrict grow = gd + r * width + c0;
                const float* __restrict yrow = yd + r * width + c0;
                // Local copies: a select between two variables captured by reference was compiled
                // (GCC 12, AVX-512) into masked gathers from their addresses, four per 16 elements,
                // which made this loop ~10x slower than its loads and stores.
                const float s = scale, as = alpha_scale;
                const uint32_t threshold = mask.threshold;
#pragma omp simd
                for (int64_t i = 0; i < m; ++i) {
                  const float slope = kElu ? (yrow[i] > 0.f ? s : yrow[i] + as) : s;
                  float v = grow[i] * slope;
                  if constexpr (kDrop) v = keep_or_zero(draws[i] >= threshold, v);
                  grow[i] = v;
                }
              };
              if constexpr (kDrop)
                mask.for_each_block(static_cast<uint64_t>(r * width), width, columns);
              else
                columns(0, width, nullptr);
            }
          });
        },
        e.elu, active);
  if (!dbias) return;
  column_sums(
      rows, width,
      [&](int64_t r, float* acc) {
        for (int64_t c = 0; c < width; ++c) acc[c] += gd[r * width + c];
      },
      dbias, /*accumulate=*/true);
}

}  // namespace detail

CsrMatrix dropout(const Tape& tape, const CsrMatrix& x, float p, uint64_t seed) {
  check_p("dropout (sparse x)", p);
  CsrMatrix y = x;
  if (!tape.training || p == 0.f) return y;
  const float scale = 1.f / (1.f - p);
  const uint32_t threshold = dropout_threshold16(p);
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

Var dropout_linear(Tape& tape, CsrMatrix x, float p, uint64_t seed, Var weight, Var bias) {
  check_p("dropout_linear (sparse x)", p);
  if (!tape.training || p == 0.f) return linear(tape, std::move(x), weight, bias);
  const Tensor& wv = tape.value(weight);
  if (wv.rank() != 2 || wv.dim(1) != x.cols())
    raise<ShapeError>("dropout_linear (sparse x): weight has shape ", wv.shape().str(),
                      ", expected [out, in=", x.cols(), "] for x of shape [", x.rows(), ", ", x.cols(), "]");
  const int64_t out = wv.dim(0), in = wv.dim(1);
  if (bias) detail::expect_shape("dropout_linear (sparse x)", "bias", tape.value(bias), {out});
  // sparse_dropout_row's decisions and scaled values, drawn by the SpMM kernels as they go.
  const kernels::EntryDropout drop{
      .key = stream_key(seed, kSparseStream), .threshold = dropout_threshold16(p), .scale = 1.f / (1.f - p)};
  Tensor wt = Tensor::uninitialized({in, out});  // transpose_into and spmm overwrite their outputs
  detail::transpose_into(wv.data(), out, in, wt.data(), false);
  Tensor y = Tensor::uninitialized({x.rows(), out});
  // The forward records its decisions, a byte per entry (a quarter of a dropped copy's values),
  // so that the weight gradient reads them instead of drawing each entry's hash again.
  auto keep = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(x.nnz()));
  kernels::spmm_dropped(x, drop, wt, y, /*accumulate=*/false, *keep);
  if (bias) detail::add_bias_rows(y, tape.value(bias));
  auto xs = std::make_shared<const CsrMatrix>(std::move(x));
  return tape.record("dropout_linear_sparse", std::move(y), {weight, bias},
                     [xs, keep, drop, weight, bias, in, out](BackwardContext& ctx) {
                       if (ctx.needs_grad(weight)) {  // dw = (dropout(x)^T dy)^T
                         Tensor dwt = Tensor::uninitialized({in, out});
                         kernels::spmm_transposed_dropped(*xs, drop, ctx.grad_out(), dwt, false, *keep);
                         detail::transpose_into(dwt.data(), in, out, ctx.grad(weight).data(), true);
                       }
                       detail::bias_backward(ctx, bias);
                     });
}

}  // namespace edgeattn::autograd
