// fork_safety.cpp — fork must not deadlock, whatever other threads or signal
// handlers are doing (see shim/engine/fork_safety.h). Three cases, each run in its
// own process group under a watchdog, so a hang is a failure (with the case
// named), never a stuck CI:
//   threads  fork while other threads allocate and free, small and large;
//            every child allocates and frees (small and large) and exits.
//   signal   a timer signal at a high rate while the main thread allocates
//            and frees; the handler forks and the child _exits at once (all
//            POSIX promises). With FORK_SAFETY_CHILD_MALLOC=1 the child
//            first mallocs and frees, small and large: the shim promises
//            that too (glibc does not: bare, its child can abort with a
//            malloc assertion when the signal interrupted malloc).
//   forkers  four threads fork at once (as glibc's tst-malloc-fork-deadlock
//            does) beside a thread in fflush(NULL) and an allocator: glibc
//            runs concurrent forks' atfork handlers concurrently, so what a
//            prepare handler learns must reach its own fork's parent/child
//            handler, not another's (a shared flag once made a parent
//            handler skip its unlocks: stdio's list lock stayed held).
//   stdio    threads in getline() on a file holding one 2.5 MB line (the
//            buffer grows by realloc through the large threshold), a thread
//            in fflush(NULL), and threads forking: glibc takes its stdio
//            list lock before its malloc locks for exactly this cycle.
// Usage: fork_safety [threads|signal|forkers|stdio|all] [seconds per case] [watchdog margin seconds]
// Exit 0 when every case finished in time with every child healthy.
// Run it bare and under the shim (a 64 KiB and a 1 MiB threshold).
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kChildOk = 17;
std::atomic<bool> g_stop{false};
double g_seconds = 2.0;
double g_margin = 20.0; // beyond g_seconds, before a case counts as hung

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// What every fork child does: one small and one large allocation (at least
// 4 MiB: large at either threshold), touched and freed, then _exit.
[[noreturn]] void child_body() {
    char *small = (char *)malloc(100);
    char *large = (char *)malloc(4 << 20);
    if (!small || !large) _exit(3);
    memset(small, 1, 100);
    large[0] = large[(4 << 20) - 1] = 2;
    free(large);
    free(small);
    _exit(kChildOk);
}

// Waits for a fork child; a child that has not exited within 10 s is hung.
// Async-signal-safe (the signal case calls it from its handler).
bool reap(pid_t pid) {
    for (int waited = 0; waited < 100000; waited++) { // 100 us steps
        int status = 0;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == kChildOk;
        if (r < 0 && errno != EINTR) return false;
        timespec ts = {0, 100000};
        nanosleep(&ts, nullptr);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    const char msg[] = "fork_safety: a fork child hung (killed after 10 s)\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    return false;
}

// xorshift: each thread its own stream, no locks.
unsigned next_random(unsigned &s) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
}

// Sizes from 16 bytes to 3 MiB, most of them small: every threshold sees
// both paths.
size_t random_size(unsigned &seed) {
    unsigned r = next_random(seed);
    if (r % 4 == 0) return 32768 + r % (3u << 20);
    return 16 + r % 4096;
}

void *allocator_thread(void *arg) {
    unsigned seed = 0x9e3779b9u * (unsigned)(uintptr_t)arg + 1;
    void *slots[64] = {};
    while (!g_stop.load(std::memory_order_relaxed)) {
        unsigned i = next_random(seed) % 64;
        free(slots[i]);
        size_t n = random_size(seed);
        slots[i] = malloc(n);
        if (!slots[i]) abort();
        memset(slots[i], (int)i, n < 256 ? n : 256);
    }
    for (void *p : slots) free(p);
    return nullptr;
}

std::atomic<int> g_forks{0};
std::atomic<bool> g_failed{false};
bool g_child_allocates = true; // false: children _exit at once (more forks overlap)

void *forking_thread(void *) {
    while (!g_stop.load(std::memory_order_relaxed)) {
        pid_t pid = fork();
        if (pid < 0) {
            g_failed = true;
            return nullptr;
        }
        if (pid == 0) {
            if (g_child_allocates) child_body();
            _exit(kChildOk);
        }
        if (!reap(pid)) g_failed = true;
        g_forks++;
    }
    return nullptr;
}

void run_for_seconds(double seconds) {
    double end = now_s() + seconds;
    while (now_s() < end && !g_failed) {
        timespec ts = {0, 20000000};
        nanosleep(&ts, nullptr);
    }
    g_stop = true;
}

int case_threads() {
    std::vector<pthread_t> threads(6);
    for (size_t i = 0; i < 4; i++) pthread_create(&threads[i], nullptr, allocator_thread, (void *)(i + 1));
    for (size_t i = 4; i < 6; i++) pthread_create(&threads[i], nullptr, forking_thread, nullptr);
    run_for_seconds(g_seconds);
    for (pthread_t t : threads) pthread_join(t, nullptr);
    printf("threads: %d forks, %s\n", g_forks.load(), g_failed ? "FAILED" : "ok");
    fflush(stdout);
    return g_failed || g_forks == 0;
}

// --- signal: the handler forks ---------------------------------------------
volatile sig_atomic_t g_signal_forks = 0, g_signal_failed = 0;
// Set by the main thread before each free/malloc pair, cleared by the one
// signal that forks: a fast timer then lands at random points inside
// malloc and free, and the main thread still makes progress.
volatile sig_atomic_t g_armed = 0;
bool g_signal_child_mallocs = false;
timer_t g_timer;
double g_signal_end = 0;

void forking_handler(int) {
    if (!g_armed) return;
    g_armed = 0;
    int saved = errno;
    if (now_s() > g_signal_end) { // the main thread may be starved: stop here
        struct itimerspec off = {};
        timer_settime(g_timer, 0, &off, nullptr);
    }
    pid_t pid = fork();
    if (pid == 0) {
        if (g_signal_child_mallocs) child_body();
        _exit(kChildOk);
    }
    if (pid < 0 || !reap(pid)) g_signal_failed = 1;
    g_signal_forks = g_signal_forks + 1;
    errno = saved;
}

int case_signal() {
    const char *mallocs = getenv("FORK_SAFETY_CHILD_MALLOC");
    g_signal_child_mallocs = mallocs && strcmp(mallocs, "1") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forking_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, nullptr);
    // No thread of our own: bare, this is glibc's single-threaded case (the
    // one where it promises fork in a handler); under the shim the reaper
    // makes it multi-threaded.
    timer_t &timer = g_timer;
    g_signal_end = now_s() + g_seconds;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGUSR1;
    ev._sigev_un._tid = gettid(); // always this (the main) thread: it is the one in malloc
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
        perror("timer_create");
        return 1;
    }
    // 2 kHz: an unarmed signal costs microseconds, so even on a loaded
    // machine the main thread is not starved.
    struct itimerspec every = {{0, 500000}, {0, 500000}};
    timer_settime(timer, 0, &every, nullptr);
    unsigned seed = 12345;
    void *slots[64] = {};
    while (now_s() < g_signal_end && !g_signal_failed) {
        for (int k = 0; k < 64; k++) {
            unsigned i = next_random(seed) % 64;
            g_armed = 1;
            free(slots[i]);
            slots[i] = malloc(random_size(seed));
            if (!slots[i]) abort();
        }
    }
    struct itimerspec off = {};
    timer_settime(timer, 0, &off, nullptr);
    timer_delete(timer);
    signal(SIGUSR1, SIG_IGN);
    for (void *p : slots) free(p);
    printf("signal: %d forks from the handler, %s\n", (int)g_signal_forks,
           g_signal_failed ? "FAILED" : "ok");
    fflush(stdout);
    return g_signal_failed || g_signal_forks == 0;
}

// --- stdio: getline + fflush(NULL) + fork --------------------------------------
char g_line_file[] = "/tmp/fork_safety_line.XXXXXX";

void *getline_thread(void *) {
    FILE *f = fopen(g_line_file, "r");
    if (!f) abort();
    while (!g_stop.load(std::memory_order_relaxed)) {
        rewind(f);
        char *line = nullptr;
        size_t cap = 0;
        if (getline(&line, &cap, f) < 0) abort();
        free(line);
    }
    fclose(f);
    return nullptr;
}

void *flush_all_thread(void *) {
    while (!g_stop.load(std::memory_order_relaxed))
        if (fflush(nullptr) != 0) abort();
    return nullptr;
}

int case_stdio() {
    int fd = mkstemp(g_line_file);
    if (fd < 0) return 1;
    std::vector<char> line(2500000, 'x');
    line.back() = '\n';
    if (write(fd, line.data(), line.size()) != (ssize_t)line.size()) return 1;
    close(fd);
    std::vector<pthread_t> threads;
    auto start = [&](void *(*fn)(void *), int n) {
        for (int i = 0; i < n; i++) {
            pthread_t t;
            pthread_create(&t, nullptr, fn, nullptr);
            threads.push_back(t);
        }
    };
    start(getline_thread, 4);
    start(flush_all_thread, 1);
    start(forking_thread, 2);
    run_for_seconds(g_seconds);
    for (pthread_t t : threads) pthread_join(t, nullptr);
    unlink(g_line_file);
    printf("stdio: %d forks, %s\n", g_forks.load(), g_failed ? "FAILED" : "ok");
    fflush(stdout);
    return g_failed || g_forks == 0;
}

// --- forkers: several threads fork at once -------------------------------------
int case_forkers() {
    void *warm = malloc(4 << 20); // large at either threshold: the engine is on
    if (!warm) return 1;
    free(warm);
    g_child_allocates = false;
    std::vector<pthread_t> threads(6);
    for (size_t i = 0; i < 4; i++) pthread_create(&threads[i], nullptr, forking_thread, nullptr);
    pthread_create(&threads[4], nullptr, flush_all_thread, nullptr);
    pthread_create(&threads[5], nullptr, allocator_thread, (void *)7);
    run_for_seconds(g_seconds);
    for (pthread_t t : threads) pthread_join(t, nullptr);
    printf("forkers: %d forks, %s\n", g_forks.load(), g_failed ? "FAILED" : "ok");
    fflush(stdout);
    return g_failed || g_forks == 0;
}

// Runs one case in its own process group; a case that outlives its time
// plus a margin is killed (with every child it forked) and reported hung.
int run_case(const char *name, int (*fn)()) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        _exit(fn());
    }
    setpgid(pid, pid);
    double limit = now_s() + g_seconds + g_margin;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (now_s() > limit) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            printf("%s: HUNG (killed after %.0f s)\n", name, g_seconds + g_margin);
            return 1;
        }
        timespec ts = {0, 10000000};
        nanosleep(&ts, nullptr);
    }
    if (WIFSIGNALED(status)) {
        printf("%s: killed by signal %d\n", name, WTERMSIG(status));
        return 1;
    }
    return WEXITSTATUS(status) != 0;
}

} // namespace

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    if (argc > 2) g_seconds = atof(argv[2]);
    if (argc > 3) g_margin = atof(argv[3]);
    struct {
        const char *name;
        int (*fn)();
    } cases[] = {{"threads", case_threads}, {"signal", case_signal}, {"forkers", case_forkers},
                  {"stdio", case_stdio}};
    int failed = 0, ran = 0;
    for (auto &c : cases) {
        if (strcmp(which, "all") != 0 && strcmp(which, c.name) != 0) continue;
        ran++;
        failed += run_case(c.name, c.fn);
    }
    if (!ran) {
        fprintf(stderr, "usage: fork_safety [threads|signal|forkers|stdio|all] [seconds per case] [margin]\n");
        return 2;
    }
    return failed ? 1 : 0;
}
