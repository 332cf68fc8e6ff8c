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
// Forward: one pass over the row's edges with an online softmax (Milakov & Gimelshein 2018):
// running max m, sum l, and acc rescaled when m grows; out = acc / l, lse = m + log l.
//
// Backward, atomics-free and so deterministic run to run (the CPU paths' property):
//   destination pass, per (i, h): D_i = <dO_i, O_i> (from the forward's output, or one sweep
//     sum_e alpha~_e <dO_i, v_j> when heads were averaged); then per edge the kept weight w~_e
//     and the score gradient ds_e = alpha_e (keep_e <dO_i, v_j> - D_i) (relu: [s > 0] keep_e
//     <dO_i, v_j>), stored per edge and head ([E, H] pairs), with dq_i, dsd_i, dbias_e, dse_e
//     and the per-row part of d att summed here;
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
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/kernels/cuda.hpp"
#include "kernels/attention_backend.hpp"

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
  const int64_t* row_ptr = nullptr;  // [nd + 1]
  const int32_t* col = nullptr;      // [ne]
  const int64_t* col_ptr = nullptr;  // transpose: [ns + 1]
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

// The edge's score s (bias included) and, for additive, its activation input z.
template <int G, int VPL, EdgeScore K>
__device__ __forceinline__ float edge_score(const Dev& d, const Tile<G>& tile, int lane, int64_t i, int64_t j,
                                            int64_t e, int h, const Lanes<G, VPL>& q, const Lanes<G, VPL>& a,
                                            float& z) {
  float s = 0.f;
  if constexpr (K == EdgeScore::additive) {
    z = d.sd[i * d.heads + h] + d.ss[j * d.heads + h];
    if (d.se) z += d.se[e * d.heads + h];
    s = leaky(z, d.slope);
  } else {
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
    s = tile_sum(tile, part);
    if constexpr (K == EdgeScore::dot) s *= d.scale;
  }
  if (d.bias) s += d.bias[e * d.heads + h];
  return s;
}

template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256) forward_kernel(Dev d, float* out, float* lse, float* alpha) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const int64_t pair = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (pair >= d.nd * d.heads) return;  // uniform over the tile
  const int64_t i = pair / d.heads;
  const int h = static_cast<int>(pair % d.heads), lane = static_cast<int>(tile.thread_rank());
  Lanes<G, VPL> q, a, acc;
  if constexpr (K != EdgeScore::additive) q.load(d.q + (i * d.heads + h) * d.dk, d.dk, lane);
  if constexpr (K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh)
    a.load(d.att + h * d.dk, d.dk, lane);
  acc.fill(0.f);
  // -FLT_MAX, not -inf: an edge whose score is -inf then weighs 0 instead of making a NaN.
  float m = -FLT_MAX, l = 0.f, z = 0.f;
  const int64_t e0 = d.row_ptr[i], e1 = d.row_ptr[i + 1];
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t j = d.col[e];
    const float s = edge_score<G, VPL, K>(d, tile, lane, i, j, e, h, q, a, z);
    const float kf = keep_factor(d, i, j, h);
    float w;
    if (d.softmax) {
      const float mn = fmaxf(m, s);
      const float c = expf(m - mn);
      const float p = expf(s - mn);
      l = l * c + p;
      m = mn;
#pragma unroll
      for (int t = 0; t < VPL; ++t) acc.x[t] *= c;
      w = p * kf;
    } else {
      w = fmaxf(s, 0.f) * kf;
    }
    const float* vj = d.v + (j * d.heads + h) * d.dv;
#pragma unroll
    for (int t = 0; t < VPL; ++t) {
      const int c = lane + G * t;
      if (c < d.dv) acc.x[t] += w * vj[c];
    }
  }
  float row_lse = -INFINITY;
  if (d.softmax) {
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int t = 0; t < VPL; ++t) acc.x[t] *= inv;
    if (l > 0.f) row_lse = m + logf(l);
    if (lane == 0) lse[i * d.heads + h] = row_lse;
  }
  acc.store(out + (i * d.heads + h) * d.dv, d.dv, lane);
  if (alpha) {  // the normalised weights before dropout
    for (int64_t e = e0; e < e1; ++e) {
      const float s = edge_score<G, VPL, K>(d, tile, lane, i, d.col[e], e, h, q, a, z);
      if (lane == 0) alpha[e * d.heads + h] = d.softmax ? expf(s - row_lse) : fmaxf(s, 0.f);
    }
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
  const float* out = nullptr;   // [nd, H, dv] or null
  EdgeRecord* rec = nullptr;    // [ne, H]
  float *dq = nullptr, *dk = nullptr, *dv = nullptr, *dsd = nullptr, *dss = nullptr, *dbias = nullptr,
        *dse = nullptr;
  float* datt_rows = nullptr;  // [nd, H, dk]: each destination's part of d att
};

template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256) backward_dst_kernel(Dev d, BackwardDev b) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const int64_t pair = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (pair >= d.nd * d.heads) return;
  const int64_t i = pair / d.heads;
  const int h = static_cast<int>(pair % d.heads), lane = static_cast<int>(tile.thread_rank());
  constexpr bool kVector = K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh;
  Lanes<G, VPL> q, a, g, dq, datt;
  if constexpr (K != EdgeScore::additive) q.load(d.q + (i * d.heads + h) * d.dk, d.dk, lane);
  if constexpr (kVector) a.load(d.att + h * d.dk, d.dk, lane);
  g.load(b.dout + (i * d.heads + h) * d.dv, d.dv, lane);
  dq.fill(0.f);
  datt.fill(0.f);
  const int64_t e0 = d.row_ptr[i], e1 = d.row_ptr[i + 1];
  const float row_lse = d.softmax ? b.lse[i * d.heads + h] : 0.f;
  float z = 0.f;
  // <dO_i, v_j> over the head.
  auto dot_value = [&](int64_t j) {
    const float* vj = d.v + (j * d.heads + h) * d.dv;
    float part = 0.f;
#pragma unroll
    for (int t = 0; t < VPL; ++t) {
      const int c = lane + G * t;
      if (c < d.dv) part += g.x[t] * vj[c];
    }
    return tile_sum(tile, part);
  };
  float D = 0.f;
  if (d.softmax) {
    if (b.out) {
      Lanes<G, VPL> o;
      o.load(b.out + (i * d.heads + h) * d.dv, d.dv, lane);
      float part = 0.f;
#pragma unroll
      for (int t = 0; t < VPL; ++t) part += g.x[t] * o.x[t];
      D = tile_sum(tile, part);
    } else {
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = d.col[e];
        const float s = edge_score<G, VPL, K>(d, tile, lane, i, j, e, h, q, a, z);
        D += expf(s - row_lse) * keep_factor(d, i, j, h) * dot_value(j);
      }
    }
  }
  float dsd = 0.f;
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t j = d.col[e];
    const float s = edge_score<G, VPL, K>(d, tile, lane, i, j, e, h, q, a, z);
    const float kf = keep_factor(d, i, j, h);
    const float t_v = dot_value(j);
    float w, ds;
    if (d.softmax) {
      const float alpha = expf(s - row_lse);
      w = alpha * kf;
      ds = alpha * (kf * t_v - D);
    } else {
      w = fmaxf(s, 0.f) * kf;
      ds = s > 0.f ? kf * t_v : 0.f;
    }
    float rec_ds = ds;
    if constexpr (K == EdgeScore::additive) {
      rec_ds = ds * (z > 0.f ? 1.f : d.slope);
      dsd += rec_ds;
    } else {
      const float* kj = d.k + (j * d.heads + h) * d.dk;
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
    if (lane == 0) {
      b.rec[e * d.heads + h] = EdgeRecord{w, rec_ds};
      if (b.dbias) b.dbias[e * d.heads + h] = ds;
      if constexpr (K == EdgeScore::additive)
        if (b.dse) b.dse[e * d.heads + h] = rec_ds;
    }
  }
  if constexpr (K == EdgeScore::additive) {
    if (lane == 0 && b.dsd) b.dsd[i * d.heads + h] = dsd;
  } else {
    if (b.dq) dq.store(b.dq + (i * d.heads + h) * d.dk, d.dk, lane);
    if constexpr (kVector) datt.store(b.datt_rows + (i * d.heads + h) * d.dk, d.dk, lane);
  }
}

template <int G, int VPL, EdgeScore K>
__global__ void __launch_bounds__(256) backward_src_kernel(Dev d, BackwardDev b) {
  const Tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const int64_t pair = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (pair >= d.ns * d.heads) return;
  const int64_t j = pair / d.heads;
  const int h = static_cast<int>(pair % d.heads), lane = static_cast<int>(tile.thread_rank());
  constexpr bool kVector = K == EdgeScore::vector_leaky || K == EdgeScore::vector_tanh;
  Lanes<G, VPL> kj, a, dv, dk;
  if constexpr (kVector) {
    kj.load(d.k + (j * d.heads + h) * d.dk, d.dk, lane);
    a.load(d.att + h * d.dk, d.dk, lane);
  }
  dv.fill(0.f);
  dk.fill(0.f);
  float dss = 0.f;
  for (int64_t p = d.col_ptr[j]; p < d.col_ptr[j + 1]; ++p) {
    const int64_t i = d.row_idx[p], e = d.t_edge[p];
    const EdgeRecord r = b.rec[e * d.heads + h];
    const float* gi = b.dout + (i * d.heads + h) * d.dv;
#pragma unroll
    for (int t = 0; t < VPL; ++t) {
      const int c = lane + G * t;
      if (c < d.dv) dv.x[t] += r.w * gi[c];
    }
    if constexpr (K == EdgeScore::additive) {
      dss += r.ds;
    } else {
      const float* qi = d.q + (i * d.heads + h) * d.dk;
#pragma unroll
      for (int t = 0; t < VPL; ++t) {
        const int c = lane + G * t;
        if (c < d.dk) {
          if constexpr (K == EdgeScore::dot) {
            dk.x[t] += r.ds * d.scale * qi[c];
          } else if constexpr (K == EdgeScore::vector_leaky) {
            dk.x[t] += r.ds * a.x[t] * (qi[c] + kj.x[t] > 0.f ? 1.f : d.slope);
          } else {
            const float th = tanhf(qi[c] + kj.x[t]);
            dk.x[t] += r.ds * a.x[t] * (1.f - th * th);
          }
        }
      }
    }
  }
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
  return static_cast<unsigned>((pairs + per_block - 1) / per_block);
}

// Calls f(std::integral_constant<int, G>, std::integral_constant<int, VPL>, kind constant) for the
// problem's shape: G the power of two covering the longest head (at most 32), VPL its registers.
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

// Everything one call keeps on the device: the graph (and its transpose for the backward) and
// the operands.
struct Problem {
  Dev d;
  DeviceArray<int64_t> row_ptr, col_ptr, t_edge;
  DeviceArray<int32_t> col, row_idx;
  DeviceArray<float> q, k, v, sd, ss, se, att, bias;
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
  p.row_ptr = DeviceArray<int64_t>(g.row_ptr().data(), d.nd + 1);
  p.col = DeviceArray<int32_t>(g.col_idx().data(), d.ne);
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
    p.col_ptr = DeviceArray<int64_t>(t.col_ptr.data(), d.ns + 1);
    p.row_idx = DeviceArray<int32_t>(t.row_idx.data(), d.ne);
    std::vector<int64_t> edges(static_cast<size_t>(d.ne));
    const TransposeEdges te = g.transpose_edges();
    for (size_t n = 0; n < edges.size(); ++n) edges[n] = te[n];
    p.t_edge = DeviceArray<int64_t>(edges.data(), d.ne);
  }
  d.row_ptr = p.row_ptr.get();
  d.col = p.col.get();
  d.col_ptr = p.col_ptr.get();
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

void launch_forward(const Dev& d, float* out, float* lse, float* alpha) {
  if (d.nd == 0) return;
  visit_shape(d, [&](auto g, auto vpl, auto kind) {
    constexpr int G = decltype(g)::value;
    forward_kernel<G, decltype(vpl)::value, decltype(kind)::value>
        <<<blocks_for(d.nd * d.heads, G), kBlockThreads>>>(d, out, lse, alpha);
  });
  check(cudaGetLastError(), "forward kernel launch");
}

// Device-side gradients of one backward, and its scratch.
struct DeviceGrads {
  DeviceArray<float> dq, dk, dv, dsd, dss, dbias, dse, datt, datt_rows, datt_src, datt_dst, a_src, a_dst,
      partial;
  DeviceArray<EdgeRecord> rec;
};

bool vector_score(const Dev& d) {
  return d.kind == EdgeScore::vector_leaky || d.kind == EdgeScore::vector_tanh;
}

// Allocates what launch_backward writes. `want` says which optional gradients the caller takes
// (host pointers, used as flags here); fold_att_* are uploaded.
DeviceGrads allocate_grads(const Dev& d, const BackwardBuffers& want) {
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
  return gr;
}

// The backward on the device into `gr` (allocate_grads): dout, lse and out (or null) are device
// pointers. Asynchronous: nothing is allocated or copied.
void launch_backward(const Dev& d, const float* dout, const float* lse, const float* out, DeviceGrads& gr) {
  if (gr.datt_rows.get()) gr.datt_rows.zero();
  BackwardDev b{dout,        lse,          out,          gr.rec.get(),   gr.dq.get(),  gr.dk.get(),
                gr.dv.get(), gr.dsd.get(), gr.dss.get(), gr.dbias.get(), gr.dse.get(), gr.datt_rows.get()};
  visit_shape(d, [&](auto g, auto vpl, auto kind) {
    constexpr int G = decltype(g)::value;
    constexpr int V = decltype(vpl)::value;
    constexpr EdgeScore K = decltype(kind)::value;
    if (d.nd > 0) backward_dst_kernel<G, V, K><<<blocks_for(d.nd * d.heads, G), kBlockThreads>>>(d, b);
    check(cudaGetLastError(), "backward destination kernel launch");
    if (d.ns > 0) backward_src_kernel<G, V, K><<<blocks_for(d.ns * d.heads, G), kBlockThreads>>>(d, b);
    check(cudaGetLastError(), "backward source kernel launch");
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
  DeviceArray<float> o(d.nd * d.heads * d.dv), lse(d.softmax ? d.nd * d.heads : 0),
      alpha(out.alpha ? d.ne * d.heads : 0);
  launch_forward(d, o.get(), lse.get(), alpha.get());
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
  DeviceArray<float> out(in.out, d.nd * d.heads * d.dv);
  DeviceGrads gr = allocate_grads(d, grads);
  launch_backward(d, dout.get(), lse.get(), out.get(), gr);
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
  check(cudaEventRecord(start), "cudaEventRecord");
  Problem p = upload(g, a, /*with_transpose=*/true);
  check(cudaEventRecord(stop), "cudaEventRecord");
  t.upload_ms = elapsed();
  const Dev& d = p.d;
  DeviceArray<float> o(d.nd * d.heads * d.dv), lse(d.softmax ? d.nd * d.heads : 0);
  DeviceArray<float> dout(dout_host, d.nd * d.heads * d.dv);
  std::vector<double> fwd, bwd;
  DeviceGrads gr = allocate_grads(d, BackwardBuffers{});
  for (int r = 0; r < repetitions + 1; ++r) {  // the first of each is a warm-up
    check(cudaEventRecord(start), "cudaEventRecord");
    launch_forward(d, o.get(), lse.get(), nullptr);
    check(cudaEventRecord(stop), "cudaEventRecord");
    const double f = elapsed();
    check(cudaEventRecord(start), "cudaEventRecord");
    launch_backward(d, dout.get(), lse.get(), o.get(), gr);
    check(cudaEventRecord(stop), "cudaEventRecord");
    const double b = elapsed();
    if (r > 0) {
      fwd.push_back(f);
      bwd.push_back(b);
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
