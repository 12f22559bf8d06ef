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
// claimed with an atomic increment; the clock is published after it.
constexpr int kMaxThreads = 16;
struct ThreadClock {
    std::atomic<clockid_t> clock{0};
    std::atomic<pid_t> pid{0};
    // Its time at the last read: once the thread has ended (its clock then
    // fails with EINVAL) the process still holds that time, so it stays
    // counted as ours (what it spent after that read is taken for the
    // program's: at most one read's interval).
    std::atomic<uint64_t> last_ns{0};
};
ThreadClock g_clocks[kMaxThreads];
std::atomic<int> g_clock_count{0};

void remember_clock(pthread_t tid) {
    clockid_t c;
    if (pthread_getcpuclockid(tid, &c) != 0) return;
    pid_t me = getpid();
    // A slot of an earlier process (before a fork) is reused first; -1
    // marks one being claimed.
    for (int i = 0; i < g_clock_count.load() && i < kMaxThreads; i++) {
        pid_t old = g_clocks[i].pid.load();
        if (old != me && old != -1 && g_clocks[i].pid.compare_exchange_strong(old, -1)) {
            g_clocks[i].clock.store(c);
            g_clocks[i].last_ns.store(0);
            g_clocks[i].pid.store(me);
            return;
        }
    }
    int i = g_clock_count.fetch_add(1);
    if (i >= kMaxThreads) return;
    g_clocks[i].clock.store(c);
    g_clocks[i].last_ns.store(0);
    g_clocks[i].pid.store(me);
}
} // namespace

uint64_t program_cpu_ns() {
    // The threads first, the process after: its total then holds at least
    // what they had, and the difference never goes backwards by much;
    // what it does (the clocks are read apart) is kept monotonic.
    static std::atomic<uint64_t> g_last{0};
    static std::atomic<pid_t> g_last_pid{0};
    uint64_t ours = 0;
    pid_t me = getpid();
    if (g_last_pid.exchange(me) != me) g_last.store(0); // a fork child counts from its own start
    int n = g_clock_count.load();
    for (int i = 0; i < n && i < kMaxThreads; i++) {
        if (g_clocks[i].pid.load() != me) continue;
        timespec ts;
        if (clock_gettime(g_clocks[i].clock.load(), &ts) == 0) // a thread that ended: EINVAL
            g_clocks[i].last_ns.store((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
        ours += g_clocks[i].last_ns.load();
    }
    uint64_t total = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
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
    bool ok = pthread_create(&tid, &attr, main, nullptr) == 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (ok) pthread_setname_np(tid, name);
    if (ok) remember_clock(tid);
    return ok;
}

} // namespace spillway
