// unwind_lazy.cpp — see unwind_lazy.h. The stubs jump (never call) so that
// unw_getcontext, which records its caller's registers like setjmp, sees
// callsite.cpp's frame exactly as if it were linked directly.
#include "sites/unwind_lazy.h"

#include "log.h"
#include "unwind_text.h"

#include <atomic>
#include <dlfcn.h>
#include <link.h>

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

// Publishes the bounds of the loaded image at load address `base` to the
// front (unwind_text.h): end first, so a front that sees begin sees both.
void publish_text(uintptr_t base) {
    struct Found {
        uintptr_t base, begin = 0, end = 0;
    } found{base};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *f = (Found *)data;
            if (info->dlpi_addr != f->base) return 0;
            for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                uintptr_t from = info->dlpi_addr + ph.p_vaddr, to = from + ph.p_memsz;
                if (!f->begin || from < f->begin) f->begin = from;
                if (to > f->end) f->end = to;
            }
            return 1;
        },
        &found);
    if (!found.begin) return;
    g_unwind_text_end.store(found.end, std::memory_order_relaxed);
    g_unwind_text_begin.store(found.begin, std::memory_order_release);
}

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
    // libunwind keeps a pipe it checks memory with (a byte of memory written
    // into it and read back), made at its first use and again whenever a
    // read from it fails: the front moves each one high (unwind_pipe.cpp).
    link_map *map = nullptr;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map) publish_text(map->l_addr);
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
