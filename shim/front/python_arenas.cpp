// python_arenas.cpp — see python_arenas.h.
#include "python_arenas.h"

#include "engine_loader.h"

#include <atomic>
#include <cstddef>
#include <dlfcn.h>

namespace spillway {

namespace {

// CPython's PyObjectArenaAllocator (Include/cpython/objimpl.h), unchanged
// since 3.4: ctx is handed back to both functions.
struct ArenaAllocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
};
using ArenaAllocatorCall = void (*)(ArenaAllocator *);

ArenaAllocator g_interpreter{}; // the interpreter's own: mmap and munmap
ArenaAllocatorCall g_set = nullptr;

enum : int { kUndecided, kZone, kInterpreter };
// Arenas are allocated and freed under the interpreter's GIL, so the
// decision is made once; atomic for a sub-interpreter's own GIL.
std::atomic<int> g_mode{kUndecided};

void *hook_alloc(void *, size_t size) {
    int mode = g_mode.load(std::memory_order_acquire);
    if (mode == kUndecided) {
        // Never started for an arena: a process that allocates nothing
        // large keeps no engine, no spill file and no descriptor for it.
        const EngineApi *api = engine_if_routing();
        if (!api) return g_interpreter.alloc(g_interpreter.ctx, size);
        mode = api->python_arenas_wanted() ? kZone : kInterpreter;
        g_mode.store(mode, std::memory_order_release);
        if (mode == kInterpreter) { // no arena of the zone exists: the interpreter's, whole
            ArenaAllocator own = g_interpreter;
            g_set(&own);
        }
    }
    if (mode == kZone)
        if (const EngineApi *api = engine_if_routing())
            if (void *p = api->python_arena_take(size)) return p;
    return g_interpreter.alloc(g_interpreter.ctx, size);
}

void hook_free(void *, void *p, size_t size) {
    if (g_mode.load(std::memory_order_acquire) == kZone)
        if (const EngineApi *api = engine_if_routing())
            if (api->python_arena_give(p, size)) return;
    g_interpreter.free(g_interpreter.ctx, p, size);
}

} // namespace

void python_arenas_hook() {
    auto get = (ArenaAllocatorCall)dlsym(RTLD_DEFAULT, "PyObject_GetArenaAllocator");
    g_set = (ArenaAllocatorCall)dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator");
    if (!get || !g_set) return;
    get(&g_interpreter);
    ArenaAllocator hook = g_interpreter;
    hook.free = hook_free;
    g_set(&hook);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    hook.alloc = hook_alloc;
    g_set(&hook);
}

} // namespace spillway
