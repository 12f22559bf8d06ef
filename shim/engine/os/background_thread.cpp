// background_thread.cpp — see background_thread.h.
#include "os/background_thread.h"

#include "clock.h"
#include "proc_stat.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
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
    std::atomic<pid_t> tid{0}; // the thread's id (gettid), once it runs
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
    c.tid.store(gettid());
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

namespace {
// The state letter of a /proc stat file, or 0 when it cannot be read.
char state_of(const char *path) {
    char buf[512];
    const char *fields = proc_stat_fields(path, buf, sizeof buf);
    return fields ? fields[0] : 0;
}

bool started_here(pid_t tid, pid_t me) {
    int n = g_clock_count.load();
    for (int i = 0; i < n && i < kMaxThreads; i++)
        if (g_clocks[i].pid.load() == me && g_clocks[i].tid.load() == tid) return true;
    return false;
}
} // namespace

bool no_program_thread_left(const char *states, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (states[i] != 'Z' && states[i] != 'X') return false;
    return true;
}

void exit_if_only_ours_left() {
    static std::atomic<uint64_t> g_next_ns{0};
    uint64_t now = monotonic_ns(), next = g_next_ns.load(std::memory_order_relaxed);
    if (now < next || !g_next_ns.compare_exchange_strong(next, now + 1000000000ull)) return;
    // The main thread first: one small read, and while it runs nothing else matters.
    char leader = state_of("/proc/self/stat");
    if (leader != 'Z' && leader != 'X') return;
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return;
    pid_t me = getpid();
    char states[256];
    size_t n = 0;
    bool unknown = false;
    while (dirent *e = readdir(tasks)) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || started_here(tid, me)) continue;
        if (n == sizeof states) { // more threads than we look at: some of the program's run
            unknown = true;
            break;
        }
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
        char st = state_of(path);
        states[n++] = st ? st : 'X'; // gone between the listing and the read
    }
    closedir(tasks);
    if (!unknown && no_program_thread_left(states, n)) exit(0);
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
