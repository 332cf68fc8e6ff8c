// The CUDA backend of graph attention (AttentionPath::cuda): the four canonical edge scores of
// attention_backend.hpp (dot, additive, vector_leaky, vector_tanh, so every public score), softmax
// or relu, attention dropout with the CPU paths' mask, an edge bias, GAT's per-edge score term and
// its node terms taken from the value (fold_att_*), forward and backward.
//
// Work split. A tile of G lanes (G = 4, 8, 16 or 32: the power of two covering the head's
// feature length, at most 32) owns one (destination, head) pair in the forward and the
// backward's destination pass, and one (source, head) pair in its source pass; lane l holds the
// features l, l + G, ... of that head in registers (VPL of them). A warp so holds 32 / G heads of
// one row when the head count is a multiple of 32 / G (GAT's 8 x 8: four heads a warp), and a
// row's gathers of v_j read whole 32-byte sectors. Dot products over a head reduce across the
// tile with shuffles (cooperative_groups::reduce), which only that tile's lanes join.
//
// Edges go in batches of G: each lane loads one edge's column (and, in the source pass, its
// destination, CSR edge and record), so a batch's index and score loads are in flight together;
// the additive score is each lane's own, the others one tile reduction an edge. Then the batch's
// value rows are gathered back to back. A row longer than kSegmentBatches batches (a power-law
// hub: R-MAT's reach tens of thousands of edges) is cut into segments, each its own tile, whose
// partial results (m, l, acc; or gradient sums) a merge kernel combines in segment order, so one
// hub no longer holds the whole kernel up (R-MAT 1M / 10M, GAT forward: 15.5 -> 2.3 ms on an H200).
//
// Forward: an online softmax (Milakov & Gimelshein 2018) a batch at a time: the batch's maximum
// raises the running shift m once, rescaling the running sum l and acc; out = acc / l,
// lse = m + log l.
//
// Backward, atomics-free and so deterministic run to run (the CPU paths' property):
//   destination pass, per (i, h): D_i = <dO_i, O_i> (the per-head output; recomputed by one
//     forward when heads were averaged); then per edge the kept weight w~_e and the score
//     gradient ds_e = alpha_e (keep_e <dO_i, v_j> - D_i) (relu: [s > 0] keep_e <dO_i, v_j>),
//     stored per edge and head ([E, H] pairs), with dq_i, dsd_i, dbias_e, dse_e and the per-row
//     part of d att summed here;
//   source pass, per (j, h), over the graph's transpose: dv_j = sum w~_e dO_i, dk_j and dss_j
//     from the stored ds_e;
//   then d att (and d att_src / d att_dst) summed over rows in a fixed order (column_sums), and
//     the node terms' gradients folded into dv.
// Sums run in another order than the CPU kernels': results agree to float rounding, and the tests
// hold the path to the double-precision reference within a stated tolerance.
//
// Operands live in host memory (the dispatch's contract): each call uploads what it reads and
// downloads what it writes. cuda_time_attention times the kernels alone, operands resident.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/kernels/cuda.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/cuda/cuda_timing.hpp"

namespace edgeattn::kernels {
namespace {

namespace cg = cooperative_groups;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    raise<DeviceError>("attention (path=cuda): ", what, " failed: ", cudaGetErrorName(status), " (",
                       cudaGetErrorString(status), ")");
}

// A device allocation, freed with its owner; empty for a null or empty host array.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(int64_t n) : n_(n) {
    if (n > 0)
      check(cudaMalloc(reinterpret_cast<void**>(&p_), sizeof(T) * static_cast<size_t>(n)), "cudaMalloc");
  }
  DeviceArray(const T* host, int64_t n) : DeviceArray(host ? n : 0) {
    if (p_) check(cudaMemcpy(p_, host, sizeof(T) * static_cast<size_t>(n), cudaMemcpyHostToDevice), "upload");
  }
  DeviceArray(DeviceArray&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() {
    if (p_) cudaFree(p_);
  }
  T* get() const { return p_; }
  void zero() const {
    if (p_) check(cudaMemset(p_, 0, sizeof(T) * static_cast<size_t>(n_)), "cudaMemset");
  }
  // Copies to host memory (skipped for a null target).
  void download(T* host) const {
    if (host && p_)
      check(cudaMemcpy(host, p_, sizeof(T) * static_cast<size_t>(n_), cudaMemcpyDeviceToHost), "download");
  }
  // Adds to host memory (the backward's buffers are accumulated into).
  void download_add(T* host) const {
    if (!host || !p_) return;
    std::vector<T> tmp(static_cast<size_t>(n_));
    download(tmp.data());
    for (size_t n = 0; n < tmp.size(); ++n) host[n] += tmp[n];
  }

 private:
  T* p_ = nullptr;
  int64_t n_ = 0;
};

// Device pointers and sizes of one problem (null where the score does not use the operand).
struct Dev {
  int64_t nd = 0, ns = 0, ne = 0;
  int heads = 0, dk = 0, dv = 0;
  EdgeScore kind = EdgeScore::dot;
  bool softmax = true;
  float scale = 1.f, slope = 0.2f;
  float dropout = 0.f, keep_scale = 1.f;
  uint32_t keep_threshold = 0;
  uint64_t seed = 0;
  const int32_t* col = nullptr;      // [ne]
  const int32_t* row_idx = nullptr;  // transpose: destination of each entry, [ne]
  const int64_t* t_edge = nullptr;   // transpose: CSR edge of each entry, [ne]
  const float *q = nullptr, *k = nullptr, *v = nullptr, *sd = nullptr, *ss = nullptr, *se = nullptr,
              *att = nullptr, *bias = nullptr;
};

__device__ __forceinline__ float leaky(float x, float slope) { return x > 0.f ? x : slope * x; }

// The edge's dropout factor for head h: keep_scale or 0, the mask of dropout_keep (core/rng.hpp).
__device__ __forceinline__ float keep_factor(const Dev& d, int64_t i, int64_t j, int h) {
  if (d.dropout <= 0.f) return 1.f;
  return edge_head_bits(d.seed, i, j, h) >= d.keep_threshold ? d.keep_scale : 0.f;
}

// Per-lane registers of a head's features: lane l holds features l, l + G, ... (VPL of them).
template <int G, int VPL>
struct Lanes {
  float x[VPL];
  __device__ void load(const float* row, int n, int lane) {
#pragma unroll
    for (int t = 0; t < VPL; ++t) {
      const int c = lane + G * t;
      x[t] = c < n ? row[c] : 0.f;
    }
  }
  __device__ void fill(float value) {
#pragma unroll
    for (int t = 0; t < VPL; ++t) x[t] = value;
  }
  __device__ void store(float* row, int n, int lane) const {
#pragma unroll
    for (int t = 0; t < VPL; ++t) {
      const int c = lane + G * t;
      if (c < n) row[c] = x[t];
    }
  }
};

template <int G>
using Tile = cg::thread_block_tile<static_cast<unsigned>(G)>;

template <class T>
__device__ __forceinline__ float tile_sum(const T& tile, float x) {
  return cg::reduce(tile, x, cg::plus<float>());
}

template <class T>
__device__ __forceinline__ float tile_max(const T& tile, float x) {
  return cg::reduce(tile, x, cg::greater<float>());
}

// A destination's edges (or a source's transpose entries) as segments of at most kSegmentBatches
// batches of G: a row longer than that (a hub) is split over several tiles, whose partial results
// a merge kernel combines in segment order. `slot` is -1 for a row held by one segment (which
// writes its results directly), else the segment's place in the partial-results buffer; the
// segments of one row have consecutive slots.
constexpr int kSegmentBatches = 16;

struct Segments {
  const int32_t* node = nullptr;  // [count]
  const int64_t* begin = nullptr;
  const int64_t* end = nullptr;
  const int64_t* slot = nullptr;
  int64_t count = 0;
};

// The rows split over several segments: node, first slot and number of segments.
struct SplitRows {
  const int32_t* node = nullptr;
  const int64_t* first = nullptr;
  const int64_t* segments = nullptr;
  int64_t count = 0;
};

// The scores of one batch of up to G edges eb .. eb + n - 1 of row i: lane l returns edge eb + l's
// score (bias included; -FLT_MAX for l >= n) and, for additive, its activation input zl. Additive:
// each lane its own edge's; the others: a reduction over the tile per edge, kept by that edge's lane.
template <int G, int VPL, EdgeScore K>
__device__ __forceinline__ float batch_scores(const Dev& d, const Tile<G>& tile, int lane, int64_t i,
                                              int64_t eb, int n, int32_t jl, int h, const Lanes<G, VPL>& q,
                                              const Lanes<G, VPL>& a, float& zl) {
  float sl = -FLT_MAX;
  if constexpr (K == EdgeScore::additive) {
    if (lane < n) {
      float z = d.sd[i * d.heads + h] + d.ss[static_cast<int64_t>(jl) * d.heads + h];
      if (d.se) z += d.se[(eb + lane) * d.heads + h];
      zl = z;
      sl = leaky(z, d.slope);
    }
  } else {
#pragma unroll 4
    for (int k = 0; k < n; ++k) {
      const int64_t j = tile.shfl(jl, k);
      const float* kj = d.k + (j * d.heads + h) * d.dk;
      float part = 0.f;
#pragma unroll
      for (int t = 0; t < VPL; ++t) {
        const int c = lane + G * t;
        if (c < d.dk) {
          if constexpr (K == EdgeScore::dot) {
            part += q.x[t] * kj[c];
          } else if constexpr (K == EdgeScore::vector_leaky) {
            part += a.x[t] * leaky(q.x[t] + kj[c], d.slope);
          } else {
            part += a.x[t] * tanhf(q.x[t] + kj[c]);
          }
        }
      }
      const float s = tile_sum(tile, part);
      if (lane == k) sl = K == EdgeScore::dot ? s * d.scale : s;
    }
  }
  if (d.bias && lane < n) sl += d.bias[(eb + lane) * d.heads + h];
  return sl;
}

// Blocks of 256 threads an SM the edge kernels are compiled for: with one register of features a
// lane, 6 (at most 40 registers a thread; ncu on the H200 found 48 registers and 62.5% occupancy
// without the bound, the forward latency-bound at 16 cycles an instruction).
constexpr int min_blocks(int vpl) { return vpl <= 1 ? 6 : vpl <= 2 ? 4 : 2; }

// The (segment, head) pair of this tile, or false past the last.
template <int G>
__device__ __forceinline__ bool segment_pair(int64_t count, int heads, int64_t& s, int& h) {
  const int64_t pair = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (pair >= count * heads) return false;  // uniform over the tile
  s = pair / heads;
  h = static_cast<int>(pair % heads);
  return true;
}

// Forward over one segment of row i: online softmax over batches of G edges (one shift test and
// one rescale a batch), the value rows of a batch gathered back to back. A whole row writes out and
// lse; a segment of a split row writes (m, l, acc) to partial[slot, h] for forward_merge_kernel.
template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256, min_blocks(VPL))
    forward_kernel(Dev d, Segments sg, float* out, float* lse, float* partial) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t s;
  int h;
  if (!segment_pair<G>(sg.count, d.heads, s, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t i = sg.node[s], e0 = sg.begin[s], e1 = sg.end[s], slot = sg.slot[s];
  Lanes<G, VPL> q, a, acc;
  if constexpr (K != EdgeScore::additive) q.load(d.q + (i * d.heads + h) * d.dk, d.dk, lane);
  if constexpr (K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh)
    a.load(d.att + h * d.dk, d.dk, lane);
  acc.fill(0.f);
  // -FLT_MAX, not -inf: an edge whose score is -inf then weighs 0 instead of making a NaN.
  float m = -FLT_MAX, l = 0.f;
  for (int64_t eb = e0; eb < e1; eb += G) {
    const int n = static_cast<int>(min(static_cast<int64_t>(G), e1 - eb));
    const int32_t jl = lane < n ? d.col[eb + lane] : 0;
    float zl = 0.f;
    const float sl = batch_scores<G, VPL, K>(d, tile, lane, i, eb, n, jl, h, q, a, zl);
    const float kf = lane < n ? keep_factor(d, i, jl, h) : 0.f;
    float wl;
    if (d.softmax) {
      const float mn = fmaxf(m, tile_max(tile, sl));
      const float c = expf(m - mn);
      const float pl = lane < n ? expf(sl - mn) : 0.f;
      l = l * c + tile_sum(tile, pl);
      m = mn;
#pragma unroll
      for (int t = 0; t < VPL; ++t) acc.x[t] *= c;
      wl = pl * kf;
    } else {
      wl = lane < n ? fmaxf(sl, 0.f) * kf : 0.f;
    }
#pragma unroll 4
    for (int k = 0; k < n; ++k) {
      const int64_t j = tile.shfl(jl, k);
      const float w = tile.shfl(wl, k);
      const float* vj = d.v + (j * d.heads + h) * d.dv;
#pragma unroll
      for (int t = 0; t < VPL; ++t) {
        const int c = lane + G * t;
        if (c < d.dv) acc.x[t] += w * vj[c];
      }
    }
  }
  if (slot >= 0) {
    float* p = partial + (slot * d.heads + h) * (2 + d.dv);
    if (lane == 0) p[0] = m, p[1] = l;
    acc.store(p + 2, d.dv, lane);
    return;
  }
  if (d.softmax) {
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int t = 0; t < VPL; ++t) acc.x[t] *= inv;
    if (lane == 0) lse[i * d.heads + h] = l > 0.f ? m + logf(l) : -INFINITY;
  }
  acc.store(out + (i * d.heads + h) * d.dv, d.dv, lane);
}

// A split row's output from its segments' (m, l, acc), in segment order.
template <int G, int VPL>
__global__ void __launch_bounds__(256)
    forward_merge_kernel(Dev d, SplitRows sr, const float* partial, float* out, float* lse) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t r;
  int h;
  if (!segment_pair<G>(sr.count, d.heads, r, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t i = sr.node[r], first = sr.first[r], count = sr.segments[r];
  const int64_t stride = 2 + d.dv;
  auto record = [&](int64_t k) { return partial + ((first + k) * d.heads + h) * stride; };
  float big = -FLT_MAX;
  if (d.softmax)
    for (int64_t k = 0; k < count; ++k) big = fmaxf(big, record(k)[0]);
  Lanes<G, VPL> acc, part;
  acc.fill(0.f);
  float l = 0.f;
  for (int64_t k = 0; k < count; ++k) {
    const float* p = record(k);
    const float c = d.softmax ? expf(p[0] - big) : 1.f;
    l += p[1] * c;
    part.load(p + 2, d.dv, lane);
#pragma unroll
    for (int t = 0; t < VPL; ++t) acc.x[t] += c * part.x[t];
  }
  if (d.softmax) {
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int t = 0; t < VPL; ++t) acc.x[t] *= inv;
    if (lane == 0) lse[i * d.heads + h] = l > 0.f ? big + logf(l) : -INFINITY;
  }
  acc.store(out + (i * d.heads + h) * d.dv, d.dv, lane);
}

// The normalised weights before dropout (AttentionConfig::return_attention), from the final lse.
template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256) alpha_kernel(Dev d, Segments sg, const float* lse, float* alpha) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t s;
  int h;
  if (!segment_pair<G>(sg.count, d.heads, s, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t i = sg.node[s], e0 = sg.begin[s], e1 = sg.end[s];
  Lanes<G, VPL> q, a;
  if constexpr (K != EdgeScore::additive) q.load(d.q + (i * d.heads + h) * d.dk, d.dk, lane);
  if constexpr (K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh)
    a.load(d.att + h * d.dk, d.dk, lane);
  const float row_lse = d.softmax ? lse[i * d.heads + h] : 0.f;
  for (int64_t eb = e0; eb < e1; eb += G) {
    const int n = static_cast<int>(min(static_cast<int64_t>(G), e1 - eb));
    const int32_t jl = lane < n ? d.col[eb + lane] : 0;
    float zl = 0.f;
    const float sl = batch_scores<G, VPL, K>(d, tile, lane, i, eb, n, jl, h, q, a, zl);
    if (lane < n) alpha[(eb + lane) * d.heads + h] = d.softmax ? expf(sl - row_lse) : fmaxf(sl, 0.f);
  }
}

// What the destination pass leaves for the source pass, per edge and head.
struct EdgeRecord {
  float w;   // the kept weight alpha~_e (relu: max(s, 0) keep_e)
  float ds;  // the score gradient: ds_e (additive: ds_e leaky'(z_e), the activation input's)
};

struct BackwardDev {
  const float* dout = nullptr;  // [nd, H, dv]
  const float* lse = nullptr;   // [nd, H]
  const float* out = nullptr;   // [nd, H, dv]: the per-head output (softmax)
  EdgeRecord* rec = nullptr;    // [ne, H]
  float *dq = nullptr, *dk = nullptr, *dv = nullptr, *dsd = nullptr, *dss = nullptr, *dbias = nullptr,
        *dse = nullptr;
  float* datt_rows = nullptr;  // [nd, H, dk]: each destination's part of d att
};

// Destination pass over one segment of row i: D_i = <dO_i, O_i>, then per batch the edges' scores,
// <dO_i, v_j> (one tile reduction an edge), their records {w~, ds} and dbias, dse; dsd_i, dq_i and
// the row's part of d att summed over the segment. A split row's segments write
// [dsd, dq[dk], datt[dk]] to partial[slot, h] for backward_dst_merge_kernel.
template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256, min_blocks(VPL))
    backward_dst_kernel(Dev d, Segments sg, BackwardDev b, float* partial) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t s;
  int h;
  if (!segment_pair<G>(sg.count, d.heads, s, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t i = sg.node[s], e0 = sg.begin[s], e1 = sg.end[s], slot = sg.slot[s];
  constexpr bool kVector = K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh;
  Lanes<G, VPL> q, a, g, dq, datt;
  if constexpr (K != EdgeScore::additive) q.load(d.q + (i * d.heads + h) * d.dk, d.dk, lane);
  if constexpr (kVector) a.load(d.att + h * d.dk, d.dk, lane);
  g.load(b.dout + (i * d.heads + h) * d.dv, d.dv, lane);
  dq.fill(0.f);
  datt.fill(0.f);
  float D = 0.f, row_lse = 0.f;
  if (d.softmax) {
    row_lse = b.lse[i * d.heads + h];
    Lanes<G, VPL> o;
    o.load(b.out + (i * d.heads + h) * d.dv, d.dv, lane);
    float part = 0.f;
#pragma unroll
    for (int t = 0; t < VPL; ++t) part += g.x[t] * o.x[t];
    D = tile_sum(tile, part);
  }
  float dsd = 0.f;  // this lane's edges' share
  for (int64_t eb = e0; eb < e1; eb += G) {
    const int n = static_cast<int>(min(static_cast<int64_t>(G), e1 - eb));
    const int32_t jl = lane < n ? d.col[eb + lane] : 0;
    float zl = 0.f;
    const float sl = batch_scores<G, VPL, K>(d, tile, lane, i, eb, n, jl, h, q, a, zl);
    const float kf = lane < n ? keep_factor(d, i, jl, h) : 0.f;
    float tl = 0.f;  // <dO_i, v_j> of this lane's edge
#pragma unroll 4
    for (int k = 0; k < n; ++k) {
      const float* vj = d.v + (static_cast<int64_t>(tile.shfl(jl, k)) * d.heads + h) * d.dv;
      float part = 0.f;
#pragma unroll
      for (int t = 0; t < VPL; ++t) {
        const int c = lane + G * t;
        if (c < d.dv) part += g.x[t] * vj[c];
      }
      const float tk = tile_sum(tile, part);
      if (lane == k) tl = tk;
    }
    float wl = 0.f, dsl = 0.f;
    if (lane < n) {
      if (d.softmax) {
        const float alpha = expf(sl - row_lse);
        wl = alpha * kf;
        dsl = alpha * (kf * tl - D);
      } else {
        wl = fmaxf(sl, 0.f) * kf;
        dsl = sl > 0.f ? kf * tl : 0.f;
      }
    }
    float rds = dsl;
    if constexpr (K == EdgeScore::additive) {
      rds = dsl * (zl > 0.f ? 1.f : d.slope);
      dsd += rds;
    }
    if (lane < n) {
      const int64_t eh = (eb + lane) * d.heads + h;
      b.rec[eh] = EdgeRecord{wl, rds};
      if (b.dbias) b.dbias[eh] = dsl;
      if constexpr (K == EdgeScore::additive)
        if (b.dse) b.dse[eh] = rds;
    }
    if constexpr (K != EdgeScore::additive) {
      for (int k = 0; k < n; ++k) {
        const float ds = tile.shfl(dsl, k);
        const float* kj = d.k + (static_cast<int64_t>(tile.shfl(jl, k)) * d.heads + h) * d.dk;
#pragma unroll
        for (int t = 0; t < VPL; ++t) {
          const int c = lane + G * t;
          if (c < d.dk) {
            if constexpr (K == EdgeScore::dot) {
              dq.x[t] += ds * d.scale * kj[c];
            } else if constexpr (K == EdgeScore::vector_leaky) {
              const float u = q.x[t] + kj[c];
              dq.x[t] += ds * a.x[t] * (u > 0.f ? 1.f : d.slope);
              datt.x[t] += ds * leaky(u, d.slope);
            } else {
              const float th = tanhf(q.x[t] + kj[c]);
              dq.x[t] += ds * a.x[t] * (1.f - th * th);
              datt.x[t] += ds * th;
            }
          }
        }
      }
    }
  }
  dsd = tile_sum(tile, dsd);
  if (slot >= 0) {
    float* p = partial + (slot * d.heads + h) * (1 + 2 * d.dk);
    if (lane == 0) p[0] = dsd;
    dq.store(p + 1, d.dk, lane);
    datt.store(p + 1 + d.dk, d.dk, lane);
    return;
  }
  if constexpr (K == EdgeScore::additive) {
    if (lane == 0 && b.dsd) b.dsd[i * d.heads + h] = dsd;
  } else {
    if (b.dq) dq.store(b.dq + (i * d.heads + h) * d.dk, d.dk, lane);
    if constexpr (kVector) datt.store(b.datt_rows + (i * d.heads + h) * d.dk, d.dk, lane);
  }
}

// A split row's gradient records [scalar, a[na], b[nb]] (one per segment and head, consecutive
// slots from `first`) summed in segment order.
template <int G, int VPL>
__device__ void sum_records(const float* partial, int64_t first, int64_t count, int heads, int h, int na,
                            int nb, int lane, float& scalar, Lanes<G, VPL>& a, Lanes<G, VPL>& b) {
  Lanes<G, VPL> part;
  a.fill(0.f);
  b.fill(0.f);
  scalar = 0.f;
  for (int64_t k = 0; k < count; ++k) {
    const float* p = partial + ((first + k) * heads + h) * (1 + na + nb);
    scalar += p[0];
    part.load(p + 1, na, lane);
#pragma unroll
    for (int t = 0; t < VPL; ++t) a.x[t] += part.x[t];
    part.load(p + 1 + na, nb, lane);
#pragma unroll
    for (int t = 0; t < VPL; ++t) b.x[t] += part.x[t];
  }
}

// A split row's dsd, dq and d att part: its segments' records summed in segment order.
template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256)
    backward_dst_merge_kernel(Dev d, SplitRows sr, const float* partial, BackwardDev b) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t r;
  int h;
  if (!segment_pair<G>(sr.count, d.heads, r, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t i = sr.node[r];
  Lanes<G, VPL> dq, datt;
  float dsd;
  sum_records(partial, sr.first[r], sr.segments[r], d.heads, h, d.dk, d.dk, lane, dsd, dq, datt);
  if constexpr (K == EdgeScore::additive) {
    if (lane == 0 && b.dsd) b.dsd[i * d.heads + h] = dsd;
  } else {
    if (b.dq) dq.store(b.dq + (i * d.heads + h) * d.dk, d.dk, lane);
    if constexpr (K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh)
      datt.store(b.datt_rows + (i * d.heads + h) * d.dk, d.dk, lane);
  }
}

// Source pass over one segment of source j's transpose entries: each lane loads one entry's
// destination, CSR edge and record (a batch's loads in flight together), then dv_j += w~ dO_i and
// dk_j (dss_j) from ds, edge by edge. A split source's segments write [dss, dv[dv], dk[dk]] to
// partial[slot, h] for backward_src_merge_kernel.
template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256, min_blocks(VPL))
    backward_src_kernel(Dev d, Segments sg, BackwardDev b, float* partial) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t s;
  int h;
  if (!segment_pair<G>(sg.count, d.heads, s, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t j = sg.node[s], p0 = sg.begin[s], p1 = sg.end[s], slot = sg.slot[s];
  constexpr bool kVector = K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh;
  Lanes<G, VPL> kj, a, dv, dk;
  if constexpr (kVector) {
    kj.load(d.k + (j * d.heads + h) * d.dk, d.dk, lane);
    a.load(d.att + h * d.dk, d.dk, lane);
  }
  dv.fill(0.f);
  dk.fill(0.f);
  float dss = 0.f;  // this lane's entries' share
  for (int64_t pb = p0; pb < p1; pb += G) {
    const int n = static_cast<int>(min(static_cast<int64_t>(G), p1 - pb));
    int32_t il = 0;
    EdgeRecord rl{0.f, 0.f};
    if (lane < n) {
      il = d.row_idx[pb + lane];
      rl = b.rec[d.t_edge[pb + lane] * d.heads + h];
    }
    if constexpr (K == EdgeScore::additive) dss += rl.ds;
#pragma unroll 4
    for (int k = 0; k < n; ++k) {
      const int64_t i = tile.shfl(il, k);
      const float w = tile.shfl(rl.w, k);
      const float* gi = b.dout + (i * d.heads + h) * d.dv;
#pragma unroll
      for (int t = 0; t < VPL; ++t) {
        const int c = lane + G * t;
        if (c < d.dv) dv.x[t] += w * gi[c];
      }
      if constexpr (K != EdgeScore::additive) {
        const float ds = tile.shfl(rl.ds, k);
        const float* qi = d.q + (i * d.heads + h) * d.dk;
#pragma unroll
        for (int t = 0; t < VPL; ++t) {
          const int c = lane + G * t;
          if (c < d.dk) {
            if constexpr (K == EdgeScore::dot) {
              dk.x[t] += ds * d.scale * qi[c];
            } else if constexpr (K == EdgeScore::vector_leaky) {
              dk.x[t] += ds * a.x[t] * (qi[c] + kj.x[t] > 0.f ? 1.f : d.slope);
            } else {
              const float th = tanhf(qi[c] + kj.x[t]);
              dk.x[t] += ds * a.x[t] * (1.f - th * th);
            }
          }
        }
      }
    }
  }
  dss = tile_sum(tile, dss);
  if (slot >= 0) {
    float* p = partial + (slot * d.heads + h) * (1 + d.dv + d.dk);
    if (lane == 0) p[0] = dss;
    dv.store(p + 1, d.dv, lane);
    dk.store(p + 1 + d.dv, d.dk, lane);
    return;
  }
  if (b.dv) dv.store(b.dv + (j * d.heads + h) * d.dv, d.dv, lane);
  if constexpr (K == EdgeScore::additive) {
    if (lane == 0 && b.dss) b.dss[j * d.heads + h] = dss;
  } else {
    if (b.dk) dk.store(b.dk + (j * d.heads + h) * d.dk, d.dk, lane);
  }
}

// A split source's dv, dk and dss: its segments' records summed in segment order.
template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256)
    backward_src_merge_kernel(Dev d, SplitRows sr, const float* partial, BackwardDev b) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  int64_t r;
  int h;
  if (!segment_pair<G>(sr.count, d.heads, r, h)) return;
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t j = sr.node[r];
  Lanes<G, VPL> dv, dk;
  float dss;
  sum_records(partial, sr.first[r], sr.segments[r], d.heads, h, d.dv, d.dk, lane, dss, dv, dk);
  if (b.dv) dv.store(b.dv + (j * d.heads + h) * d.dv, d.dv, lane);
  if constexpr (K == EdgeScore::additive) {
    if (lane == 0 && b.dss) b.dss[j * d.heads + h] = dss;
  } else {
    if (b.dk) dk.store(b.dk + (j * d.heads + h) * d.dk, d.dk, lane);
  }
}

// GAT's node terms from the value: dv_j += dss_j a_src + [j < nd] dsd_j a_dst, per head.
__global__ void fold_node_terms_kernel(int64_t nd, int64_t ns, int heads, int dv, const float* dss,
                                       const float* dsd, const float* a_src, const float* a_dst,
                                       float* dvals) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t width = static_cast<int64_t>(heads) * dv;
  if (idx >= ns * width) return;
  const int64_t j = idx / width;
  const int64_t hc = idx % width;
  const int h = static_cast<int>(hc / dv);
  float add = dss[j * heads + h] * a_src[hc];
  if (j < nd) add += dsd[j * heads + h] * a_dst[hc];
  dvals[idx] += add;
}

// Column sums in a fixed order: partial[chunk, c] = sum over the chunk's rows r of
// (w ? w[r, c / per_weight] : 1) * x[r, c]; 32 columns by 8 row lanes a block, then a tree over the
// 8 lanes. column_total sums the chunks in order.
constexpr int kChunkRows = 4096;

__global__ void column_partial_kernel(int64_t rows, int64_t cols, const float* x, const float* w,
                                      int per_weight, float* partial) {
  __shared__ float sums[8][33];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kChunkRows;
  const int64_t r1 = min(rows, r0 + kChunkRows);
  float acc = 0.f;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const float weight = w ? w[r * (cols / per_weight) + c / per_weight] : 1.f;
      acc += weight * x[r * cols + c];
    }
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  for (int half = 4; half > 0; half /= 2) {
    if (threadIdx.y < half) sums[threadIdx.y][threadIdx.x] += sums[threadIdx.y + half][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < cols) partial[blockIdx.y * cols + c] = sums[0][threadIdx.x];
}

__global__ void column_total_kernel(int64_t chunks, int64_t cols, const float* partial, float* total) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (int64_t k = 0; k < chunks; ++k) acc += partial[k * cols + c];
  total[c] = acc;
}

int64_t column_chunks(int64_t rows) { return std::max<int64_t>(1, (rows + kChunkRows - 1) / kChunkRows); }

// total[c] = sum_r (w ? w[r, c / per_weight] : 1) x[r, c], over `rows` rows of `cols` columns;
// `partial` holds column_chunks(rows) * cols floats.
void column_sums(int64_t rows, int64_t cols, const float* x, const float* w, int per_weight, float* partial,
                 float* total) {
  const int64_t chunks = column_chunks(rows);
  if (rows > 0) {
    const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>(chunks));
    column_partial_kernel<<<grid, dim3(32, 8)>>>(rows, cols, x, w, per_weight, partial);
    check(cudaGetLastError(), "column_partial_kernel launch");
  } else {
    check(cudaMemset(partial, 0, sizeof(float) * static_cast<size_t>(cols)), "cudaMemset");
  }
  column_total_kernel<<<static_cast<unsigned>((cols + 255) / 256), 256>>>(chunks, cols, partial, total);
  check(cudaGetLastError(), "column_total_kernel launch");
}

constexpr int kBlockThreads = 256;

unsigned blocks_for(int64_t pairs, int g) {
  const int64_t per_block = kBlockThreads / g;
  return static_cast<unsigned>(std::max<int64_t>(1, (pairs + per_block - 1) / per_block));
}

// The tile width G and registers a lane VPL of a problem: G the power of two covering the longest
// head (at most 32).
int tile_width(const Dev& d) {
  const int width = std::max(d.dk, d.dv);
  return width <= 4 ? 4 : width <= 8 ? 8 : width <= 16 ? 16 : 32;
}

// Calls f(std::integral_constant<int, G>, std::integral_constant<int, VPL>, kind constant) for the
// problem's shape (tile_width).
template <class F>
void visit_shape(const Dev& d, F&& f) {
  const int width = std::max(d.dk, d.dv);
  auto with_kind = [&](auto g, auto vpl) {
    switch (d.kind) {
      case EdgeScore::dot:
        return f(g, vpl, std::integral_constant<EdgeScore, EdgeScore::dot>{});
      case EdgeScore::additive:
        return f(g, vpl, std::integral_constant<EdgeScore, EdgeScore::additive>{});
      case EdgeScore::vector_leaky:
        return f(g, vpl, std::integral_constant<EdgeScore, EdgeScore::vector_leaky>{});
      case EdgeScore::vector_tanh:
        return f(g, vpl, std::integral_constant<EdgeScore, EdgeScore::vector_tanh>{});
    }
  };
  using std::integral_constant;
  if (width <= 4) return with_kind(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  if (width <= 8) return with_kind(integral_constant<int, 8>{}, integral_constant<int, 1>{});
  if (width <= 16) return with_kind(integral_constant<int, 16>{}, integral_constant<int, 1>{});
  if (width <= 32) return with_kind(integral_constant<int, 32>{}, integral_constant<int, 1>{});
  if (width <= 64) return with_kind(integral_constant<int, 32>{}, integral_constant<int, 2>{});
  if (width <= 128) return with_kind(integral_constant<int, 32>{}, integral_constant<int, 4>{});
  return with_kind(integral_constant<int, 32>{}, integral_constant<int, 8>{});
}

// Segments and split rows of one side (CSR rows, or the transpose's columns), on the device.
struct DeviceSegments {
  DeviceArray<int32_t> node, split_node;
  DeviceArray<int64_t> begin, end, slot, split_first, split_count;
  int64_t slots = 0;
  Segments segments() const { return {node.get(), begin.get(), end.get(), slot.get(), count}; }
  SplitRows split() const { return {split_node.get(), split_first.get(), split_count.get(), splits}; }
  int64_t count = 0, splits = 0;
};

// Cuts each of the nodes' ranges offsets[n] .. offsets[n + 1] into segments of at most `length`
// (one segment for an empty or short range).
DeviceSegments make_segments(std::span<const int64_t> offsets, int64_t length) {
  std::vector<int32_t> node, split_node;
  std::vector<int64_t> begin, end, slot, split_first, split_count;
  const auto nodes = static_cast<int64_t>(offsets.size()) - 1;
  node.reserve(static_cast<size_t>(nodes));
  begin.reserve(static_cast<size_t>(nodes));
  end.reserve(static_cast<size_t>(nodes));
  slot.reserve(static_cast<size_t>(nodes));
  int64_t slots = 0;
  for (int64_t n = 0; n < nodes; ++n) {
    const int64_t b = offsets[static_cast<size_t>(n)], e = offsets[static_cast<size_t>(n) + 1];
    if (e - b <= length) {
      node.push_back(static_cast<int32_t>(n));
      begin.push_back(b);
      end.push_back(e);
      slot.push_back(-1);
      continue;
    }
    split_node.push_back(static_cast<int32_t>(n));
    split_first.push_back(slots);
    split_count.push_back((e - b + length - 1) / length);
    for (int64_t x = b; x < e; x += length) {
      node.push_back(static_cast<int32_t>(n));
      begin.push_back(x);
      end.push_back(std::min(x + length, e));
      slot.push_back(slots++);
    }
  }
  DeviceSegments s;
  s.count = static_cast<int64_t>(node.size());
  s.splits = static_cast<int64_t>(split_node.size());
  s.slots = slots;
  s.node = DeviceArray<int32_t>(node.data(), s.count);
  s.begin = DeviceArray<int64_t>(begin.data(), s.count);
  s.end = DeviceArray<int64_t>(end.data(), s.count);
  s.slot = DeviceArray<int64_t>(slot.data(), s.count);
  s.split_node = DeviceArray<int32_t>(split_node.data(), s.splits);
  s.split_first = DeviceArray<int64_t>(split_first.data(), s.splits);
  s.split_count = DeviceArray<int64_t>(split_count.data(), s.splits);
  return s;
}

// Everything one call keeps on the device: the graph (and its transpose for the backward), their
// segments, and the operands.
struct Problem {
  Dev d;
  DeviceArray<int64_t> t_edge;
  DeviceArray<int32_t> col, row_idx;
  DeviceArray<float> q, k, v, sd, ss, se, att, bias;
  DeviceSegments rows, cols;
};

void check_supported(const Graph& g, const KernelArgs& a) {
  if (a.score.ea || a.score.we)
    raise<InvalidArgument>(
        "attention (path=cuda): edge attributes (edge_attr/edge_proj) are not supported "
        "on the cuda path yet; use path=sparse");
  const int64_t width = std::max(a.score.dk, a.dv);
  if (width > kCudaMaxHeadDim)
    raise<InvalidArgument>("attention (path=cuda): a head of ", width,
                           " features; the cuda path takes up to ", kCudaMaxHeadDim,
                           " (key and value dims); use path=sparse");
  if (g.num_dst() * a.heads > (int64_t{1} << 40))
    raise<InvalidArgument>("attention (path=cuda): ", g.num_dst(), " destinations x ", a.heads,
                           " heads is beyond the launch grid");
  if (!cuda_device())
    raise<DeviceError>("attention (path=cuda): no CUDA device is available (", cuda_unavailable_reason(),
                       ")");
}

Problem upload(const Graph& g, const KernelArgs& a, bool with_transpose) {
  check_supported(g, a);
  Problem p;
  Dev& d = p.d;
  d.nd = g.num_dst();
  d.ns = g.num_src();
  d.ne = g.num_edges();
  d.heads = static_cast<int>(a.heads);
  d.dk = static_cast<int>(a.score.dk);
  d.dv = static_cast<int>(a.dv);
  d.kind = a.score.kind;
  d.softmax = a.norm == Normalization::softmax;
  d.scale = a.score.scale;
  d.slope = a.score.slope;
  d.dropout = a.dropout;
  d.keep_scale = a.dropout > 0.f ? 1.f / (1.f - a.dropout) : 1.f;
  d.keep_threshold = dropout_threshold16(a.dropout);
  d.seed = a.seed;
  const int64_t length = int64_t{kSegmentBatches} * tile_width(d);
  p.col = DeviceArray<int32_t>(g.col_idx().data(), d.ne);
  p.rows = make_segments(g.row_ptr(), length);
  const int64_t nq = d.nd * d.heads * d.dk, nk = d.ns * d.heads * d.dk;
  p.q = DeviceArray<float>(a.score.q, nq);
  p.k = DeviceArray<float>(a.score.k, nk);
  p.v = DeviceArray<float>(a.v, d.ns * d.heads * d.dv);
  p.sd = DeviceArray<float>(a.score.sd, d.nd * d.heads);
  p.ss = DeviceArray<float>(a.score.ss, d.ns * d.heads);
  p.se = DeviceArray<float>(a.score.se, d.ne * d.heads);
  p.att = DeviceArray<float>(a.score.att, static_cast<int64_t>(d.heads) * d.dk);
  p.bias = DeviceArray<float>(a.bias, d.ne * d.heads);
  if (with_transpose) {
    const Transpose& t = g.transpose();
    p.row_idx = DeviceArray<int32_t>(t.row_idx.data(), d.ne);
    std::vector<int64_t> edges(static_cast<size_t>(d.ne));
    const TransposeEdges te = g.transpose_edges();
    for (size_t n = 0; n < edges.size(); ++n) edges[n] = te[n];
    p.t_edge = DeviceArray<int64_t>(edges.data(), d.ne);
    p.cols = make_segments(t.col_ptr, length);
  }
  d.col = p.col.get();
  d.row_idx = p.row_idx.get();
  d.t_edge = p.t_edge.get();
  d.q = p.q.get();
  d.k = p.k.get();
  d.v = p.v.get();
  d.sd = p.sd.get();
  d.ss = p.ss.get();
  d.se = p.se.get();
  d.att = p.att.get();
  d.bias = p.bias.get();
  return p;
}

// The forward on the device: out [nd, H, dv] and lse [nd, H] (softmax), with `partial`
// (forward_partial_size floats) for split rows. Asynchronous.
int64_t forward_partial_size(const Problem& p) {
  return std::max<int64_t>(1, p.rows.slots * p.d.heads * (2 + p.d.dv));
}

void launch_forward(const Problem& p, float* out, float* lse, float* partial) {
  const Dev& d = p.d;
  visit_shape(d, [&](auto g, auto vpl, auto kind) {
    constexpr int G = decltype(g)::value;
    constexpr int V = decltype(vpl)::value;
    if (p.rows.count > 0)
      forward_kernel<G, V, decltype(kind)::value>
          <<<blocks_for(p.rows.count * d.heads, G), kBlockThreads>>>(d, p.rows.segments(), out, lse, partial);
    check(cudaGetLastError(), "forward kernel launch");
    if (p.rows.splits > 0)
      forward_merge_kernel<G, V>
          <<<blocks_for(p.rows.splits * d.heads, G), kBlockThreads>>>(d, p.rows.split(), partial, out, lse);
    check(cudaGetLastError(), "forward merge kernel launch");
  });
}

void launch_alpha(const Problem& p, const float* lse, float* alpha) {
  const Dev& d = p.d;
  visit_shape(d, [&](auto g, auto vpl, auto kind) {
    constexpr int G = decltype(g)::value;
    if (p.rows.count > 0)
      alpha_kernel<G, decltype(vpl)::value, decltype(kind)::value>
          <<<blocks_for(p.rows.count * d.heads, G), kBlockThreads>>>(d, p.rows.segments(), lse, alpha);
    check(cudaGetLastError(), "alpha kernel launch");
  });
}

// Device-side gradients of one backward, and its scratch.
struct DeviceGrads {
  DeviceArray<float> dq, dk, dv, dsd, dss, dbias, dse, datt, datt_rows, datt_src, datt_dst, a_src, a_dst,
      partial, dst_partial, src_partial;
  DeviceArray<EdgeRecord> rec;
};

bool vector_score(const Dev& d) {
  return d.kind == EdgeScore::vector_leaky || d.kind == EdgeScore::vector_tanh;
}

// Allocates what launch_backward writes. `want` says which optional gradients the caller takes
// (host pointers, used as flags here); fold_att_* are uploaded.
DeviceGrads allocate_grads(const Problem& p, const BackwardBuffers& want) {
  const Dev& d = p.d;
  DeviceGrads gr;
  gr.rec = DeviceArray<EdgeRecord>(d.ne * d.heads);
  gr.dv = DeviceArray<float>(d.ns * d.heads * d.dv);  // the source pass writes it in any case
  if (d.kind == EdgeScore::additive) {
    gr.dsd = DeviceArray<float>(d.nd * d.heads);
    gr.dss = DeviceArray<float>(d.ns * d.heads);
    if (want.dse) gr.dse = DeviceArray<float>(d.ne * d.heads);
  } else {
    gr.dq = DeviceArray<float>(d.nd * d.heads * d.dk);
    gr.dk = DeviceArray<float>(d.ns * d.heads * d.dk);
  }
  if (want.dbias) gr.dbias = DeviceArray<float>(d.ne * d.heads);
  int64_t partial = 0;
  if (vector_score(d)) {
    gr.datt_rows = DeviceArray<float>(d.nd * d.heads * d.dk);
    gr.datt = DeviceArray<float>(static_cast<int64_t>(d.heads) * d.dk);
    partial = column_chunks(d.nd) * d.heads * d.dk;
  }
  if (want.fold_att_src) {
    const int64_t width = static_cast<int64_t>(d.heads) * d.dv;
    gr.a_src = DeviceArray<float>(want.fold_att_src, width);
    gr.a_dst = DeviceArray<float>(want.fold_att_dst, width);
    gr.datt_src = DeviceArray<float>(width);
    gr.datt_dst = DeviceArray<float>(width);
    partial = std::max(partial, column_chunks(std::max(d.nd, d.ns)) * width);
  }
  gr.partial = DeviceArray<float>(std::max<int64_t>(partial, 1));
  gr.dst_partial = DeviceArray<float>(std::max<int64_t>(1, p.rows.slots * d.heads * (1 + 2 * d.dk)));
  gr.src_partial = DeviceArray<float>(std::max<int64_t>(1, p.cols.slots * d.heads * (1 + d.dv + d.dk)));
  return gr;
}

// The backward on the device into `gr` (allocate_grads): dout, lse and the per-head output out
// (softmax) are device pointers. Asynchronous: nothing is allocated or copied.
void launch_backward(const Problem& p, const float* dout, const float* lse, const float* out,
                     DeviceGrads& gr) {
  const Dev& d = p.d;
  BackwardDev b{dout,        lse,          out,          gr.rec.get(),   gr.dq.get(),  gr.dk.get(),
                gr.dv.get(), gr.dsd.get(), gr.dss.get(), gr.dbias.get(), gr.dse.get(), gr.datt_rows.get()};
  visit_shape(d, [&](auto g, auto vpl, auto kind) {
    constexpr int G = decltype(g)::value;
    constexpr int V = decltype(vpl)::value;
    constexpr EdgeScore K = decltype(kind)::value;
    if (p.rows.count > 0)
      backward_dst_kernel<G, V, K><<<blocks_for(p.rows.count * d.heads, G), kBlockThreads>>>(
          d, p.rows.segments(), b, gr.dst_partial.get());
    check(cudaGetLastError(), "backward destination kernel launch");
    if (p.rows.splits > 0)
      backward_dst_merge_kernel<G, V, K><<<blocks_for(p.rows.splits * d.heads, G), kBlockThreads>>>(
          d, p.rows.split(), gr.dst_partial.get(), b);
    check(cudaGetLastError(), "backward destination merge kernel launch");
    if (p.cols.count > 0)
      backward_src_kernel<G, V, K><<<blocks_for(p.cols.count * d.heads, G), kBlockThreads>>>(
          d, p.cols.segments(), b, gr.src_partial.get());
    check(cudaGetLastError(), "backward source kernel launch");
    if (p.cols.splits > 0)
      backward_src_merge_kernel<G, V, K><<<blocks_for(p.cols.splits * d.heads, G), kBlockThreads>>>(
          d, p.cols.split(), gr.src_partial.get(), b);
    check(cudaGetLastError(), "backward source merge kernel launch");
  });
  if (vector_score(d))
    column_sums(d.nd, static_cast<int64_t>(d.heads) * d.dk, gr.datt_rows.get(), nullptr, 1, gr.partial.get(),
                gr.datt.get());
  if (gr.a_src.get()) {
    const int64_t width = static_cast<int64_t>(d.heads) * d.dv;
    // d att_src = sum_j dss_j v_j, d att_dst = sum_{j < nd} dsd_j v_j: before dv changes (the
    // kernels run in stream order, so the sums complete before the fold).
    column_sums(d.ns, width, d.v, gr.dss.get(), d.dv, gr.partial.get(), gr.datt_src.get());
    column_sums(d.nd, width, d.v, gr.dsd.get(), d.dv, gr.partial.get(), gr.datt_dst.get());
    if (d.ns > 0) {
      const int64_t n = d.ns * width;
      fold_node_terms_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(
          d.nd, d.ns, d.heads, d.dv, gr.dss.get(), gr.dsd.get(), gr.a_src.get(), gr.a_dst.get(), gr.dv.get());
      check(cudaGetLastError(), "fold kernel launch");
    }
  }
}

}  // namespace

void cuda_forward(const Graph& g, const KernelArgs& a, const ForwardBuffers& out) {
  Problem p = upload(g, a, /*with_transpose=*/false);
  const Dev& d = p.d;
  DeviceArray<float> o(d.nd * d.heads * d.dv), lse(d.nd * d.heads), alpha(out.alpha ? d.ne * d.heads : 0),
      partial(forward_partial_size(p));
  launch_forward(p, o.get(), lse.get(), partial.get());
  if (out.alpha) launch_alpha(p, lse.get(), alpha.get());
  check(cudaDeviceSynchronize(), "forward");
  o.download(out.out);
  if (d.softmax) lse.download(out.lse);
  alpha.download(out.alpha);
}

void cuda_backward(const Graph& g, const KernelArgs& a, const BackwardInputs& in,
                   const BackwardBuffers& grads) {
  Problem p = upload(g, a, /*with_transpose=*/true);
  const Dev& d = p.d;
  DeviceArray<float> dout(in.dout, d.nd * d.heads * d.dv);
  DeviceArray<float> lse(d.softmax ? in.lse : nullptr, d.nd * d.heads);
  DeviceArray<float> out(d.softmax ? in.out : nullptr, d.nd * d.heads * d.dv);
  if (d.softmax && !in.out) {
    // Heads were averaged: the per-head output D_i needs is recomputed (one forward).
    out = DeviceArray<float>(d.nd * d.heads * d.dv);
    DeviceArray<float> lse_again(d.nd * d.heads), partial(forward_partial_size(p));
    launch_forward(p, out.get(), lse_again.get(), partial.get());
    check(cudaDeviceSynchronize(), "backward (forward recomputed)");
  }
  DeviceGrads gr = allocate_grads(p, grads);
  launch_backward(p, dout.get(), lse.get(), out.get(), gr);
  check(cudaDeviceSynchronize(), "backward");
  gr.dq.download_add(grads.dq);
  gr.dk.download_add(grads.dk);
  gr.dv.download_add(grads.dv);
  gr.dsd.download_add(grads.dsd);
  gr.dss.download_add(grads.dss);
  gr.dbias.download_add(grads.dbias);
  gr.dse.download_add(grads.dse);
  gr.datt.download_add(grads.datt);
  gr.datt_src.download_add(grads.datt_src);
  gr.datt_dst.download_add(grads.datt_dst);
}

CudaAttentionTiming cuda_time_attention(const Graph& g, const KernelArgs& a, const float* dout_host,
                                        int repetitions) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  auto elapsed = [&] {
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0.f;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return static_cast<double>(ms);
  };
  CudaAttentionTiming t;
  size_t free_before = 0, free_after = 0, total = 0;
  check(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");
  check(cudaEventRecord(start), "cudaEventRecord");
  Problem p = upload(g, a, /*with_transpose=*/true);
  check(cudaEventRecord(stop), "cudaEventRecord");
  t.upload_ms = elapsed();
  const Dev& d = p.d;
  DeviceArray<float> o(d.nd * d.heads * d.dv), lse(d.nd * d.heads), partial(forward_partial_size(p));
  DeviceArray<float> dout(dout_host, d.nd * d.heads * d.dv);
  std::vector<double> fwd, bwd;
  DeviceGrads gr = allocate_grads(p, BackwardBuffers{});
  for (int r = 0; r < repetitions + 1; ++r) {  // the first of each is a warm-up
    check(cudaEventRecord(start), "cudaEventRecord");
    launch_forward(p, o.get(), lse.get(), partial.get());
    check(cudaEventRecord(stop), "cudaEventRecord");
    const double f = elapsed();
    check(cudaEventRecord(start), "cudaEventRecord");
    launch_backward(p, dout.get(), lse.get(), o.get(), gr);
    check(cudaEventRecord(stop), "cudaEventRecord");
    const double b = elapsed();
    if (r > 0) {
      fwd.push_back(f);
      bwd.push_back(b);
    } else {
      check(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
      t.device_bytes = static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after);
    }
  }
  auto median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x.empty() ? 0.0 : x[x.size() / 2];
  };
  t.forward_ms = median(fwd);
  t.backward_ms = median(bwd);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

}  // namespace edgeattn::kernels

namespace edgeattn {

bool cuda_built() { return true; }

std::optional<CudaDevice> cuda_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky error for later callers
    return std::nullopt;
  }
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return CudaDevice{prop.name, prop.major, prop.minor, static_cast<int64_t>(prop.totalGlobalMem),
                    prop.multiProcessorCount};
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
  }
  return count == 0 ? "no CUDA device found" : "a CUDA device is present";
}

}  // namespace edgeattn
