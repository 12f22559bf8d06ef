// copy_forward.cpp — memcpy, memmove and mempcpy, so that a large copy
// touching the arena reads and writes its pages from the front.
//
// Why (abi/copy_order.h has the measurements): glibc copies between two
// addresses that alias modulo 4096 backwards, and two regions always alias
// so; a backwards copy out of a spill file faults every page alone. Such a
// copy is done here in increasing order, so every source page is read in
// order, which the kernel's read-ahead and the prefetch worker serve like
// any other stream: from 16 MiB by a loop of non-temporal stores (faster
// than glibc's routine in RAM too, below its own streaming threshold), and
// below that in page-sized pieces by glibc, unless both sides are wholly
// in memory (then glibc's faster routine, whatever its order).
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
#include <sys/mman.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

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

// Whether every page of [p, p+n) is in memory now: a copy that faults
// nothing keeps glibc's faster routine whatever its order. mincore answers
// for file and anonymous pages alike; a failure counts as "not".
bool all_resident(const void *p, size_t n) {
    constexpr uintptr_t kMask = spillway::kCopyPage - 1;
    uintptr_t at = (uintptr_t)p & ~kMask, end = ((uintptr_t)p + n + kMask) & ~kMask;
    unsigned char vec[512];
    while (at < end) {
        size_t pages = (end - at) / spillway::kCopyPage;
        if (pages > sizeof vec) pages = sizeof vec;
        if (mincore((void *)at, pages * spillway::kCopyPage, vec) != 0) return false;
        for (size_t i = 0; i < pages; i++)
            if (!(vec[i] & 1)) return false;
        at += pages * spillway::kCopyPage;
    }
    return true;
}

// Front to back with non-temporal stores (x86-64: SSE2 is its baseline);
// the fence makes them visible before memcpy returns, as glibc's own
// streaming copy does.
void stream_in_order(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    g_memcpy(d, s, head, kUnbounded);
    d += head;
    s += head;
    n -= head;
    for (size_t blocks = n / 64; blocks; blocks--, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s));
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 16));
        __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 32));
        __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 48));
        _mm_stream_si128(reinterpret_cast<__m128i *>(d), a);
        _mm_stream_si128(reinterpret_cast<__m128i *>(d + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i *>(d + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i *>(d + 48), e);
    }
    _mm_sfence();
    g_memcpy(d, s, n & 63, kUnbounded);
#else
    copy_in_order(dst, src, n);
#endif
}

// Out of line, so that a small copy's path saves no register: one
// comparison, then a jump into glibc.
__attribute__((noinline)) void *large_copy(void *dst, const void *src, size_t n, CopyFn glibc) {
    if (!goes_forward(dst, src, n)) return glibc(dst, src, n, kUnbounded);
    if (n >= spillway::kStreamCopyMin) {
        stream_in_order(dst, src, n);
        return dst;
    }
    if (all_resident(src, n) && all_resident(dst, n)) return glibc(dst, src, n, kUnbounded);
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
