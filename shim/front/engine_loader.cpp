// engine_loader.cpp — see engine_loader.h. Part of the front: it may use libc,
// libdl and mimalloc only (no libstdc++: that is what it defers).
//
// Invariant: g_state only moves kWaiting -> kStarting -> kOn/kOff, under
// g_start_lock; g_api is written before the state leaves kStarting and read
// only after seeing kOn or kOff (acquire).
#include "engine_loader.h"
#include "clock.h"

#include "fd_policy.h"
#include "front_state.h"
#include "log.h"
#include "settings_check.h"
#include "threshold.h"

#include <atomic>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

namespace spillway {

namespace {

enum State : int { kOff, kWaiting, kStarting, kOn };

constexpr const char kEngineName[] = "libspillway_engine.so";
constexpr long kStartWaitNs = 2000000000L; // see THREADS in engine_loader.h

std::atomic<int> g_state{kOff};
const EngineApi *g_api = nullptr;
pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;
// This thread is running the engine's start-up (initial-exec: the front is
// loaded at start-up, so its TLS is static and reading it never allocates).
thread_local bool t_starting __attribute__((tls_model("initial-exec"))) = false;
std::atomic<bool> g_wait_warned{false};

// Settings given to the shim: these are validated at start-up (engine_loader.h).
bool configured() {
    for (const char *name : kSettingVariables) {
        const char *v = getenv(name);
        if (v && *v) return true;
    }
    return false;
}

const char *env_lookup(void *, const char *name) { return getenv(name); }

// The settings `spillway run` judged for exactly this environment
// (settings_check.h): their threshold and log level.
bool judged_by_runner(uint64_t *threshold, int *level) {
    uint64_t hash = 0;
    if (!parse_checked(getenv(kCheckedMarker), threshold, level, &hash)) return false;
    return hash == settings_hash(env_lookup, nullptr) && *threshold >= kMinThreshold &&
           *level >= (int)LogLevel::error && *level <= (int)LogLevel::debug;
}

// Judged settings started lazily: if the engine never starts, this process
// still leaves its (empty) line in [stats] file, as the runner's summary
// counts processes by their lines.
bool g_judged = false;

void write_empty_stats_line() {
    const char *pattern = getenv("SPILLWAY_STATS");
    if (!pattern || !*pattern) return;
    char path[4096];
    size_t n = 0;
    for (const char *c = pattern; *c && n + 24 < sizeof path; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            n += (size_t)snprintf(path + n, sizeof path - n, "%d", (int)getpid());
            c++;
        } else {
            path[n++] = *c;
        }
    }
    path[n] = 0;
    char cmd[512];
    size_t m = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char raw[256];
        ssize_t got = read(fd, raw, sizeof raw);
        close(fd);
        for (ssize_t i = 0; i < got && m + 3 < sizeof cmd; i++) { // JSON-safe: no quote, backslash or control
            char c = raw[i];
            cmd[m++] = (c == '"' || c == '\\' || (unsigned char)c < 0x20) ? ' ' : c;
        }
        while (m && cmd[m - 1] == ' ') m--;
    }
    cmd[m] = 0;
    static const char kZeros[] = "{\"disk\":0,\"memory\":0,\"anon\":0}";
    char line[1024];
    int len = snprintf(line, sizeof line,
                       "{\"pid\":%d,\"cmd\":\"%s\",\"regions\":%s,\"bytes\":%s,\"peak_bytes\":%s,"
                       "\"live_bytes_at_exit\":%s,\"fallbacks\":{},\"frees\":0,\"reallocs_in_place\":0,"
                       "\"reallocs_moved\":0,\"sites\":[]}\n",
                       (int)getpid(), cmd, kZeros, kZeros, kZeros, kZeros);
    int out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (out < 0) return;
    ssize_t ignored = write(out, line, len > 0 && len < (int)sizeof line ? (size_t)len : 0);
    (void)ignored;
    close(out);
}

// The engine lives next to this library: its directory as the loader
// recorded it (absolute even when LD_PRELOAD named a relative path).
void engine_path(char *out, size_t cap) {
    Dl_info info;
    struct link_map *self = nullptr;
    char origin[PATH_MAX];
    if (dladdr1((void *)&engine_path, &info, (void **)&self, RTLD_DL_LINKMAP) && self &&
        dlinfo(self, RTLD_DI_ORIGIN, origin) == 0 && origin[0]) {
        snprintf(out, cap, "%s/%s", origin, kEngineName);
        return;
    }
    snprintf(out, cap, "%s", kEngineName); // the loader's search path
}

const EngineApi *load_engine() {
    char path[PATH_MAX + sizeof kEngineName + 1];
    engine_path(path, sizeof path);
    // RTLD_LAZY: libstdc++ and the rest bind their PLT on first call, as they
    // did when loaded at start-up (RTLD_NOW would bind thousands up front).
    void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char *why = dlerror();
        SPW_LOG(warn, "cannot load %s (%s): spillway is NOT routing large allocations; install "
                      "%s next to libspillway.so", path, why ? why : "unknown error", kEngineName);
        return nullptr;
    }
    auto *api = (const EngineApi *)dlsym(lib, SPW_ENGINE_API_SYMBOL);
    if (!api || api->version != kEngineApiVersion || api->size != sizeof(EngineApi)) {
        SPW_LOG(warn, "%s is not from this build of spillway: spillway is NOT routing large "
                      "allocations; install the %s built with this libspillway.so", path, kEngineName);
        return nullptr;
    }
    return api;
}

// The start lock, waiting at most kStartWaitNs. Never called on the
// starting thread (it would wait for itself).
bool lock_start_bounded() {
    if (pthread_mutex_trylock(&g_start_lock) == 0) return true;
    uint64_t since = monotonic_ns();
    for (;;) {
        timespec pause = {0, 100000}; // 0.1 ms
        nanosleep(&pause, nullptr);
        if (pthread_mutex_trylock(&g_start_lock) == 0) return true;
        if (monotonic_ns() - since > (uint64_t)kStartWaitNs) return false;
    }
}

// Brings the engine up unless that was done; returns the settled state
// (kStarting: not settled for this caller, see engine_loader.h).
int settle() {
    int state = g_state.load(std::memory_order_acquire);
    if (state == kOn || state == kOff) return state;
    if (t_starting) return kStarting;
    if (!lock_start_bounded()) {
        if (!g_wait_warned.exchange(true, std::memory_order_relaxed))
            SPW_LOG(warn, "waited %ld s for spillway's start-up on another thread; this thread's large "
                          "allocations take the small path until it finishes",
                    kStartWaitNs / 1000000000L);
        return kStarting;
    }
    state = g_state.load(std::memory_order_acquire);
    if (state == kWaiting) {
        g_state.store(kStarting, std::memory_order_relaxed);
        t_starting = true;
        g_api = load_engine();
        bool on = g_api && g_api->start(); // a bad config exits 78 in there
        t_starting = false;
        if (!on) g_large_threshold = SIZE_MAX; // nothing to ask again
        state = on ? kOn : kOff;
        g_state.store(state, std::memory_order_release);
    }
    pthread_mutex_unlock(&g_start_lock);
    return state;
}

// --- fork (engine_loader.h, FORK) ---
// Thread-local: concurrent forks run their handlers concurrently, and each
// fork's parent (or child) handler runs on the thread that ran its prepare.
// (Shared flags let a second fork's prepare clear the first's before its
// parent handler read them: the engine's locks, stdio's list lock among
// them, stayed held; glibc's tst-malloc-fork-deadlock hung on it.)
thread_local bool t_fork_locked __attribute__((tls_model("initial-exec"))) = false;
thread_local bool t_fork_engine __attribute__((tls_model("initial-exec"))) = false;
thread_local bool t_fork_mid_start __attribute__((tls_model("initial-exec"))) = false;
// Signals stay blocked from prepare to parent/child: a handler that forked
// in between would run these handlers again on this thread and overwrite
// the flags above (the engine blocks them too, but only from its prepare on).
thread_local sigset_t t_fork_saved_mask __attribute__((tls_model("initial-exec")));

void front_fork_prepare() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &t_fork_saved_mask);
    t_fork_locked = t_fork_engine = t_fork_mid_start = false;
    int state = g_state.load(std::memory_order_acquire);
    if (state == kOff) return; // nothing to take, ever again
    if (state != kOn) {        // a start-up may be under way: not into the child half done
        if (t_starting) t_fork_mid_start = true; // a signal handler forked inside start-up
        else if (lock_start_bounded()) t_fork_locked = true;
        else t_fork_mid_start = true;
    }
    if (g_state.load(std::memory_order_acquire) == kOn) {
        g_api->fork_prepare();
        t_fork_engine = true;
    }
}

void front_fork_parent() {
    if (t_fork_engine) g_api->fork_parent();
    if (t_fork_locked) pthread_mutex_unlock(&g_start_lock);
    pthread_sigmask(SIG_SETMASK, &t_fork_saved_mask, nullptr);
}

void front_fork_child() {
    if (t_fork_engine) g_api->fork_child();
    if (t_fork_locked) pthread_mutex_unlock(&g_start_lock); // this thread took it
    else pthread_mutex_init(&g_start_lock, nullptr);       // its holder is not in the child
    int state = g_state.load(std::memory_order_relaxed);
    if (t_fork_mid_start || (state == kOn && !t_fork_engine) || state == kStarting) {
        // A start-up no thread of this child will finish (or one that
        // finished without the engine's fork handlers): no engine here.
        t_starting = false;
        g_large_threshold = SIZE_MAX;
        g_state.store(kOff, std::memory_order_relaxed);
    }
    pthread_sigmask(SIG_SETMASK, &t_fork_saved_mask, nullptr);
}

} // namespace

const EngineApi *engine_routing() {
    return settle() == kOn ? g_api : nullptr;
}

const EngineApi *engine_if_routing() {
    return g_state.load(std::memory_order_acquire) == kOn ? g_api : nullptr;
}

const EngineApi *engine_for_control() {
    int state = settle();
    return state == kOn || state == kOff ? g_api : nullptr;
}

__attribute__((constructor(101))) static void spillway_front_constructor() {
    pthread_atfork(front_fork_prepare, front_fork_parent, front_fork_child);
    uint64_t threshold = kDefaultThreshold;
    int level = (int)LogLevel::warn;
    if (judged_by_runner(&threshold, &level)) { // already judged: start at first use, as with none
        log_configure((LogLevel)level, 2);
        g_judged = true;
        g_large_threshold = threshold;
        g_state.store(kWaiting, std::memory_order_release);
        return;
    }
    if (configured()) { // validated now: a bad setting stops the job before it runs
        StdioGuard guard; // nothing opened at start-up may land in a closed 0/1/2
        g_state.store(kWaiting, std::memory_order_release);
        settle();
        return;
    }
    // The defaults cannot be wrong: the engine starts at its first use,
    // with the default threshold deciding what that is.
    g_large_threshold = kDefaultThreshold;
    g_state.store(kWaiting, std::memory_order_release);
}

__attribute__((destructor)) static void spillway_front_destructor() {
    // The engine writes the line when it was loaded (startup.cpp).
    if (g_judged && !g_api && g_state.load(std::memory_order_acquire) == kWaiting) write_empty_stats_line();
}

} // namespace spillway
