// sites_lib.cpp — distinct call sites for test_callsite.cpp, in a shared
// library of their own so the unwinder sees them as the caller's frames
// (the test executable itself links the shim statically and is skipped).
#include "sites_lib.h"

#include <thread>

extern "C" {

__attribute__((noinline)) void *sequential_fill_site(Capture capture) {
    void *site = capture();
    asm volatile("" ::: "memory"); // keep the call from becoming a tail call
    return site;
}

__attribute__((noinline)) void *scatter_add_site(Capture capture) {
    void *site = capture();
    asm volatile("" ::: "memory");
    return site;
}

__attribute__((noinline)) void *deep_site(Capture capture, int depth) {
    void *site = depth == 0 ? capture() : deep_site(capture, depth - 1);
    asm volatile("" ::: "memory");
    return site;
}

__attribute__((noinline)) void *thread_site(Capture capture) {
    void *site = nullptr;
    std::thread t([&] { site = sequential_fill_site(capture); });
    t.join();
    return site;
}
}
