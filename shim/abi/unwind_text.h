// unwind_text.h — where libunwind's code lies, so the front can tell the
// pipe2 calls libunwind makes from the program's (front/unwind_pipe.cpp).
// Defined in the front; written once by the engine when it loads libunwind
// (engine/sites/unwind_lazy.cpp), before libunwind's first call.
//
// Invariant: both are 0 until then, and then the bounds of libunwind's
// mapped image: a caller inside [begin, end) is libunwind.
#pragma once

#include "shared_symbol.h"

#include <atomic>
#include <cstdint>

namespace spillway {

extern SPW_SHARED std::atomic<uintptr_t> g_unwind_text_begin;
extern SPW_SHARED std::atomic<uintptr_t> g_unwind_text_end;

} // namespace spillway
