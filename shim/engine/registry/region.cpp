// region.cpp — see region.h.
#include "registry/region.h"

#include <atomic>
#include <mimalloc.h>
#include <new>
#include <sys/mman.h>

namespace spillway {

std::atomic<bool> g_fork_privatising{false};

static std::mutex g_large_lock;
static Region *g_first = nullptr;
static size_t g_count = 0;

std::mutex &large_lock() { return g_large_lock; }

void registry_after_fork_child() { new (&g_large_lock) std::mutex(); }

// The forward chain from g_first is a valid list at every instant, in
// program order: a fork child whose forking thread was interrupted in here
// (a signal handler that forks) walks it. A region joins the chain by one
// store, after its own links are set, and leaves it by one store before
// anything else changes. (Fences: the compiler must keep that order; on the
// CPU the same thread sees its own order.)
void registry_link(Region *r) {
    r->prev = nullptr;
    r->next = g_first;
    if (g_first) g_first->prev = r;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_first = r;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_count++;
}

void registry_unlink(Region *r) {
    if (r->prev) r->prev->next = r->next;
    else g_first = r->next;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (r->next) r->next->prev = r->prev;
    r->prev = r->next = nullptr;
    g_count--;
}

Region *registry_first() { return g_first; }
size_t registry_count() { return g_count; }

Region *region_new() {
    void *mem = mi_malloc(sizeof(Region));
    return mem ? new (mem) Region() : nullptr;
}

void advise_region(Region *r, int advice) {
    if (r->advice == advice || r->backing == Backing::anon) return;
    if (madvise((void *)r->start, r->map_len, advice) == 0) r->advice = advice;
}

void region_delete(Region *r) {
    r->~Region();
    mi_free(r);
}

} // namespace spillway
