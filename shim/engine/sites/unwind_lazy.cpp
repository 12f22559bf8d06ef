// unwind_lazy.cpp — see unwind_lazy.h. The stubs jump (never call) so that
// unw_getcontext, which records its caller's registers like setjmp, sees
// callsite.cpp's frame exactly as if it were linked directly.
#include "sites/unwind_lazy.h"

#include "fd_policy.h"
#include "log.h"

#include <atomic>
#include <dlfcn.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

// The functions callsite.cpp uses, by their linker names (libunwind.h maps
// unw_step to _ULx86_64_step and so on), and where each stub jumps.
#define SPW_UNWIND_FUNCTIONS(X)                                                              \
    X(unw_backtrace)                                                                       \
    X(_ULx86_64_get_proc_name)                                                             \
    X(_ULx86_64_get_reg)                                                                   \
    X(_ULx86_64_init_local)                                                                \
    X(_ULx86_64_set_caching_policy)                                                        \
    X(_ULx86_64_step)                                                                      \
    X(_Ux86_64_getcontext)

#if !defined(__x86_64__)
#error "unwind_lazy.cpp: write the jump stubs for this architecture (see x86_64)"
#endif

extern "C" {
#define SPW_TARGET(name) __attribute__((visibility("hidden"), used)) void *spillway_unw_##name;
SPW_UNWIND_FUNCTIONS(SPW_TARGET)
#undef SPW_TARGET
// libunwind's own variable, read by value after loading.
__attribute__((visibility("hidden"))) unw_addr_space_t _ULx86_64_local_addr_space;
}

#define SPW_STUB(name)                                                                     \
    asm(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ", @function\n" #name   \
        ":\n    jmp *spillway_unw_" #name "(%rip)\n.size " #name ", .-" #name "\n");
SPW_UNWIND_FUNCTIONS(SPW_STUB)
#undef SPW_STUB

namespace spillway {

namespace {
enum State { kUnloaded, kLoading, kReady, kFailed };
std::atomic<int> g_state{kUnloaded};

bool load() {
    const char *soname = "libunwind.so.8";
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        SPW_LOG(warn, "cannot load %s (%s): large allocations are placed without call sites "
                      "(install libunwind8), so rules and learning are off", soname, why ? why : "unknown error");
        return false;
    }
    bool complete = true;
#define SPW_RESOLVE(name)                                                                  \
    if (!(spillway_unw_##name = dlsym(lib, #name))) complete = false;
    SPW_UNWIND_FUNCTIONS(SPW_RESOLVE)
#undef SPW_RESOLVE
    auto *space = (unw_addr_space_t *)dlsym(lib, "_ULx86_64_local_addr_space");
    if (!complete || !space) {
        SPW_LOG(warn, "%s lacks functions spillway needs (a libunwind.so.8 other than Debian's libunwind8?): large "
                      "allocations are placed without call sites, so rules and learning are off; "
                      "install libunwind8 (apt-get install libunwind8) and remove the other "
                      "libunwind.so.8 from the library path", soname);
        return false;
    }
    _ULx86_64_local_addr_space = *space;
    // libunwind makes, at its first use, the pipe it checks memory with (a
    // byte of memory written into it and read back) and keeps it: made now,
    // with every low descriptor taken, it lands high (fd_policy.h).
    LowFdsTaken low;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) == 0) unw_init_local(&cursor, &context);
    return true;
}
} // namespace

bool unwind_ready() {
    int state = g_state.load(std::memory_order_acquire);
    if (state == kReady) return true;
    if (state != kUnloaded) return false;
    if (!g_state.compare_exchange_strong(state, kLoading, std::memory_order_acq_rel)) return false;
    g_state.store(load() ? kReady : kFailed, std::memory_order_release);
    return g_state.load(std::memory_order_relaxed) == kReady;
}

} // namespace spillway
