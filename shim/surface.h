// surface.h — the allocation paths preload.cpp's entry points share with
// their siblings (cxx_new.cpp), so operator new takes exactly the path of
// malloc and aligned operator new exactly the path of aligned_alloc.
//
// Invariant: both return nullptr with errno set on failure and never throw;
// the caller decides between std::bad_alloc, nullptr and an error code.
#pragma once
#include <cstddef>

namespace spillway {

// A request at or above the threshold (or one mimalloc must not serve).
void *alloc_large(size_t size, size_t align, bool zero);
// Any size with a power-of-two alignment.
void *alloc_aligned(size_t align, size_t size);

} // namespace spillway
