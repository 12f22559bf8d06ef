// copy_forward.cpp — memcpy, memmove and mempcpy, so that a large copy
// touching the arena reads and writes its pages from the front.
//
// Why (abi/copy_order.h has the measurements): glibc copies between two
// addresses that alias modulo 4096 backwards, and two regions always alias
// so; a backwards copy out of a spill file faults every page alone. Such a
// copy is done here as page-sized pieces in increasing order, each piece by
// glibc itself: every source page is then read in order, which the kernel's
// read-ahead and the prefetch worker serve like any other stream.
//
// Invariants: every other copy is one comparison on the length and one call
// of glibc's own routine. glibc is reached through its _chk entry points,
// with an unbounded destination size (the same IFUNC-selected routines):
// no dlsym, so a copy works from the first instruction the process runs,
// and a volatile pointer keeps the compiler from folding them back into
// memcpy, which would be this file again.
#include "copy_order.h"
#include "front_state.h"

#include <cstddef>
#include <cstdint>

extern "C" {
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dst_len);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t dst_len);
void *__mempcpy_chk(void *dst, const void *src, size_t n, size_t dst_len);
}

namespace {

using CopyFn = void *(*)(void *, const void *, size_t, size_t);
CopyFn volatile g_memcpy = __memcpy_chk;
CopyFn volatile g_memmove = __memmove_chk;
CopyFn volatile g_mempcpy = __mempcpy_chk;
constexpr size_t kUnbounded = SIZE_MAX;

bool goes_forward(void *dst, const void *src, size_t n) {
    bool arena = spillway::arena::owns(dst) || spillway::arena::owns(src);
    return spillway::copy_goes_forward((uintptr_t)dst, (uintptr_t)src, n, arena);
}

// The ranges do not overlap (copy_goes_forward), so any order is correct.
void copy_in_order(void *dst, const void *src, size_t n) {
    CopyFn piece_copy = g_memcpy;
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    size_t piece = spillway::first_piece((uintptr_t)s, n);
    while (n) {
        piece_copy(d, s, piece, kUnbounded);
        d += piece;
        s += piece;
        n -= piece;
        piece = n < spillway::kCopyPage ? n : spillway::kCopyPage;
    }
}

// Out of line, so that a small copy's path saves no register: one
// comparison, then a jump into glibc.
__attribute__((noinline)) void *large_copy(void *dst, const void *src, size_t n, CopyFn glibc) {
    if (!goes_forward(dst, src, n)) return glibc(dst, src, n, kUnbounded);
    copy_in_order(dst, src, n);
    return dst;
}

} // namespace

extern "C" __attribute__((visibility("default"))) void *memcpy(void *dst, const void *src, size_t n) {
    if (__builtin_expect(n >= spillway::kForwardCopyMin, 0)) return large_copy(dst, src, n, g_memcpy);
    return g_memcpy(dst, src, n, kUnbounded);
}

extern "C" __attribute__((visibility("default"))) void *memmove(void *dst, const void *src, size_t n) {
    if (__builtin_expect(n >= spillway::kForwardCopyMin, 0)) return large_copy(dst, src, n, g_memmove);
    return g_memmove(dst, src, n, kUnbounded);
}

extern "C" __attribute__((visibility("default"))) void *mempcpy(void *dst, const void *src, size_t n) {
    if (__builtin_expect(n >= spillway::kForwardCopyMin, 0))
        return static_cast<char *>(large_copy(dst, src, n, g_memcpy)) + n;
    return g_mempcpy(dst, src, n, kUnbounded);
}
