#include "edgeattn/core/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "core/prefetch.hpp"
#include "core/tensor_storage.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn {

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    raise<ShapeError>("Shape: rank ", dims.size(), " exceeds the maximum rank ", kMaxRank);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 0) raise<ShapeError>("Shape: extent ", d, " is ", dims[d], ", expected >= 0");
    dims_[d] = dims[d];
  }
  rank_ = static_cast<int>(dims.size());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank_; ++i) os << (i ? ", " : "") << dims_[static_cast<size_t>(i)];
  os << ']';
  return os.str();
}

void Tensor::allocate() {
  // A zero-element tensor still owns a (minimal) block, so its views are distinguishable from
  // absent operands: an empty graph's value tensor [0, H, D] is "given", not "missing".
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(shape_.numel(), 1)) * sizeof(float);
  size_t capacity = 0;
  float* block = detail::acquire_storage(bytes, capacity);
  // (if the control block cannot be allocated, shared_ptr calls the deleter, then throws)
  data_ = std::shared_ptr<float[]>(block, [capacity](float* p) { detail::release_storage(p, capacity); });
}

Tensor Tensor::uninitialized(Shape shape) {
  Tensor t;
  t.shape_ = shape;
  t.allocate();
  if constexpr (detail::kPoisonUninitialized) t.fill(std::numeric_limits<float>::quiet_NaN());
  return t;
}

Tensor::Tensor(Shape shape) : shape_(shape) {
  allocate();
  fill(0.f);
}

Tensor::Tensor(Shape shape, float value) : shape_(shape) {
  allocate();
  fill(value);
}

Tensor::Tensor(Shape shape, std::span<const float> values) : shape_(shape) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    raise<ShapeError>("Tensor: ", values.size(), " values given for shape ", shape.str(), " (", shape.numel(),
                      " elements)");
  allocate();
  if (!values.empty()) std::memcpy(data(), values.data(), values.size() * sizeof(float));
}

Tensor::Tensor(const Tensor& other) : shape_(other.shape_) {
  if (other.absent()) return;
  allocate();
  if (numel() > 0) std::memcpy(data(), other.data(), static_cast<size_t>(numel()) * sizeof(float));
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::fill(float value) { std::fill_n(data(), numel(), value); }

Tensor Tensor::reshaped(Shape shape) const& { return Tensor(*this).reshaped(shape); }

Tensor Tensor::reshaped(Shape shape) && {
  if (shape.numel() != numel())
    raise<ShapeError>("Tensor::reshaped: cannot view ", shape_.str(), " (", numel(), " elements) as ",
                      shape.str());
  Tensor t(std::move(*this));
  t.shape_ = shape;
  return t;
}

Tensor Tensor::share_reshaped(Shape shape) const {
  if (shape.numel() != shape_.numel())
    raise<ShapeError>("Tensor::share_reshaped: cannot view ", shape_.str(), " (", shape_.numel(),
                      " elements) as ", shape.str());
  Tensor t;
  t.shape_ = shape;
  t.data_ = data_;
  return t;
}

Tensor Tensor::external(Shape shape, std::shared_ptr<float[]> storage) {
  if (!storage) raise<InvalidArgument>("Tensor::external: the storage of a ", shape.str(), " tensor is null");
  if (reinterpret_cast<uintptr_t>(storage.get()) % alignof(float) != 0)
    raise<InvalidArgument>("Tensor::external: the storage of a ", shape.str(),
                           " tensor is not 4-byte aligned (floats cannot be read in place)");
  Tensor t;
  t.shape_ = shape;
  t.data_ = std::move(storage);
  return t;
}

void check_shape(const std::string& what, ConstView view, std::initializer_list<int64_t> expected) {
  bool ok = view.rank() == static_cast<int>(expected.size());
  if (ok) {
    int d = 0;
    for (int64_t e : expected) {
      if (e != kAny && view.dim(d) != e) ok = false;
      ++d;
    }
  }
  if (ok) return;
  std::ostringstream want;
  want << '[';
  int d = 0;
  for (int64_t e : expected) {
    want << (d++ ? ", " : "");
    if (e == kAny)
      want << '*';
    else
      want << e;
  }
  want << ']';
  raise<ShapeError>(what, " has shape ", view.empty() ? std::string("(missing)") : view.shape().str(),
                    ", expected ", want.str());
}

float max_abs_diff(ConstView a, ConstView b) {
  if (!(a.shape() == b.shape()))
    raise<ShapeError>("max_abs_diff: shapes differ: ", a.shape().str(), " vs ", b.shape().str());
  float m = 0.f;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float d = std::fabs(a.data()[i] - b.data()[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

namespace {

// Outputs from this size on are streamed (kernels/vector_math.hpp's kStreamingStoreBytes: beyond
// a last-level cache, where a plain store's read of the line is wasted).
constexpr int64_t kStreamCopyBytes = int64_t{32} << 20;

// Streaming copies go 16 bytes at a time: a 16-byte aligned output of whole 16-byte rows.
bool stream_copy_applies(const float* dst, int64_t bytes, int64_t row_floats) {
#if defined(__SSE2__)
  return bytes >= kStreamCopyBytes && reinterpret_cast<uintptr_t>(dst) % 16 == 0 && row_floats % 4 == 0;
#else
  (void)dst, (void)bytes, (void)row_floats;
  return false;
#endif
}

// dst[0, n) = src[0, n) with non-temporal stores (stream_copy_applies held).
void stream_copy(float* dst, const float* src, int64_t n) {
#if defined(__SSE2__)
  for (int64_t x = 0; x < n; x += 4) _mm_stream_ps(dst + x, _mm_loadu_ps(src + x));
#else
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
#endif
}

// Orders this thread's streaming stores before the task completes.
void stream_copy_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace

Tensor gather_rows(ConstView features, std::span<const int64_t> ids) {
  if (features.rank() < 1)
    raise<ShapeError>("gather_rows: features has shape ", features.shape().str(),
                      ", expected rank >= 1 [N, ...]");
  const int64_t n = features.dim(0);
  const auto m = static_cast<int64_t>(ids.size());
  const int64_t bad = parallel_find_first(0, m, 1 << 16, [&](int64_t k) {
    const int64_t v = ids[static_cast<size_t>(k)];
    return (v < 0) | (v >= n);
  });
  if (bad < m)
    raise<InvalidArgument>("gather_rows: ids[", bad, "] is ", ids[static_cast<size_t>(bad)],
                           ", expected in [0, N=", n, ")");
  std::vector<int64_t> dims(features.shape().dims().begin(), features.shape().dims().end());
  dims[0] = m;
  Tensor out = Tensor::uninitialized(Shape(std::span<const int64_t>(dims)));
  const int64_t width = n > 0 ? features.numel() / n : 0;
  if (width == 0 || m == 0) return out;
  const float* src = features.data();
  float* dst = out.data();
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / width);  // ~128 KiB per piece
  // The rows are read at random (a sampled batch's 237k input rows of 400 bytes from a 100 MB
  // feature matrix): each piece prefetches the lines of the row kRowsAhead rows on, up to
  // kMaxLines of them. An output beyond the last-level cache is written with streaming stores
  // (its rows are contiguous, so whole lines fill): a plain store first reads every line it
  // overwrites, a third of the traffic.
  constexpr int64_t kRowsAhead = 8, kMaxLines = 16;
  const auto row_bytes = static_cast<int64_t>(sizeof(float)) * width;
  const int64_t lines = std::min<int64_t>(kMaxLines, (row_bytes + 63) / 64);
  const bool stream = stream_copy_applies(dst, m * row_bytes, width);
  parallel_for(0, m, grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      if (k + kRowsAhead < e) {
        const auto* ahead =
            reinterpret_cast<const char*>(src + ids[static_cast<size_t>(k + kRowsAhead)] * width);
        for (int64_t l = 0; l < lines; ++l) detail::prefetch_read<3>(ahead + 64 * l);
      }
      const float* row = src + ids[static_cast<size_t>(k)] * width;
      if (stream)
        stream_copy(dst + k * width, row, width);
      else
        std::memcpy(dst + k * width, row, static_cast<size_t>(row_bytes));
    }
    if (stream) stream_copy_fence();
  });
  return out;
}

}  // namespace edgeattn
