// The CUDA backend's device query: whether this edgeattn was built with CUDA (-DEDGEATTN_CUDA=ON
// where nvcc is found) and which GPU the attention kernels would run on.
//
// Graph attention runs on the GPU with AttentionConfig::path = AttentionPath::cuda
// (kernels/attention.hpp): the same operands, scores and results as the CPU paths, to float
// rounding. The operands stay in host memory; each call uploads what it reads and downloads what
// it writes. Without CUDA, or without a GPU, that path raises DeviceError and the CPU paths run
// as always.
//
// Example:
//   if (auto gpu = edgeattn::cuda_device()) {
//     std::cout << "attention on " << gpu->name << "\n";
//     cfg.path = edgeattn::AttentionPath::cuda;
//   }
//   auto fwd = edgeattn::attention_forward(graph, inputs, cfg);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace edgeattn {

/// The GPU the CUDA path runs on (the current CUDA device).
struct CudaDevice {
  std::string name;
  int compute_major = 0, compute_minor = 0;  ///< compute capability, e.g. 9.0 for Hopper
  int64_t memory_bytes = 0;
  int multiprocessors = 0;
};

/// Longest head (key or value features per head) the CUDA kernels take; longer heads raise
/// InvalidArgument naming it.
inline constexpr int64_t kCudaMaxHeadDim = 256;

/// True when this edgeattn was compiled with the CUDA backend.
bool cuda_built();
/// The device AttentionPath::cuda would use, or nullopt: built without CUDA, no driver, no GPU.
std::optional<CudaDevice> cuda_device();
/// Why cuda_device() is empty, in words (the CUDA runtime's message, or "built without CUDA").
std::string cuda_unavailable_reason();

}  // namespace edgeattn
