// Dense float32 tensors: an owning `Tensor` and non-owning `TensorView`s.
//
// Layout is always contiguous row-major (C order); rank is at most 4. Attention tensors follow
// the naming used throughout edgeattn:
//   query  q: [num_dst, heads, head_dim]        key k: [num_src, heads, head_dim]
//   value  v: [num_src, heads, value_dim]       out  : [num_dst, heads, value_dim]
//
// Example:
//   edgeattn::Tensor q({n, heads, dim});          // zero-initialised
//   q(3, 0, 1) = 2.f;                              // element access (bounds-checked in Debug)
//   edgeattn::ConstView view = q;                  // what kernels take
//   edgeattn::check_shape("query", view, {n, heads, edgeattn::kAny});
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"

namespace edgeattn {

/// Wildcard extent for `check_shape`.
inline constexpr int64_t kAny = -1;

/// Extents of a tensor of rank 0..4.
class Shape {
 public:
  static constexpr int kMaxRank = 4;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const {
    assert(i >= 0 && i < rank_);
    return dims_[static_cast<size_t>(i)];
  }
  /// Product of extents (1 for rank 0).
  int64_t numel() const;
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  /// "[2, 8, 16]"
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i)
      if (a.dims_[static_cast<size_t>(i)] != b.dims_[static_cast<size_t>(i)]) return false;
    return true;
  }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

/// Non-owning view of contiguous row-major float data. `T` is `float` or `const float`.
template <class T>
class TensorView {
 public:
  TensorView() = default;
  TensorView(T* data, Shape shape) : data_(data), shape_(shape) {}
  /// A const view from a mutable one.
  template <class U>
  requires(std::is_const_v<T>&& std::is_same_v<std::remove_const_t<T>, U>)
      TensorView(const TensorView<U>& other)
      : data_(other.data()), shape_(other.shape()) {}

  T* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  /// True for a default-constructed view (an optional operand that was not given).
  bool empty() const { return data_ == nullptr; }
  std::span<T> span() const { return {data_, static_cast<size_t>(numel())}; }

 private:
  T* data_ = nullptr;
  Shape shape_;
};

using View = TensorView<float>;
using ConstView = TensorView<const float>;

/// Owning float32 tensor, zero-initialised, 64-byte aligned, contiguous row-major.
///
/// Storage of 64 KiB and more is recycled through a process-wide cache (see tensor_cache_stats
/// below), so the tensors a training step allocates every epoch do not page-fault back in.
/// Copies are deep; only `share_reshaped` makes two tensors share one storage block.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);
  /// A tensor whose elements are unspecified (not zero-filled): for outputs that are written in
  /// full before they are read. (Sanitizer builds fill it with NaN, so that an element left
  /// unwritten fails the tests.)
  static Tensor uninitialized(Shape shape);
  Tensor(Shape shape, float fill);
  /// Takes the values (row-major); throws ShapeError if `values.size() != shape.numel()`.
  Tensor(Shape shape, std::span<const float> values);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  /// Element count; 0 for a default-constructed (absent) tensor.
  int64_t numel() const { return data_ ? shape_.numel() : 0; }
  /// True when the tensor holds no elements (absent, or an extent is 0).
  bool empty() const { return numel() == 0; }
  /// True for a default-constructed tensor (an output that was not requested).
  bool absent() const { return data_ == nullptr; }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::span<float> span() { return {data(), static_cast<size_t>(numel())}; }
  std::span<const float> span() const { return {data(), static_cast<size_t>(numel())}; }

  View view() { return {data(), shape_}; }
  ConstView view() const { return {data(), shape_}; }
  // Note: the view of an absent tensor is an empty (absent) view.
  operator View() { return view(); }             // NOLINT(google-explicit-constructor)
  operator ConstView() const { return view(); }  // NOLINT(google-explicit-constructor)

  /// Same data, new extents with the same element count (throws ShapeError otherwise).
  Tensor reshaped(Shape shape) const&;
  Tensor reshaped(Shape shape) &&;
  /// A tensor with new extents that SHARES this tensor's storage (no copy): a write through
  /// either is seen by both, and the storage lives until both are gone. For values that are no
  /// longer written, such as the outputs recorded on an autograd tape. ShapeError when the
  /// element counts differ.
  Tensor share_reshaped(Shape shape) const;
  /// True when another tensor shares this one's storage (see share_reshaped).
  bool shares_storage() const { return data_ && data_.use_count() > 1; }

  /// A tensor over storage owned elsewhere, e.g. a memory-mapped file's elements
  /// (data/mapped_features.hpp): `storage` points at shape.numel() floats (4-byte aligned) and
  /// keeps their owner alive (an aliasing shared_ptr). No copy is made; copies of the result are
  /// deep as usual, share_reshaped shares. InvalidArgument for a null `storage`.
  ///   auto owner = std::make_shared<MyBuffer>(...);
  ///   Tensor t = Tensor::external({rows, cols}, std::shared_ptr<float[]>(owner, owner->floats()));
  static Tensor external(Shape shape, std::shared_ptr<float[]> storage);

  template <class... I>
  float& operator()(I... idx) {
    return data()[offset(static_cast<int64_t>(idx)...)];
  }
  template <class... I>
  float operator()(I... idx) const {
    return data()[offset(static_cast<int64_t>(idx)...)];
  }

  void fill(float value);

 private:
  template <class... I>
  int64_t offset(I... idx) const {
    static_assert(sizeof...(I) <= Shape::kMaxRank);
    assert(static_cast<int>(sizeof...(I)) == shape_.rank());
    const int64_t ids[] = {idx...};
    int64_t off = 0;
    for (int d = 0; d < static_cast<int>(sizeof...(I)); ++d) {
      assert(ids[d] >= 0 && ids[d] < shape_[d]);
      off = off * shape_[d] + ids[d];
    }
    return off;
  }
  void allocate();

  Shape shape_;
  std::shared_ptr<float[]> data_;
};

/// The tensor storage cache: blocks of at least 64 KiB, rounded up to a size class (at most 1/8
/// larger), are kept when freed and reused for the next tensor of that class (or of a class at
/// most a quarter smaller). A request the cache cannot serve frees cached blocks only as far as
/// needed to keep storage in use + cached within three quarters above the most storage ever in use
/// (counted from the start or the last release_tensor_cache).
struct TensorCacheStats {
  size_t cached_bytes = 0;  ///< bytes held in the cache now (free blocks)
  size_t limit_bytes = 0;   ///< most bytes the cache keeps; blocks beyond it go back to the system
  int64_t hits = 0;         ///< allocations served from the cache
  int64_t misses = 0;       ///< cacheable allocations that had to ask the system
  /// Bytes of tensor storage in use now (every size, cached or not; as allocated, i.e. rounded
  /// up to the size class), and its high-water mark since the start or reset_tensor_peak(): what
  /// a step or an evaluation needs, like torch.cuda.max_memory_allocated. Storage edgeattn does
  /// not allocate (Tensor::external, e.g. memory-mapped features) is not counted.
  size_t in_use_bytes = 0;
  size_t peak_in_use_bytes = 0;
};
/// Counters of the process-wide cache.
TensorCacheStats tensor_cache_stats();
/// Restarts TensorCacheStats::peak_in_use_bytes from the bytes in use now.
void reset_tensor_peak();
/// Sets the cache's byte limit (default a third of physical memory, at least 2 GiB, or
/// $EDGEATTN_TENSOR_CACHE_MB; 0 under
/// AddressSanitizer so use-after-free stays detectable); frees cached blocks beyond it.
void set_tensor_cache_limit(size_t bytes);
/// Frees every cached block (e.g. after training, before a memory-hungry phase), and restarts
/// the high-water mark the cache's headroom is measured from.
void release_tensor_cache();

/// Throws ShapeError unless `view` has `expected` extents (`kAny` matches any extent).
/// `what` names the operand in the message, e.g. "attention_forward: value".
void check_shape(const std::string& what, ConstView view, std::initializer_list<int64_t> expected);

/// Largest |a - b| over all elements (shapes must match).
float max_abs_diff(ConstView a, ConstView b);

/// out [ids.size(), ...] = features [N, ...] rows ids[0], ids[1], ... (any rank >= 1), copied in
/// parallel. Throws ShapeError for a rank-0 input and InvalidArgument when an id is outside
/// [0, N), naming it. (Sparse features: CsrMatrix::select_rows.)
Tensor gather_rows(ConstView features, std::span<const int64_t> ids);

}  // namespace edgeattn
