// Internal: software prefetch that the optimiser cannot delete.
//
// __builtin_prefetch has no side effect GCC can see. A helper (say, a lambda called per edge)
// that does nothing but prefetch is therefore judged const, and GCC 12 deleted its calls: the
// attention backward's row pass once ran with no prefetch at all and took 2x its time. The empty
// volatile asm that "uses" the address keeps every prefetch, at no cost (no instruction, no
// memory clobber).
//
//   prefetch_read<1>(row);    // into L2 (locality 1), for a row gathered a few steps later
//   prefetch_write(slot);     // for a random slot updated a few steps later
#pragma once

namespace edgeattn::detail {

template <int kLocality>
inline void prefetch_read(const void* p) {
  __builtin_prefetch(p, 0, kLocality);
  asm volatile("" : : "r"(p));
}

inline void prefetch_write(const void* p) {
  __builtin_prefetch(p, 1);
  asm volatile("" : : "r"(p));
}

}  // namespace edgeattn::detail
