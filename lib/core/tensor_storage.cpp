#include "core/tensor_storage.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/huge_pages.hpp"
#include "core/physical_memory.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/tensor.hpp"

namespace edgeattn {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kCacheMinBytes = size_t{64} << 10;  // smaller blocks: malloc's bins serve them well
constexpr size_t kMinDefaultLimitBytes = size_t{2} << 30;
constexpr size_t kReuseSlack = 4;  // a cached block up to 1/kReuseSlack larger serves a request
// Storage in use + cached may reach 1 + kHeadroomNum / kHeadroomDen times its peak (evict_for_locked).
constexpr size_t kHeadroomNum = 3, kHeadroomDen = 4;

std::align_val_t alignment_for(size_t capacity) {
  return std::align_val_t{capacity >= kHugePageBytes ? kHugePageBytes : 64};
}

// Rounds up to a multiple of max(4 KiB, 2^floor(log2 bytes) / 8): at most 12.5% larger.
size_t size_class(size_t bytes) {
  if (bytes < kCacheMinBytes) return bytes;
  const size_t granule = std::max<size_t>(4096, std::bit_floor(bytes) / 8);
  return (bytes + granule - 1) / granule * granule;
}

// A third of physical memory, at least 2 GiB: a training step frees and re-allocates its whole
// working set every epoch, and every block the cache cannot keep is page-faulted (and zeroed by
// the kernel) again. On a 1M-node, 10M-edge GAT epoch a 2 GiB limit left 9.0 s per epoch, 8 GB
// 5.4 s, at the same peak RSS (blocks are reused, not added: the steps repeat their shapes).
[[maybe_unused]] size_t default_limit() {  // unused under ASan, where the cache starts off
  return std::max(kMinDefaultLimitBytes,
                  static_cast<size_t>(detail::physical_memory_bytes(/*unknown=*/0)) / 3);
}

size_t initial_limit() {
#ifdef EDGEATTN_ASAN
  size_t limit = 0;
#else
  size_t limit = default_limit();
#endif
  if (const char* env = std::getenv("EDGEATTN_TENSOR_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') limit = static_cast<size_t>(mb) << 20;
  }
  return limit;
}

float* allocate_block(size_t capacity) {
  auto* p = static_cast<float*>(::operator new[](capacity, alignment_for(capacity)));
  detail::advise_huge_pages(p, capacity);
  return p;
}

void free_block(float* p, size_t capacity) { ::operator delete[](p, alignment_for(capacity)); }

class StorageCache {
 public:
  float* acquire(size_t bytes, size_t& capacity) {
    capacity = size_class(bytes);
    if (capacity >= kCacheMinBytes) {
      std::lock_guard lock(mutex_);
      auto it = free_.find(capacity);
      if (it == free_.end()) {
        // Shapes that change a little from step to step (sampled mini-batches: every batch
        // reaches another number of nodes) fall into neighbouring classes. A cached block at most
        // a quarter larger serves them (its real capacity is reported), where a miss would free
        // a cached block and page-fault a new one, zeroed by the kernel, every step.
        const auto larger = free_.upper_bound(capacity);
        if (larger != free_.end() && larger->first <= capacity + capacity / kReuseSlack) it = larger;
      }
      if (it != free_.end()) {
        capacity = it->first;
        float* p = it->second.back();
        it->second.pop_back();
        if (it->second.empty()) free_.erase(it);
        cached_bytes_ -= capacity;
        ++stats_.hits;
        count_in_use(capacity);
        return p;
      }
      ++stats_.misses;
      evict_for_locked(capacity);
    }
    float* p = allocate_block(capacity);  // may throw: then nothing is counted
    count_in_use(capacity);
    return p;
  }

  void release(float* p, size_t capacity) noexcept {
    in_use_.fetch_sub(capacity, std::memory_order_relaxed);
    if (capacity >= kCacheMinBytes) {
      std::lock_guard lock(mutex_);
      if (cached_bytes_ + capacity <= limit_) {
        try {
          auto [it, inserted] = free_.try_emplace(capacity);
          try {
            it->second.push_back(p);
          } catch (...) {
            if (inserted) free_.erase(it);
            throw;
          }
          cached_bytes_ += capacity;
          return;
        } catch (...) {  // out of memory for the list itself: free the block instead
        }
      }
    }
    free_block(p, capacity);
  }

  void set_limit(size_t bytes) {
    std::lock_guard lock(mutex_);
    limit_ = bytes;
    trim_locked();
  }

  void release_all() {
    std::lock_guard lock(mutex_);
    const size_t keep = limit_;
    limit_ = 0;
    trim_locked();
    limit_ = keep;
    live_high_water_ = in_use_.load(std::memory_order_relaxed);  // the headroom starts over
  }

  TensorCacheStats stats() const {
    std::lock_guard lock(mutex_);
    TensorCacheStats s = stats_;
    s.cached_bytes = cached_bytes_;
    s.limit_bytes = limit_;
    s.in_use_bytes = in_use_.load(std::memory_order_relaxed);
    s.peak_in_use_bytes = peak_in_use_.load(std::memory_order_relaxed);
    return s;
  }

  void reset_peak() {
    peak_in_use_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }

 private:
  // Storage in use (acquired, not yet released) and its high-water mark; relaxed atomics: they
  // count, they do not synchronise.
  void count_in_use(size_t capacity) {
    const size_t now = in_use_.fetch_add(capacity, std::memory_order_relaxed) + capacity;
    size_t peak = peak_in_use_.load(std::memory_order_relaxed);
    while (now > peak && !peak_in_use_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  void trim_locked() {
    while (cached_bytes_ > limit_ && !free_.empty()) evict_locked(free_.begin());
  }

  // Frees one cached block of the class `it` points to.
  void evict_locked(std::map<size_t, std::vector<float*>>::iterator it) {
    const size_t capacity = it->first;
    free_block(it->second.back(), capacity);
    it->second.pop_back();
    cached_bytes_ -= capacity;
    if (it->second.empty()) free_.erase(it);
  }

  // Before a block of `capacity` bytes comes from the system: frees cached blocks (of other
  // classes) as far as needed to keep the footprint (storage in use + cached + the new block)
  // within three quarters above the high-water mark of storage in use - the smallest block that frees
  // enough, else the largest ones - so the process does not grow while the cache holds memory
  // nobody asks for: when the model's shapes change (an evaluation pass, a layer with other
  // widths) the old classes make room. The headroom keeps the blocks of neighbouring classes that
  // a sampled mini-batch's next step asks for again (every batch reaches another number of
  // nodes). Freeing them on every miss page-faulted (and the kernel zeroed) nearly three quarters
  // of a sampled GAT step's tensors again; a quarter's headroom still missed three blocks a step
  // (60 + 30 + 30 MiB: 69 misses and ~1240 huge-page faults an epoch on the products-like SBM,
  // 4-5% of the step's CPU time in clear_page_erms); half left no miss after the first epoch
  // while the step gathered its input rows into a 95 MB copy. Once the first projection read them
  // in place (NodeInput::selected_rows) the peak in use fell 448 -> 352 MiB, the headroom with it,
  // but not the spread of the batches' sizes: the same three blocks (30 + 60 + 30 MiB) missed
  // every step again. Three quarters leaves none, at the same peak RSS (869 MB; the blocks are
  // reused, not added), and the epoch 4% shorter. Full-batch steps repeat their shapes and miss
  // only in their first epoch: their peak is unchanged.
  void evict_for_locked(size_t capacity) {
    const size_t in_use = in_use_.load(std::memory_order_relaxed);
    live_high_water_ = std::max(live_high_water_, in_use + capacity);
    const size_t allowed = live_high_water_ + live_high_water_ / kHeadroomDen * kHeadroomNum;
    const size_t footprint = in_use + cached_bytes_ + capacity;
    if (footprint <= allowed) return;
    size_t needed = footprint - allowed;
    while (needed > 0 && !free_.empty()) {
      auto it = free_.lower_bound(needed);
      if (it != free_.end()) {
        evict_locked(it);
        return;
      }
      it = std::prev(free_.end());
      needed -= std::min(needed, it->first);
      evict_locked(it);
    }
  }

  mutable std::mutex mutex_;
  std::map<size_t, std::vector<float*>> free_;  // size class -> free blocks (never empty vectors)
  size_t cached_bytes_ = 0;
  // Most storage in use seen at a miss (or at release_all): what evict_for_locked's headroom is
  // measured from. Not reset by reset_tensor_peak.
  size_t live_high_water_ = 0;
  size_t limit_ = initial_limit();
  TensorCacheStats stats_;
  std::atomic<size_t> in_use_{0}, peak_in_use_{0};
};

// Never destroyed: tensors in static objects may be freed after any static destructor ran.
StorageCache& cache() {
  static StorageCache* c = new StorageCache;
  return *c;
}

}  // namespace

namespace detail {

float* acquire_storage(size_t bytes, size_t& capacity) { return cache().acquire(bytes, capacity); }

void release_storage(float* block, size_t capacity) noexcept { cache().release(block, capacity); }

}  // namespace detail

TensorCacheStats tensor_cache_stats() { return cache().stats(); }

void set_tensor_cache_limit(size_t bytes) { cache().set_limit(bytes); }

void release_tensor_cache() { cache().release_all(); }

void reset_tensor_peak() { cache().reset_peak(); }

}  // namespace edgeattn
