// sampler.cpp — see sampler.h.
#include "sampler.h"

#include "backing.h"
#include "callsite.h"
#include "fd_policy.h"
#include "large.h"
#include "log.h"
#include "region.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace spillway {

namespace {
constexpr unsigned kWindows = 256;
constexpr unsigned kWindowPages = 64;
constexpr unsigned kMaxCandidates = 64;
constexpr uint64_t kPeriodNs = 100'000'000; // 10 Hz
constexpr uint64_t kMinAgeNs = 50'000'000;

std::atomic<bool> g_started{false};
std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_cpu_ns{0}, g_ticks{0};
int g_pagemap = -1;

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct Candidate {
    Region *region; // only dereferenced again under the large lock, after a check
    uintptr_t start;
    size_t len;
    uint64_t born;
    CallSite *site;
};

// Per-region advice follows the phase the region is in: a dataset filled in
// order and then gathered at random needs MADV_RANDOM now, and forward
// readahead again when a later pass streams through it.
void readvise(const Candidate &c, Verdict v) {
    int want = v == Verdict::random ? MADV_RANDOM : MADV_SEQUENTIAL;
    std::lock_guard<std::mutex> guard(large_lock());
    for (Region *r = registry_first(); r; r = r->next)
        if (r == c.region && r->start == c.start && !r->freed.load()) {
            uint8_t phase = v == Verdict::random ? 2 : 1; // read by the tiering controller
            if (r->phase.exchange(phase) != phase) r->phase_since_ns.store(now_ns());
            if (v == Verdict::sequential && c.len < kNoReadaroundBelow) return;
            advise_region(r, want);
            return;
        }
}

void mark_random(CallSite *site, const WindowCounts &w, uint64_t age_ns) {
    int expected = (int)Access::unknown;
    if (!site->access.compare_exchange_strong(expected, (int)Access::random)) {
        if (expected != (int)Access::sequential) return;
        site->access.store((int)Access::random); // random overrides sequential
    }
    snprintf(site->evidence, sizeof site->evidence,
             "%u of %u touched windows partially mapped %.2f s after allocation",
             w.partial, w.partial + w.full, age_ns / 1e9);
    site->classified_after_ns.store(age_ns);
    // Readahead of megabytes per fault is the wrong advice for this site.
    std::lock_guard<std::mutex> guard(large_lock());
    for (Region *r = registry_first(); r; r = r->next)
        if (r->site == site && r->backing == Backing::disk && !r->freed.load()) advise_region(r, MADV_RANDOM);
    SPW_LOG(info, "site %s classified random-access (%s); later allocations from it prefer memory",
            callsite_identity_hex(site).c_str(), site->evidence);
}

void tick(uint64_t tick_number) {
    // Regions of classified sites are only watched for phase changes: once
    // a second is enough (measured: 10 Hz on one 512 MiB region cost 1.1%
    // of a core).
    bool watch_classified = tick_number % 10 == 0;
    Candidate list[kMaxCandidates];
    unsigned n = 0;
    uint64_t now = now_ns();
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r && n < kMaxCandidates; r = r->next) {
            if (r->backing != Backing::disk || r->freed.load() || r->is_private) continue;
            if (now - r->born_ns < kMinAgeNs) continue;
            bool site_open = r->site && r->site->access.load() == (int)Access::unknown;
            if (!site_open && (r->map_len < kNoReadaroundBelow || !watch_classified)) continue;
            list[n++] = {r, r->start, r->map_len, r->born_ns, r->site};
        }
    }
    for (unsigned i = 0; i < n; i++) {
        WindowCounts w = sample_region(list[i].start, list[i].len);
        Verdict v = classify_windows(w);
        if (v != Verdict::undecided) readvise(list[i], v);
        if (!list[i].site) continue;
        if (v == Verdict::random) mark_random(list[i].site, w, now - list[i].born);
        else if (v == Verdict::sequential && list[i].site->access.load() == (int)Access::unknown) {
            int expected = (int)Access::unknown;
            if (list[i].site->access.compare_exchange_strong(expected, (int)Access::sequential))
                snprintf(list[i].site->evidence, sizeof list[i].site->evidence,
                         "%u full and %u partial windows: written in order", w.full, w.partial);
        }
    }
}

void *sampler_main(void *) {
    struct sched_param sp = {}; // its wake-ups never preempt the application either
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    uint64_t cpu0 = thread_cpu_ns();
    while (!g_stop.load(std::memory_order_relaxed)) {
        timespec ts = {0, (long)kPeriodNs};
        nanosleep(&ts, nullptr);
        tick(g_ticks.fetch_add(1, std::memory_order_relaxed));
        g_cpu_ns.store(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
    }
    return nullptr;
}
} // namespace

Verdict classify_windows(const WindowCounts &w) {
    unsigned touched = w.partial + w.full;
    if (w.partial >= 8 && w.partial * 2 >= touched) return Verdict::random;
    if (touched >= 16 && w.partial <= 2) return Verdict::sequential;
    return Verdict::undecided;
}

WindowCounts sample_region(uintptr_t start, size_t len) {
    WindowCounts w;
    if (g_pagemap < 0) g_pagemap = above_stdio(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    if (g_pagemap < 0) return w;
    size_t page = 4096, pages = len / page;
    if (pages < kWindowPages) return w;
    size_t windows = pages / kWindowPages < kWindows ? pages / kWindowPages : kWindows;
    size_t stride = pages / windows;
    uint64_t entries[kWindowPages];
    for (size_t i = 0; i < windows; i++) {
        uintptr_t first_page = start / page + i * stride;
        ssize_t got = pread(g_pagemap, entries, sizeof entries, (off_t)(first_page * 8));
        if (got != (ssize_t)sizeof entries) continue;
        unsigned present = 0;
        for (uint64_t e : entries) present += (e >> 63) & 1;
        if (present == 0) w.empty++;
        else if (present == kWindowPages) w.full++;
        else w.partial++;
    }
    return w;
}

void sampler_notice() {
    if (!large_settings().learn || g_started.exchange(true)) return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t tid;
    if (pthread_create(&tid, &attr, sampler_main, nullptr) == 0) pthread_setname_np(tid, "spillway-learn");
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void sampler_stop() { g_stop.store(true); }

void sampler_after_fork_child() {
    g_started.store(false);
    // The inherited descriptor reads the PARENT's page tables.
    if (g_pagemap >= 0) close(g_pagemap);
    g_pagemap = -1;
}

uint64_t sampler_cpu_ns() { return g_cpu_ns.load(); }
uint64_t sampler_ticks() { return g_ticks.load(); }

} // namespace spillway
