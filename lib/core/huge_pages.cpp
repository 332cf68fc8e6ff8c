#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace edgeattn::detail {

void advise_huge_pages(const void* p, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  if (p == nullptr || end <= begin) return;
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint: failure is harmless
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace edgeattn::detail
