// region.cpp — see region.h.
#include "region.h"

#include <mimalloc.h>
#include <new>

namespace spillway {

static std::mutex g_large_lock;
static Region *g_first = nullptr;
static size_t g_count = 0;

std::mutex &large_lock() { return g_large_lock; }

void registry_link(Region *r) {
    r->prev = nullptr;
    r->next = g_first;
    if (g_first) g_first->prev = r;
    g_first = r;
    g_count++;
}

void registry_unlink(Region *r) {
    if (r->prev) r->prev->next = r->next;
    else g_first = r->next;
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

void region_delete(Region *r) {
    r->~Region();
    mi_free(r);
}

} // namespace spillway
