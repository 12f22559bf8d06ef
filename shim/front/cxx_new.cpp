// cxx_new.cpp — C++ operator new and delete, all twenty forms libstdc++
// exports (plain, array, nothrow, sized, aligned and their combinations).
//
// Why here: libmimalloc.so.2, which this library depends on, exports its own
// operator new/delete. In a C program (python3) libstdc++ is loaded after
// it, so without these definitions every C++ extension's `new` bound to
// mimalloc and never saw the threshold.
//
// Invariants:
//  * operator new takes exactly malloc's path (size check, then mimalloc or
//    the large path); aligned new takes aligned_alloc's path, so the
//    alignment is honoured by both.
//  * Failure is exactly the standard's: the throwing forms call the current
//    std::new_handler until it returns memory, throwing std::bad_alloc when
//    there is no handler; the nothrow forms run the same loop and return
//    nullptr where the throwing form would throw.
//  * Every delete form takes free's path (one comparison picks the owner);
//    the size and alignment a caller passes are not needed to free.
#include "engine_calls.h"
#include "front_state.h"
#include "small_alloc.h"
#include "surface.h"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <dlfcn.h>
#include <mimalloc.h>
#include <new>
#include <unistd.h>

#define SPW_LIKELY(x) __builtin_expect(!!(x), 1)
#define SPW_EXPORT __attribute__((visibility("default")))

using namespace spillway;

namespace {

inline void *try_new(size_t size) {
    if (SPW_LIKELY(size < g_large_threshold)) return mi_malloc(aligned_request(size));
    return engine_allocate(size, 0, false);
}

inline void *try_new_aligned(size_t size, std::align_val_t align) {
    return alloc_aligned(static_cast<size_t>(align), size);
}

inline void release(void *p) noexcept {
    if (SPW_LIKELY(!arena::owns(p))) mi_free(p);
    else engine_free(p);
}

// libstdc++ owns the new_handler and std::bad_alloc. It is loaded in every
// process that calls operator new, but this library does not depend on it
// (loading it costs more than all the rest of start-up, engine_api.h), so
// the failure path finds them by name in the copy that is loaded.
void *libstdcxx_symbol(const char *name) {
    void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return nullptr;
    void *sym = dlsym(lib, name);
    dlclose(lib); // only the reference RTLD_NOLOAD added
    return sym;
}

std::new_handler current_new_handler() {
    auto get = reinterpret_cast<std::new_handler (*)()>(libstdcxx_symbol("_ZSt15get_new_handlerv"));
    return get ? get() : nullptr;
}

[[noreturn]] void throw_bad_alloc() {
    // std::__throw_bad_alloc(): throws std::bad_alloc from libstdc++, through
    // these frames (they have unwind tables and nothing to clean up).
    if (auto thrower = reinterpret_cast<void (*)()>(libstdcxx_symbol("_ZSt17__throw_bad_allocv")))
        thrower();
    static const char kLine[] = "spillway: operator new is out of memory and no C++ runtime is "
                                "loaded to throw std::bad_alloc; aborting: raise ulimit -v or the memory limit, or allocate less\n";
    ssize_t ignored = write(2, kLine, sizeof kLine - 1);
    (void)ignored;
    abort();
}

// The standard's loop: ask the new_handler for memory until it gives up
// (no handler: std::bad_alloc). Kept out of line: the fast path never
// reaches it.
template <class Try>
__attribute__((noinline)) void *new_handler_loop(Try &&again) {
    for (;;) {
        std::new_handler handler = current_new_handler();
        if (!handler) throw_bad_alloc();
        handler(); // may free memory, install another handler, or throw
        if (void *p = again()) return p;
    }
}

// nothrow with a handler installed: libstdc++'s own nothrow operator new
// calls the throwing ::operator new (ours) and returns nullptr for whatever
// it throws, which is the standard's definition; this library has no catch
// (it is built without exceptions, so that it needs no libstdc++).
__attribute__((noinline)) void *new_nothrow_slow(size_t size) noexcept {
    if (!current_new_handler()) return nullptr;
    using NothrowNew = void *(*)(size_t, const std::nothrow_t &) noexcept;
    auto fn = reinterpret_cast<NothrowNew>(libstdcxx_symbol("_ZnwmRKSt9nothrow_t"));
    const std::nothrow_t tag{};
    return fn ? fn(size, tag) : nullptr;
}

__attribute__((noinline)) void *new_aligned_nothrow_slow(size_t size, std::align_val_t align) noexcept {
    if (!current_new_handler()) return nullptr;
    using NothrowNew = void *(*)(size_t, std::align_val_t, const std::nothrow_t &) noexcept;
    auto fn = reinterpret_cast<NothrowNew>(libstdcxx_symbol("_ZnwmSt11align_val_tRKSt9nothrow_t"));
    const std::nothrow_t tag{};
    return fn ? fn(size, align, tag) : nullptr;
}

inline void *new_throwing(size_t size) {
    if (void *p = try_new(size); SPW_LIKELY(p != nullptr)) return p;
    return new_handler_loop([size] { return try_new(size); });
}

inline void *new_nothrow(size_t size) noexcept {
    if (void *p = try_new(size); SPW_LIKELY(p != nullptr)) return p;
    return new_nothrow_slow(size);
}

inline void *new_aligned_throwing(size_t size, std::align_val_t align) {
    if (void *p = try_new_aligned(size, align); SPW_LIKELY(p != nullptr)) return p;
    return new_handler_loop([size, align] { return try_new_aligned(size, align); });
}

inline void *new_aligned_nothrow(size_t size, std::align_val_t align) noexcept {
    if (void *p = try_new_aligned(size, align); SPW_LIKELY(p != nullptr)) return p;
    return new_aligned_nothrow_slow(size, align);
}

} // namespace

// --- new ---
SPW_EXPORT void *operator new(size_t size) { return new_throwing(size); }
SPW_EXPORT void *operator new[](size_t size) { return new_throwing(size); }
SPW_EXPORT void *operator new(size_t size, const std::nothrow_t &) noexcept {
    return new_nothrow(size);
}
SPW_EXPORT void *operator new[](size_t size, const std::nothrow_t &) noexcept {
    return new_nothrow(size);
}
SPW_EXPORT void *operator new(size_t size, std::align_val_t align) {
    return new_aligned_throwing(size, align);
}
SPW_EXPORT void *operator new[](size_t size, std::align_val_t align) {
    return new_aligned_throwing(size, align);
}
SPW_EXPORT void *operator new(size_t size, std::align_val_t align, const std::nothrow_t &) noexcept {
    return new_aligned_nothrow(size, align);
}
SPW_EXPORT void *operator new[](size_t size, std::align_val_t align,
                                const std::nothrow_t &) noexcept {
    return new_aligned_nothrow(size, align);
}

// --- delete ---
SPW_EXPORT void operator delete(void *p) noexcept { release(p); }
SPW_EXPORT void operator delete[](void *p) noexcept { release(p); }
SPW_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept { release(p); }
SPW_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept { release(p); }
SPW_EXPORT void operator delete(void *p, size_t) noexcept { release(p); }
SPW_EXPORT void operator delete[](void *p, size_t) noexcept { release(p); }
SPW_EXPORT void operator delete(void *p, std::align_val_t) noexcept { release(p); }
SPW_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { release(p); }
SPW_EXPORT void operator delete(void *p, size_t, std::align_val_t) noexcept { release(p); }
SPW_EXPORT void operator delete[](void *p, size_t, std::align_val_t) noexcept { release(p); }
SPW_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept {
    release(p);
}
SPW_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept {
    release(p);
}
