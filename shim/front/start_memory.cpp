// start_memory.cpp — see start_memory.h.
#include "start_memory.h"

#include <cstdlib>

namespace spillway {

namespace {
// 64 KiB: the variables, a config's text and the cache file of eight small
// configs. Only the pages written are ever faulted in.
constexpr size_t kAreaBytes = 64 * 1024;
// In .lbss, which the linker places after all of .bss: the front's small
// variables (the arena's bounds read by every free, the command line) then
// share the page the loader already wrote when it zeroed .bss's start,
// with this area's first bytes, instead of sitting past 64 KiB of it on
// a page of their own (one fault more in every process, 3-7 us here).
alignas(8) char g_area[kAreaBytes] __attribute__((section(".lbss")));
size_t g_used = 0; // start-up runs on one thread (the front's constructor)
} // namespace

void *start_keep(size_t n) {
    size_t rounded = (n + 7) & ~size_t(7);
    if (rounded >= n && rounded <= kAreaBytes - g_used) {
        void *p = g_area + g_used;
        g_used += rounded;
        return p;
    }
    return malloc(n);
}

} // namespace spillway
