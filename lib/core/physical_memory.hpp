// Internal: the machine's physical memory, for the checks that refuse a size before allocating it
// (a sampled hop, a model, a synthetic graph, a dataset's load) and for the tensor cache's limit.
//
//   if (bytes > 0.75 * static_cast<double>(detail::physical_memory_bytes())) raise<...>(...);
#pragma once

#include <unistd.h>

#include <cstdint>

namespace edgeattn::detail {

/// Physical memory in bytes (sysconf), or `unknown` where the system does not say.
inline uint64_t physical_memory_bytes(uint64_t unknown = uint64_t{16} << 30) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : unknown;
}

}  // namespace edgeattn::detail
