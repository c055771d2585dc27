// SPDX-License-Identifier: MIT
#include "sim/core/huge_pages.hpp"

#include <cstdint>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace dtsim {

void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (last > first)
    // Advice only: a kernel without THP refuses it and the memory works as before.
    (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

} // namespace dtsim
