// The CUDA backend's entry points in a build without CUDA (EDGEATTN_CUDA off or no nvcc): the
// device query reports no GPU and AttentionPath::cuda raises DeviceError saying how to get one.
// With CUDA, cuda_attention.cu defines them all and this file is empty.
#include "edgeattn/core/error.hpp"
#include "edgeattn/kernels/cuda.hpp"
#include "kernels/attention_backend.hpp"
#include "kernels/cuda/cuda_timing.hpp"

#if !EDGEATTN_HAVE_CUDA

namespace edgeattn {

namespace {
constexpr const char* kNotBuilt =
    "this edgeattn was built without CUDA (reconfigure with -DEDGEATTN_CUDA=ON where the CUDA toolkit's "
    "nvcc is installed)";

[[noreturn]] void not_built() { raise<DeviceError>("attention (path=cuda): ", kNotBuilt); }
}  // namespace

bool cuda_built() { return false; }
std::optional<CudaDevice> cuda_device() { return std::nullopt; }
std::string cuda_unavailable_reason() { return kNotBuilt; }

namespace kernels {

void cuda_forward(const Graph&, const KernelArgs&, const ForwardBuffers&) { not_built(); }
void cuda_backward(const Graph&, const KernelArgs&, const BackwardInputs&, const BackwardBuffers&) {
  not_built();
}
CudaAttentionTiming cuda_time_attention(const Graph&, const KernelArgs&, const float*, int) { not_built(); }

}  // namespace kernels
}  // namespace edgeattn

#endif
