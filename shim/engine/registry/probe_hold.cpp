// probe_hold.cpp — see probe_hold.h.
#include "registry/probe_hold.h"

#include "os/lock_unless_held.h"

#include <atomic>
#include <mutex>
#include <new>

namespace spillway {

namespace {
std::mutex g_hold_lock;                     // held from begin to end by the probing thread
std::atomic<const Region *> g_held{nullptr}; // the region held, published under g_hold_lock
} // namespace

void probe_hold_begin() { g_hold_lock.lock(); }

void probe_hold_publish(const Region *r) { g_held.store(r); } // seq_cst: against the changers' stores

void probe_hold_end() {
    g_held.store(nullptr);
    g_hold_lock.unlock();
}

void wait_out_probes(const Region *r) {
    // Held: the hold lock is the probe's until it has cleared the hold.
    if (r && g_held.load() == r) std::lock_guard<std::mutex> wait(g_hold_lock);
}

bool wait_out_probes_unless_mine(const Region *r) {
    if (!r || g_held.load() != r) return true;
    if (!lock_unless_held_here(g_hold_lock.native_handle())) return false;
    g_hold_lock.unlock();
    return true;
}

const Region *probe_held() { return g_held.load(); }

void probe_hold_after_fork_child() {
    new (&g_hold_lock) std::mutex();
    g_held.store(nullptr);
}

} // namespace spillway
