// surface.h — the allocation paths preload.cpp's entry points share with
// their siblings (cxx_new.cpp), so operator new takes exactly the path of
// malloc and aligned operator new exactly the path of aligned_alloc.
//
// Invariant: it returns nullptr with errno set on failure and never throw;
// the caller decides between std::bad_alloc, nullptr and an error code.
#pragma once
#include <cstddef>

namespace spillway {

// Any size with a power-of-two alignment (a larger request, or one
// mimalloc must not serve, goes to large_allocate, large.h).
void *alloc_aligned(size_t align, size_t size);

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

} // namespace spillway
