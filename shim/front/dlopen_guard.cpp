// dlopen_guard.cpp — dlopen and dlmopen without RTLD_DEEPBIND.
//
// Why: a library opened with RTLD_DEEPBIND looks symbols up in its own
// dependencies first, so its malloc/free bind to glibc's while the rest of
// the process uses ours; memory crossing the boundary is then freed by the
// wrong allocator (SIGSEGV). Clearing the flag makes the library use the
// process's allocator like every other library; one info line names who
// asked for it (the usual reason for DEEPBIND, private copies of common
// symbols, rarely matters for a job's libraries).
//
// Invariant: the real dlopen sees the original caller. glibc takes the
// caller's return address to pick the namespace and the RPATH/RUNPATH used
// for a bare name (and $ORIGIN), so the entry points are assembly stubs
// that fix the flags and then *jump* to the real function with the
// caller's return address still on the stack, never call it.
#include "log.h"

#include <atomic>
#include <dlfcn.h>
#include <link.h>

namespace {

std::atomic<void *> g_real_dlopen{nullptr};
std::atomic<void *> g_real_dlmopen{nullptr};
std::atomic<bool> g_logged{false};

void *real(std::atomic<void *> &slot, const char *name) {
    void *fn = slot.load(std::memory_order_acquire);
    if (!fn) { // racing threads find the same address
        fn = dlsym(RTLD_NEXT, name);
        slot.store(fn, std::memory_order_release);
    }
    return fn;
}

const char *module_of(void *address) {
    Dl_info info;
    if (dladdr(address, &info) && info.dli_fname && *info.dli_fname) return info.dli_fname;
    return "the main program";
}

void clear_deepbind(const char *file, int *flags, void *caller) {
    if (!(*flags & RTLD_DEEPBIND)) return;
    *flags &= ~RTLD_DEEPBIND;
    bool first = !g_logged.exchange(true, std::memory_order_relaxed);
    if (first)
        SPW_LOG(info, "%s opened %s with RTLD_DEEPBIND; spillway clears that flag so the library "
                      "shares the process's malloc (mixing two allocators would crash)",
                module_of(caller), file ? file : "the main program");
    else
        SPW_LOG(debug, "cleared RTLD_DEEPBIND for %s (asked by %s)", file ? file : "(null)",
                module_of(caller));
}

} // namespace

// Called by the stubs below: fixes *flags and returns the function to jump to.
extern "C" __attribute__((visibility("hidden"), used)) void *
spillway_dlopen_route(const char *file, int *flags, void *caller) {
    clear_deepbind(file, flags, caller);
    return real(g_real_dlopen, "dlopen");
}

extern "C" __attribute__((visibility("hidden"), used)) void *
spillway_dlmopen_route(const char *file, int *flags, void *caller) {
    clear_deepbind(file, flags, caller);
    return real(g_real_dlmopen, "dlmopen");
}

#if defined(__x86_64__)
// dlopen(file=rdi, flags=esi): save the arguments, let the route fix the
// saved flags, restore, jump. The stack is 16-byte aligned at the call.
// dlmopen(lmid=rdi, file=rsi, flags=edx): the same with three arguments.
asm(R"(
    .text
    .globl dlopen
    .type dlopen, @function
dlopen:
    .cfi_startproc
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    lea 8(%rsp), %rsi
    mov 24(%rsp), %rdx
    call spillway_dlopen_route
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size dlopen, .-dlopen

    .globl dlmopen
    .type dlmopen, @function
dlmopen:
    .cfi_startproc
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    push %rdx
    .cfi_adjust_cfa_offset 8
    mov %rsi, %rdi
    mov %rsp, %rsi
    mov 24(%rsp), %rdx
    call spillway_dlmopen_route
    pop %rdx
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size dlmopen, .-dlmopen
)");
#else
#error "dlopen_guard.cpp: write the dlopen/dlmopen stubs for this architecture (see x86_64)"
#endif
