// surface.h — the allocation paths preload.cpp's entry points share with
// their siblings (cxx_new.cpp), so operator new takes exactly the path of
// malloc and aligned operator new exactly the path of aligned_alloc. The
// rounding of small requests (aligned_request) is abi/small_alloc.h's.
//
// Invariant: it returns nullptr with errno set on failure and never throw;
// the caller decides between std::bad_alloc, nullptr and an error code.
#pragma once
#include <cstddef>

namespace spillway {

// Any size with a power-of-two alignment (a larger request, or one
// mimalloc must not serve, goes to the engine: engine_allocate,
// engine_calls.h).
void *alloc_aligned(size_t align, size_t size);

} // namespace spillway
