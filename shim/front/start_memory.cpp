// start_memory.cpp — see start_memory.h.
#include "start_memory.h"

#include <cstdlib>

namespace spillway {

namespace {
// 64 KiB: the variables, a config's text and the cache file of eight small
// configs. Only the pages written are ever faulted in.
constexpr size_t kAreaBytes = 64 * 1024;
alignas(8) char g_area[kAreaBytes];
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
