// Storage blocks of Tensors, recycled through a size-class cache.
//
// A training step allocates and frees the same few dozen tensors every epoch. glibc serves large
// blocks with mmap (or trims the heap after they are freed), so without recycling every step
// page-faults its whole working set back in and the kernel zero-fills it: on Cora that was ~4000
// page faults per epoch, a third of the step's CPU time. Blocks of at least kCacheMinBytes are
// therefore rounded up to a size class (at most 1/8 larger) and, when freed, kept for the next
// request of the same class, or of a class at most a quarter smaller (mini-batch shapes vary),
// up to a byte limit (tensor.hpp: set_tensor_cache_limit).
//
// Blocks of 2 MiB or more are 2 MiB-aligned and advised onto transparent huge pages (random row
// gathers on 4 KiB pages are TLB misses). Under AddressSanitizer the cache is off by default, so
// a use after free is still reported.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define EDGEATTN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EDGEATTN_ASAN 1
#endif
#endif

namespace edgeattn::detail {

/// A block of at least `bytes` bytes (64-byte aligned, 2 MiB-aligned from 2 MiB). `capacity`
/// receives the block's real size, to pass back to release_storage.
float* acquire_storage(size_t bytes, size_t& capacity);

/// Under AddressSanitizer, Tensor::uninitialized fills its storage with NaN: an element a kernel
/// forgets to write then shows up in the tests instead of reading as a plausible zero.
#ifdef EDGEATTN_ASAN
inline constexpr bool kPoisonUninitialized = true;
#else
inline constexpr bool kPoisonUninitialized = false;
#endif

/// Returns a block from acquire_storage (its capacity as reported) to the cache or the system.
void release_storage(float* block, size_t capacity) noexcept;

}  // namespace edgeattn::detail
