// front_state.h — the state the small path reads on every call: the
// threshold and the bounds of the arena (the one reserved address range
// every large region lives in, engine/registry/arena.h). Defined in the
// front (front_state.cpp, libspillway.so); the engine reads and writes the
// same variables by name (SPW_SHARED, exported by front/exports.map).
//
// Invariants:
//  * g_large_threshold is SIZE_MAX, or a threshold the front was given
//    before the engine started (front/engine_loader.h), until the engine's
//    start-up has finished: every allocation before that (and during it,
//    from the config parser, the logger or the dynamic loader) takes the
//    small path, so start-up cannot recurse into itself.
//  * owns(p) is a single subtraction and comparison on two globals: free()
//    pays nothing else to tell a region from a mimalloc pointer, and needs
//    no lock. g_size is 0 until the engine reserves the arena, so owns() is
//    false for every pointer until then. g_base is written once; g_size
//    changes only under the engine's large lock (arena.h says how).
#pragma once

#include "shared_symbol.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spillway {

extern SPW_SHARED size_t g_large_threshold;

namespace arena {

extern SPW_SHARED uintptr_t g_base;
extern SPW_SHARED std::atomic<uintptr_t> g_size;

inline bool owns(const void *p) {
    return (uintptr_t)p - g_base < g_size.load(std::memory_order_relaxed);
}

} // namespace arena
} // namespace spillway
