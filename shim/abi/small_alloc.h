// small_alloc.h — a block from mimalloc, for a request the large path does
// not take: the front's answer when no engine routes, and the large path's
// own fallback when the arena cannot hold a region (engine/large/large.h);
// and the rounding every small request gets, in either library.
//
// Invariant: header-only and libc/mimalloc only, so the front (which must
// not depend on libstdc++, engine_api.h) and the engine share one copy.
#pragma once

#include <cstddef>
#include <mimalloc.h>

// The small path's calls into mimalloc load their target from the GOT,
// bound when the library loads, rather than through a PLT stub. The front
// is built without -fno-plt otherwise, so its ~50 other imports (the
// config reader's, the loader's, the log's) bind at their first call, not
// in every process at exec (shim/meson.build).
extern "C" {
__attribute__((noplt)) void *mi_malloc(size_t size) noexcept;
__attribute__((noplt)) void *mi_zalloc(size_t size) noexcept;
__attribute__((noplt)) void *mi_malloc_aligned(size_t size, size_t alignment) noexcept;
__attribute__((noplt)) void *mi_zalloc_aligned(size_t size, size_t alignment) noexcept;
__attribute__((noplt)) void *mi_realloc(void *p, size_t newsize) noexcept;
__attribute__((noplt)) void mi_free(void *p) noexcept;
__attribute__((noplt)) size_t mi_usable_size(const void *p) noexcept;
__attribute__((noplt)) size_t mi_good_size(size_t size) noexcept;
}

namespace spillway {

// glibc aligns every block to 16 bytes (alignof(max_align_t) on x86-64)
// whatever its size, and programs rely on it (tags in a pointer's low four
// bits, 16-byte loads of small structs); glibc's tst-mallocalign1 checks it.
// mimalloc serves 0-8 bytes from an 8-byte class (8-aligned), and a build
// without MI_ALIGN2W has 24-, 40- and 56-byte classes too; its classes from
// 64 bytes on are multiples of 16. So a request below 64 bytes is rounded
// up to a multiple of 16 (0 to 16) before mimalloc sees it.
constexpr size_t kMinAlign = 16;
inline size_t aligned_request(size_t size) {
    return size < 64 ? (size + (kMinAlign - 1) + (size == 0)) & ~(kMinAlign - 1) : size;
}

// mimalloc 2.0 refuses alignments above this: such a request goes to the
// large path whatever its size (large_allocate decides what it gets).
constexpr size_t kSmallAlignMax = size_t(1) << 20;

inline void *small_alloc(size_t size, size_t align, bool zero) {
    size = aligned_request(size); // 16-aligned, as glibc's (above)
    if (align) {
        if (align < kMinAlign) align = kMinAlign;
        return zero ? mi_zalloc_aligned(size, align) : mi_malloc_aligned(size, align);
    }
    return zero ? mi_zalloc(size) : mi_malloc(size);
}

} // namespace spillway
