// background_thread.cpp — see background_thread.h.
#include "os/background_thread.h"

#include "clock.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <pthread.h>
#include <unistd.h>

namespace spillway {

namespace {
// The CPU clocks of the threads started here, with the pid that started
// them (a fork child's copies name its parent's threads). A slot is
// claimed before its thread starts (pid -1 while being claimed); the
// thread runs through run_counted, which records its final time.
constexpr int kMaxThreads = 16;
struct ThreadClock {
    std::atomic<clockid_t> clock{0};
    std::atomic<bool> readable{false}; // clock is the thread's (else only its final time counts)
    std::atomic<pid_t> pid{0};
    // Its time at the last read, and at its end: once the thread has ended
    // its clock fails with EINVAL, but the process still holds the time it
    // spent, so it stays counted as ours. The thread stores its own final
    // time as it returns: read only by others, a thread that spun on after
    // the last read gave its last slice to the program's count (on a loaded
    // machine, tens of ms).
    std::atomic<uint64_t> last_ns{0};
    void *(*main)(void *) = nullptr;
};
ThreadClock g_clocks[kMaxThreads];
std::atomic<int> g_clock_count{0};

uint64_t own_cpu_ns() {
    timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// A slot for a thread about to start, or -1 when all are taken (the thread
// then runs uncounted: its time is the program's).
int claim_slot() {
    pid_t me = getpid();
    // A slot of an earlier process (before a fork) is reused first.
    for (int i = 0; i < g_clock_count.load() && i < kMaxThreads; i++) {
        pid_t old = g_clocks[i].pid.load();
        if (old != me && old != -1 && g_clocks[i].pid.compare_exchange_strong(old, -1)) return i;
    }
    int i = g_clock_count.fetch_add(1);
    if (i >= kMaxThreads) return -1;
    g_clocks[i].pid.store(-1);
    return i;
}

void *run_counted(void *slot) {
    ThreadClock &c = g_clocks[(intptr_t)slot];
    // The thread makes itself counted before it does anything: until then
    // its time is the program's, and a reader's clamp (program_cpu_ns)
    // would keep what it had spun while its starter still ran on.
    clockid_t clock;
    if (pthread_getcpuclockid(pthread_self(), &clock) == 0) {
        c.clock.store(clock);
        c.readable.store(true);
    }
    c.pid.store(getpid());
    void *result = c.main(nullptr);
    uint64_t end = own_cpu_ns(), last = c.last_ns.load();
    while (end > last && !c.last_ns.compare_exchange_weak(last, end)) {
    }
    return result;
}
} // namespace

uint64_t program_cpu_ns() {
    // The process first, the threads after: what the threads run between
    // the two reads is then subtracted, never added, so no reading exceeds
    // the program's time. Readings are kept monotonic, so one that overshot
    // would stay for good; one that falls short is made good by the next.
    static std::atomic<uint64_t> g_last{0};
    static std::atomic<pid_t> g_last_pid{0};
    uint64_t total = clock_ns(CLOCK_PROCESS_CPUTIME_ID), ours = 0;
    pid_t me = getpid();
    if (g_last_pid.exchange(me) != me) g_last.store(0); // a fork child counts from its own start
    int n = g_clock_count.load();
    for (int i = 0; i < n && i < kMaxThreads; i++) {
        if (g_clocks[i].pid.load() != me) continue;
        timespec ts;
        // A thread that ended: EINVAL (its final time is in last_ns). Never
        // lower last_ns: the thread may have stored its final time since.
        if (g_clocks[i].readable.load() && clock_gettime(g_clocks[i].clock.load(), &ts) == 0) {
            uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, seen = g_clocks[i].last_ns.load();
            while (now > seen && !g_clocks[i].last_ns.compare_exchange_weak(seen, now)) {
            }
        }
        ours += g_clocks[i].last_ns.load();
    }
    uint64_t cpu = total > ours ? total - ours : 0, last = g_last.load(std::memory_order_relaxed);
    while (cpu > last && !g_last.compare_exchange_weak(last, cpu, std::memory_order_relaxed)) {
    }
    return std::max(cpu, last);
}

bool start_background_thread(void *(*main)(void *), const char *name, size_t stack_bytes) {
    // The new thread inherits the mask in force at pthread_create.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack_bytes);
    pthread_t tid;
    int slot = claim_slot();
    if (slot >= 0) {
        g_clocks[slot].main = main;
        g_clocks[slot].readable.store(false);
        g_clocks[slot].last_ns.store(0);
    }
    bool ok = slot >= 0 ? pthread_create(&tid, &attr, run_counted, (void *)(intptr_t)slot) == 0
                        : pthread_create(&tid, &attr, main, nullptr) == 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (ok) pthread_setname_np(tid, name);
    if (slot >= 0) {
        clockid_t c;
        if (ok && pthread_getcpuclockid(tid, &c) == 0) {
            g_clocks[slot].clock.store(c);
            g_clocks[slot].readable.store(true);
        }
        g_clocks[slot].pid.store(ok ? getpid() : 0);
    }
    return ok;
}

} // namespace spillway
