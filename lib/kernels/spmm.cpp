// SpMM: row-parallel CSR x dense products (see include/edgeattn/kernels/spmm.hpp).
//
// Pull style, as in GAP's kernels: each task owns a block of output rows and reads the sparse
// row's nonzeros in order, so there are no atomics and every row is summed in a fixed order.
// Blocks hold about the same number of nonzeros (graph/graph.hpp balanced_row_chunks).
#include "edgeattn/kernels/spmm.hpp"

#include <algorithm>
#include <bit>
#include <span>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/graph/graph.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {
namespace {

// y_row[j0 .. j0+8V) (+)= sum_p values[p] * b[indices[p], j0 .. j0+8V): one column tile of one
// output row, accumulated in V vector registers across the row's nonzeros (vector_math.hpp's
// Lanes8, written out so that GCC keeps the tile in registers instead of vectorising across
// nonzeros with gathers).
template <int V>
inline void spmm_tile(const int32_t* __restrict indices, const float* __restrict values, int64_t begin,
                      int64_t end, const float* __restrict b, int64_t m, int64_t j0, float* __restrict y_row,
                      bool accumulate) {
  Lanes8 acc[V];
  for (int t = 0; t < V; ++t) acc[t] = accumulate ? load_lanes8(y_row + j0 + 8 * t) : Lanes8{};
  for (int64_t p = begin; p < end; ++p) {
    const float v = values[p];
    const float* __restrict b_row = b + static_cast<int64_t>(indices[p]) * m + j0;
    for (int t = 0; t < V; ++t) acc[t] += v * load_lanes8(b_row + 8 * t);
  }
  for (int t = 0; t < V; ++t) store_lanes8(y_row + j0 + 8 * t, acc[t]);
}

// y_row (+)= sum_p values[p] * b[indices[p], :], for one row: tiles of 64 and 8 columns, then the
// remaining columns one at a time.
inline void spmm_row(const int32_t* __restrict indices, const float* __restrict values, int64_t begin,
                     int64_t end, const float* __restrict b, int64_t m, float* __restrict y_row,
                     bool accumulate) {
  int64_t j0 = 0;
  for (; j0 + 64 <= m; j0 += 64) spmm_tile<8>(indices, values, begin, end, b, m, j0, y_row, accumulate);
  for (; j0 + 8 <= m; j0 += 8) spmm_tile<1>(indices, values, begin, end, b, m, j0, y_row, accumulate);
  if (j0 == m) return;
  if (!accumulate) std::fill(y_row + j0, y_row + m, 0.f);
  for (int64_t p = begin; p < end; ++p) {
    const float v = values[p];
    const float* __restrict b_row = b + static_cast<int64_t>(indices[p]) * m;
    for (int64_t j = j0; j < m; ++j) y_row[j] += v * b_row[j];
  }
}

// One output row of a product with dropped entries, in chunks of up to kKeptChunk entries:
// pack(k0, k1, kept_index, kept_value) packs the kept entries of [k0, k1) in order (their rows of
// b, their values scaled) and returns how many; each chunk is summed into y_row by spmm_row, which
// continues a row across calls with `accumulate` exactly as one call would sum it. The buffers
// have 8 slots of slack for the vector packing's whole-vector stores.
constexpr int64_t kKeptChunk = 256;

template <class Pack>
inline void dropped_row(int64_t n, Pack&& pack, const float* __restrict b, int64_t m, float* __restrict y_row,
                        bool accumulate) {
  alignas(64) int32_t kept_index[kKeptChunk + 8];
  alignas(64) float kept_value[kKeptChunk + 8];
  for (int64_t k0 = 0; k0 < n; k0 += kKeptChunk) {
    const int64_t kept = pack(k0, std::min(n, k0 + kKeptChunk), kept_index, kept_value);
    if (kept == 0) continue;
    spmm_row(kept_index, kept_value, 0, kept, b, m, y_row, accumulate);
    accumulate = true;
  }
  if (!accumulate) std::fill(y_row, y_row + m, 0.f);  // nothing kept
}

#if defined(__AVX2__)
// For each 8-bit mask, the positions of its set bits in ascending order (then padding): the
// permutation that moves a vector's kept lanes to its front.
struct PackTable {
  alignas(64) uint8_t lanes[256][8];
  constexpr PackTable() : lanes{} {
    for (int mask = 0; mask < 256; ++mask) {
      int n = 0;
      for (int j = 0; j < 8; ++j)
        if (mask & (1 << j)) lanes[mask][n++] = static_cast<uint8_t>(j);
      for (; n < 8; ++n) lanes[mask][n] = 0;
    }
  }
};
constexpr PackTable kPackTable;
#endif

// The kept entries of cols/vals [0, n) of one row of x (row_key = sparse_row_key(key, row)),
// packed in order into kept_index / kept_value (scaled; n + 8 slots), each decision recorded
// (1 or 0) when `record` is given; returns the number kept. With AVX2, 8 entries at a time: the
// 32-bit hash in vector lanes, one compare, and a table permutation that packs the kept lanes
// (no branch on the random decisions, and nothing stored and read back). The tail, and other
// targets, run the same hash a scalar entry at a time.
inline int64_t pack_kept_row(uint64_t row_key, uint32_t threshold, float scale,
                             const int32_t* __restrict cols, const float* __restrict vals, int64_t n,
                             int32_t* __restrict kept_index, float* __restrict kept_value,
                             uint8_t* __restrict record) {
  int64_t kept = 0, k = 0;
#if defined(__AVX2__)
  const __m256i key_lo = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(row_key)));
  const __m256i key_hi = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(row_key >> 32)));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int32_t>(0x85ebca6bu));
  const __m256i m2 = _mm256_set1_epi32(static_cast<int32_t>(0xc2b2ae35u));
  // draw >= threshold as draw > threshold - 1: draws are below 2^16 and threshold <= 2^16.
  const __m256i below = _mm256_set1_epi32(static_cast<int32_t>(threshold) - 1);
  const __m256 scale8 = _mm256_set1_ps(scale);
  for (; k + 8 <= n; k += 8) {
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + k));
    __m256i h = _mm256_add_epi32(_mm256_xor_si256(key_lo, c), key_hi);  // sparse_entry_draw_in_row
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    h = _mm256_mullo_epi32(h, m1);
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
    h = _mm256_mullo_epi32(h, m2);
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_srli_epi32(h, 16), below);
    const auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(keep)));
    const __m256i perm =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kPackTable.lanes[mask])));
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(vals + k), scale8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(kept_index + kept), _mm256_permutevar8x32_epi32(c, perm));
    _mm256_storeu_ps(kept_value + kept, _mm256_permutevar8x32_ps(v, perm));
    if (record)
      for (int j = 0; j < 8; ++j) record[k + j] = static_cast<uint8_t>((mask >> j) & 1u);
    kept += std::popcount(mask);
  }
#endif
  for (; k < n; ++k) {  // slot `kept` <= k: a dropped entry is overwritten
    const bool keep = sparse_entry_draw_in_row(row_key, cols[k]) >= threshold;
    kept_index[kept] = cols[k];
    kept_value[kept] = vals[k] * scale;
    if (record) record[k] = static_cast<uint8_t>(keep);
    kept += keep;
  }
  return kept;
}

// Row chunks of a product with m columns: about 32k multiply-adds per chunk, large enough to
// amortise a task, small enough to balance.
std::vector<int64_t> product_chunks(std::span<const int64_t> indptr, int64_t m) {
  return balanced_row_chunks(indptr, std::max<int64_t>(64, (int64_t{1} << 15) / std::max<int64_t>(m, 1)));
}

}  // namespace

void spmm(const CsrMatrix& x, ConstView b, View y, bool accumulate) {
  check_shape("spmm: b", b, {x.cols(), kAny});
  const int64_t m = b.dim(1);
  check_shape("spmm: y", y, {x.rows(), m});
  if (x.rows() == 0 || m == 0) return;
  const auto indptr = x.indptr();
  const int32_t* indices = x.indices().data();
  const float* values = x.values().data();
  const float* bd = b.data();
  float* yd = y.data();
  const std::vector<int64_t> chunks = product_chunks(indptr, m);
  parallel_for_chunks(chunks, [&](size_t, int64_t row_begin, int64_t row_end) {
    for (int64_t r = row_begin; r < row_end; ++r)
      spmm_row(indices, values, indptr[static_cast<size_t>(r)], indptr[static_cast<size_t>(r) + 1], bd, m,
               yd + r * m, accumulate);
  });
}

void spmm_transposed(const CsrMatrix& x, ConstView b, View y, bool accumulate) {
  check_shape("spmm_transposed: b", b, {x.rows(), kAny});
  check_shape("spmm_transposed: y", y, {x.cols(), b.dim(1)});
  spmm(x.transposed(), b, y, accumulate);
}

void spmm_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y, bool accumulate,
                  std::span<uint8_t> keep_out) {
  check_shape("spmm_dropped: b", b, {x.cols(), kAny});
  const int64_t m = b.dim(1);
  check_shape("spmm_dropped: y", y, {x.rows(), m});
  if (!keep_out.empty() && static_cast<int64_t>(keep_out.size()) != x.nnz())
    raise<ShapeError>("spmm_dropped: keep_out has ", keep_out.size(), " bytes, expected one per entry of x (",
                      x.nnz(), ")");
  if (x.rows() == 0 || (m == 0 && keep_out.empty())) return;
  const auto indptr = x.indptr();
  const int32_t* indices = x.indices().data();
  const float* values = x.values().data();
  const float* bd = b.data();
  float* yd = y.data();
  uint8_t* keep_all = keep_out.data();
  const std::vector<int64_t> chunks = product_chunks(indptr, m);
  parallel_for_chunks(chunks, [&](size_t, int64_t row_begin, int64_t row_end) {
    for (int64_t r = row_begin; r < row_end; ++r) {
      const int64_t begin = indptr[static_cast<size_t>(r)];
      const int32_t* cols = indices + begin;
      const float* vals = values + begin;
      uint8_t* record = keep_all ? keep_all + begin : nullptr;
      const uint64_t row_key = sparse_row_key(drop.key, r);
      const auto pack = [&](int64_t k0, int64_t k1, int32_t* kept_index, float* kept_value) {
        return pack_kept_row(row_key, drop.threshold, drop.scale, cols + k0, vals + k0, k1 - k0, kept_index,
                             kept_value, record ? record + k0 : nullptr);
      };
      dropped_row(indptr[static_cast<size_t>(r) + 1] - begin, pack, bd, m, yd + r * m, accumulate);
    }
  });
}

void spmm_transposed_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y,
                             bool accumulate, std::span<const uint8_t> keep_in) {
  check_shape("spmm_transposed_dropped: b", b, {x.rows(), kAny});
  const int64_t m = b.dim(1);
  check_shape("spmm_transposed_dropped: y", y, {x.cols(), m});
  if (!keep_in.empty() && static_cast<int64_t>(keep_in.size()) != x.nnz())
    raise<ShapeError>("spmm_transposed_dropped: keep has ", keep_in.size(),
                      " bytes, expected one per entry of x (", x.nnz(), ")");
  if (x.cols() == 0 || m == 0) return;
  // Row c of x^T: x's entries (r, c), their values (and recorded decisions) read in place
  // through the shared index.
  const CsrMatrix::TransposeIndex t = x.transpose_index();
  const int32_t* rows = t.indices.data();
  const int64_t* source = t.source.data();
  const float* values = x.values().data();
  const uint8_t* recorded = keep_in.data();
  const float* bd = b.data();
  float* yd = y.data();
  const std::vector<int64_t> chunks = product_chunks(t.indptr, m);
  parallel_for_chunks(chunks, [&](size_t, int64_t col_begin, int64_t col_end) {
    for (int64_t c = col_begin; c < col_end; ++c) {
      const int64_t begin = t.indptr[static_cast<size_t>(c)];
      const int32_t* r = rows + begin;
      const int64_t* src = source + begin;
      // Recorded decisions are read through the same index as the values; without them each
      // entry's row key is mixed again (rows change from entry to entry here).
      const auto pack = [&](int64_t k0, int64_t k1, int32_t* kept_index, float* kept_value) {
        int64_t kept = 0;
        for (int64_t k = k0; k < k1; ++k) {  // slot `kept` <= k - k0: a dropped entry is overwritten
          const int64_t p = src[k];
          const bool keep =
              recorded ? recorded[p] != 0 : sparse_entry_draw(drop.key, r[k], c) >= drop.threshold;
          kept_index[kept] = r[k];
          kept_value[kept] = values[p] * drop.scale;
          kept += keep;
        }
        return kept;
      };
      dropped_row(t.indptr[static_cast<size_t>(c) + 1] - begin, pack, bd, m, yd + c * m, accumulate);
    }
  });
}

}  // namespace edgeattn::kernels
