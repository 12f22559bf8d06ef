// small_alloc.h — a block from mimalloc, for a request the large path does
// not take: the front's answer when no engine routes, and the large path's
// own fallback when the arena cannot hold a region (large.h).
//
// Invariant: header-only and libc/mimalloc only, so the front (which must
// not depend on libstdc++, engine_api.h) and the engine share one copy.
#pragma once

#include "surface.h"

#include <cstddef>
#include <mimalloc.h>

namespace spillway {

// mimalloc 2.0 refuses alignments above this: such a request goes to the
// large path whatever its size (large_allocate decides what it gets).
constexpr size_t kSmallAlignMax = size_t(1) << 20;

inline void *small_alloc(size_t size, size_t align, bool zero) {
    size = aligned_request(size); // 16-aligned, as glibc's (surface.h)
    if (align) {
        if (align < kMinAlign) align = kMinAlign;
        return zero ? mi_zalloc_aligned(size, align) : mi_malloc_aligned(size, align);
    }
    return zero ? mi_zalloc(size) : mi_malloc(size);
}

} // namespace spillway
