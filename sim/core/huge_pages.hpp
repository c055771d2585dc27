// SPDX-License-Identifier: MIT
// Backing large, freshly allocated arrays with transparent huge pages.
#pragma once

#include <cstddef>

namespace dtsim {

// Asks the kernel to back [data, data + bytes) with 2 MiB pages where the system allows it
// on request (transparent_hugepage = madvise). Call it before the memory is first written:
// filling a 188 MB dataset then takes about 90 page faults instead of 46,000, which on a
// virtual machine is most of a run's start-up. Only whole huge pages inside the range are
// advised; a no-op where unsupported. Never changes contents or results.
void advise_huge_pages(void* data, std::size_t bytes);

} // namespace dtsim
