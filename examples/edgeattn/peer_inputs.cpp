#include "peer_inputs.hpp"

#include <cmath>
#include <numbers>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/data/npz.hpp"

namespace edgeattn::cli {

Tensor gaussian_tensor(Shape shape, uint64_t seed, uint32_t stream, float scale) {
  Tensor t(shape);
  float* data = t.data();
  const int64_t n = t.numel();
  // One Philox block gives two 24-bit uniforms -> two normals (Box-Muller), elements 2p and 2p+1.
  parallel_for(0, (n + 1) / 2, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const auto pair = static_cast<uint64_t>(p);
      const auto r =
          philox4x32(seed, {static_cast<uint32_t>(pair), static_cast<uint32_t>(pair >> 32), stream, 0});
      const double u1 = (static_cast<double>(r[0] >> 8) + 1.0) / 16777216.0;  // (0, 1]
      const double u2 = static_cast<double>(r[1] >> 8) / 16777216.0;          // [0, 1)
      const double radius = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      data[2 * p] = scale * static_cast<float>(radius * std::cos(angle));
      if (2 * p + 1 < n) data[2 * p + 1] = scale * static_cast<float>(radius * std::sin(angle));
    }
  });
  return t;
}

PeerInput load_peer_input(const std::string& path) {
  PeerInput in;
  in.path = path;
  const auto arrays = data::read_npz(path);
  in.dataset = data::dataset_from_npz_arrays(arrays, path);
  if (in.dataset.features.is_sparse()) in.dataset.features = data::Features(in.dataset.features.to_dense());
  const auto att = [&](const char* key) -> Tensor {
    const auto it = arrays.find(key);
    if (it == arrays.end()) return {};
    const data::NpyArray& a = it->second;
    if (a.rank() != 2) raise<ParseError>(a.name, ": expected a 2-d array [heads, head_dim]");
    const std::vector<float> v = a.to_floats();
    return Tensor({a.shape[0], a.shape[1]}, std::span<const float>(v));
  };
  in.att_src = att("att_src");
  in.att_dst = att("att_dst");
  return in;
}

ConstView features_as_heads(const PeerInput& input, int64_t heads, int64_t head_dim) {
  const data::Features& f = input.dataset.features;
  if (f.cols() != heads * head_dim)
    raise<InvalidArgument>(input.path, " has ", f.cols(), " features per node; --heads ", heads,
                           " x --head-dim ", head_dim, " = ", heads * head_dim,
                           " must equal it (q = k = v = features viewed [N, H, d])");
  return ConstView(f.dense().data(), Shape{f.rows(), heads, head_dim});
}

const char* tool_version() {
#ifdef EDGEATTN_VERSION
  return EDGEATTN_VERSION;
#else
  return "unknown";
#endif
}

}  // namespace edgeattn::cli
