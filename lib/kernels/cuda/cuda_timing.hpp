// The CUDA path's kernels timed with their operands resident on the GPU (CUDA events), for
// bench/kernels/cuda_attention_bench.cpp: what a training step that keeps its tensors on the
// device would pay, apart from the per-call copies of the host-memory API (attention_backend.hpp).
#pragma once

#include <cstdint>

#include "kernels/attention_backend.hpp"

namespace edgeattn::kernels {

/// upload_ms is the one-off copy of graph, transpose and operands; forward_ms and backward_ms the
/// medians of `repetitions` calls after a warm-up; device_bytes the GPU memory held for forward and
/// backward together (graph, transpose, operands, outputs, gradients, per-edge records), from
/// cudaMemGetInfo.
struct CudaAttentionTiming {
  double upload_ms = 0, forward_ms = 0, backward_ms = 0;
  int64_t device_bytes = 0;
};

/// dout: the output gradient [num_dst, H, dv] (host). DeviceError without a GPU or CUDA build.
CudaAttentionTiming cuda_time_attention(const Graph& g, const KernelArgs& a, const float* dout,
                                        int repetitions);

}  // namespace edgeattn::kernels
