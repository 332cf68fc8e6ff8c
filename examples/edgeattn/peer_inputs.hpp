// The peer-benchmark suite's inputs (bench/peers/): one .npz file per workload, written by
// `edgeattn bench write-inputs` and read by every library (edgeattn's `bench attention --input`,
// `bench layer`, `bench graphblas`, `train --dataset FILE.npz`, and the Python peers), so all of
// them see the same graph and features.
//
// The file is data::write_npz's layout (data/npz_writer.hpp: adj_* CSR by destination,
// attr_matrix float32 [N, F], labels int64 [N], idx_train/idx_val/idx_test int64) plus, when
// F is a multiple of --heads H (d = F / H):
//   att_src, att_dst  float32 [H, d]   the additive (GAT) score vectors: with x = attr_matrix viewed
//                                      [N, H, d], score_src[j, h] = sum_k x[j, h, k] att_src[h, k],
//                                      score_dst[i, h] = sum_k x[i, h, k] att_dst[h, k],
//                                      e_ij = LeakyReLU_0.2(score_dst[i] + score_src[j])
//
// Values (all pure functions of --seed, identical for any thread count):
//   attr_matrix  standard normal (Box-Muller over Philox blocks), stream 11
//   att_src/dst  normal / sqrt(d), streams 12 / 13
//   labels       uniform in [0, C), stream 14
//   split        nodes ordered by a Philox key (stream 15): the first min(20 C, 0.6 N) are train,
//                the next min(500, rest / 2) val, the next min(1000, rest) test (each sorted)
// Cora (--graph cora) keeps its real features (row-normalised), labels and public split.
#pragma once

#include <cstdint>
#include <string>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/data/dataset.hpp"

namespace edgeattn::cli {

/// [shape] standard normal values scaled by `scale`, a pure function of (seed, stream, index).
Tensor gaussian_tensor(Shape shape, uint64_t seed, uint32_t stream, float scale = 1.f);

/// One input of the suite as loaded by the benchmark commands.
struct PeerInput {
  std::string path;
  data::Dataset dataset;    ///< dense features (sparse ones are densified)
  Tensor att_src, att_dst;  ///< [H, d] when the file has them; absent otherwise
};

/// Loads an input written by `bench write-inputs` (or any npz load_npz reads). Throws IoError /
/// ParseError naming the file.
PeerInput load_peer_input(const std::string& path);

/// The features viewed [N, heads, F / heads]; throws InvalidArgument naming the file when F is not
/// heads * head_dim.
ConstView features_as_heads(const PeerInput& input, int64_t heads, int64_t head_dim);

/// The tool's version ("0.1.0"), as the JSON reports carry it.
const char* tool_version();

}  // namespace edgeattn::cli
