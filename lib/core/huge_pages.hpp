// Internal: large arrays backed by transparent huge pages.
//
// A fresh page costs a fault, and the kernel clears it, on first touch. On virtual machines such as
// the 2-core Zen 4 hosts of bench/RESULTS.md each 4 KiB fault is also an exit to the hypervisor:
// building a 1M-node, 10M-edge R-MAT graph spent a third of its time there (clear_page_erms in a
// perf profile). With 2 MiB pages that cost falls 512-fold. Debian's default THP mode is
// "madvise", so a range gets huge pages only when asked with MADV_HUGEPAGE before it is touched;
// that is what these helpers do. The advice is advisory: where THP is off, or on other systems,
// nothing changes but the speed.
//
//   std::vector<int64_t> offsets = huge_page_vector<int64_t>(n + 1);    // zeroed, like vector(n)
//   auto keys = huge_page_array_for_overwrite<uint64_t>(m);              // not initialised
//   huge_page_reserve(names, expected);                                  // then push_back
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace edgeattn::detail {

/// Asks for transparent huge pages on the 2 MiB-aligned part of [p, p + bytes), if that part is
/// at least 2 MiB; otherwise does nothing. Never fails (the advice is a hint).
void advise_huge_pages(const void* p, size_t bytes) noexcept;

/// v.reserve(n), with the reserved storage advised before anything is written to it.
template <class T>
void huge_page_reserve(std::vector<T>& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

/// vector<T>(n, value), with its storage advised before the fill touches it.
template <class T>
std::vector<T> huge_page_vector(size_t n, const T& value = T{}) {
  std::vector<T> v;
  huge_page_reserve(v, n);
  v.assign(n, value);
  return v;
}

/// make_unique_for_overwrite<T[]>(n) (elements not initialised), advised before first touch.
template <class T>
std::unique_ptr<T[]> huge_page_array_for_overwrite(size_t n) {
  auto p = std::make_unique_for_overwrite<T[]>(n);
  advise_huge_pages(p.get(), n * sizeof(T));
  return p;
}

}  // namespace edgeattn::detail
