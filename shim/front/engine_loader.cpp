// engine_loader.cpp — see engine_loader.h. Part of the front: it may use libc,
// libdl and mimalloc only (no libstdc++: that is what it defers).
//
// Invariant: g_state only moves kWaiting -> kStarting -> kOn/kOff, under
// g_start_lock; g_api is written before the state leaves kStarting and read
// only after seeing kOn or kOff (acquire).
#include "engine_loader.h"
#include "clock.h"
#include "config_error.h"
#include "derived_threshold.h"

#include "fd_policy.h"
#include "front_state.h"
#include "log.h"
#include "python_arenas.h"
#include "settings_check.h"
#include "start_verdict.h"
#include "stats_line.h"
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
// No threshold was given and none has been derived yet (engine_loader.h).
std::atomic<bool> g_derive_pending{false};

// What the engine starts with (engine_api.h): filled before main, read by
// the one thread that starts the engine, under the start lock.
StartRequest g_request;
// The settings were judged before main (or are the defaults) and the
// engine starts at its first use: should it never start, this process
// still leaves its (empty) line in the stats file (stats_line.h).
const char *g_lazy_stats_file = nullptr;
const char *g_lazy_stats_run = nullptr; // the run tag it carries (stats_run.h), or nullptr

const EngineApi *load_engine() {
    char path[PATH_MAX + sizeof kEngineName + 1];
    engine_file_path(path, sizeof path);
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
                          "allocations take the small path until it finishes, in ordinary memory NOT "
                          "protected from the memory limit: put spill.dir, the config and profile.file "
                          "on a filesystem that answers (a hung network mount stalls start-up)",
                    kStartWaitNs / 1000000000L);
        return kStarting;
    }
    state = g_state.load(std::memory_order_acquire);
    if (state == kWaiting) {
        g_state.store(kStarting, std::memory_order_relaxed);
        t_starting = true;
        g_api = load_engine();
        bool on = g_api && g_api->start(&g_request); // a bad config exits 78 in there
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

// The directory of a library loaded by a relative name: the loader's
// origin for it (absolute). Apart, with its PATH_MAX buffer, so that the
// usual case keeps a shallow frame before main.
__attribute__((noinline)) static size_t origin_of(struct link_map *self, char *out, size_t cap) {
    char origin[PATH_MAX];
    if (dlinfo(self, RTLD_DI_ORIGIN, origin) != 0 || !origin[0]) return 0;
    size_t dir = strlen(origin);
    origin[dir++] = '/'; // dlinfo wrote at most PATH_MAX bytes, its NUL included
    if (cap) memcpy(out, origin, dir < cap ? dir : cap - 1);
    return dir;
}

// The engine lives next to this library: its directory as the loader
// recorded it (absolute even when LD_PRELOAD named a relative path).
// Joined by hand, not snprintf: the front asks before main when a config
// is named, and printf's first call faulted its code in there.
size_t engine_file_path(char *out, size_t cap) {
    Dl_info info;
    struct link_map *self = nullptr;
    const char *origin = nullptr;
    size_t dir = 0;
    if (dladdr1((void *)&engine_file_path, &info, (void **)&self, RTLD_DL_LINKMAP) && self) {
        // The name the loader opened: when absolute, its directory is the
        // origin dlinfo would give (the loader derives one from the other).
        const char *name = info.dli_fname;
        const char *slash = name && name[0] == '/' ? strrchr(name, '/') : nullptr;
        if (slash) {
            origin = name;
            dir = (size_t)(slash - name) + 1;
        } else {
            dir = origin_of(self, out, cap);
        }
    }
    size_t needed = dir + sizeof kEngineName - 1; // without a directory: the loader's search path
    if (cap) {
        size_t k = dir < cap ? dir : cap - 1;
        if (origin) memcpy(out, origin, k);
        size_t rest = cap - 1 - k;
        size_t name = sizeof kEngineName - 1 < rest ? sizeof kEngineName - 1 : rest;
        memcpy(out + k, kEngineName, name);
        out[k + name] = 0;
    }
    return needed;
}

size_t derive_threshold_if_pending() {
    if (!g_derive_pending.load(std::memory_order_acquire)) return 0;
    // Racing threads (or a signal handler) each read the same files and get
    // the same answer; the first clears the flag and publishes it, unless
    // the engine has left kWaiting (it then holds its own, or SIZE_MAX).
    size_t threshold = (size_t)threshold_for_limit(read_memory_limit(""));
    if (g_derive_pending.exchange(false, std::memory_order_acq_rel) &&
        g_state.load(std::memory_order_acquire) == kWaiting)
        g_large_threshold = threshold;
    return threshold;
}

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

// A bad setting: its one line, then exit 78, or (SPILLWAY_ON_ERROR=continue)
// the job runs with the shim off. The line is the engine's config_error's.
// Not inlined: its 8.8 KiB line would deepen the constructor's frame in
// every process, and pages of stack the loader did not touch cost a fault.
__attribute__((noinline, cold)) static void refuse_at_start(const StartVerdict &v, const char *on_error) {
    bool continuing = config_error_continues(on_error);
    char line[StartVerdict::kMessageCap + 128];
    int n = snprintf(line, sizeof line, "%s%s%s\n", kConfigErrorStart, v.message,
                     continuing ? kConfigErrorContinues : kConfigErrorStops);
    ssize_t ignored = write(2, line, n > 0 && (size_t)n < sizeof line ? (size_t)n : 0);
    (void)ignored;
    if (!continuing) _exit(kConfigErrorExit);
    g_large_threshold = SIZE_MAX;
    g_state.store(kOff, std::memory_order_release);
}

// glibc calls ELF constructors with main's arguments (argc, argv, envp).
__attribute__((constructor(101))) static void spillway_front_constructor(int, char **argv, char **) {
    pthread_atfork(front_fork_prepare, front_fork_parent, front_fork_child);
    grow_fd_table(); // while single-threaded (fd_policy.h)
    StartVerdict verdict;
    // Unguarded: what the front opens to judge is closed at once or moved
    // above stdio (the log file); the guard's three fcntl calls are paid
    // only where the engine starts now.
    judge_settings_at_start(&g_request, &verdict);
    if (verdict.mode == StartMode::engine_judges) { // before main: a bad setting stops the job here
        StdioGuard guard; // nothing the engine opens at start-up may land in a closed 0/1/2
        g_state.store(kWaiting, std::memory_order_release);
        settle();
        python_arenas_hook();
        return;
    }
    if (verdict.mode == StartMode::refused) return refuse_at_start(verdict, g_request.on_error);
    // The defaults, or judged settings: the engine starts at its first use,
    // with this threshold deciding what that is.
    if (verdict.mode == StartMode::judged) {
        log_configure(verdict.level, verdict.log_fd);
        g_lazy_stats_file = verdict.stats_file;
        g_lazy_stats_run = verdict.stats_run;
        if (g_lazy_stats_file) keep_command_line(argv);
    }
    if (verdict.derive_threshold) { // derived at the first request it could concern (engine_loader.h)
        g_large_threshold = kDerivedThresholdFloor;
        g_derive_pending.store(true, std::memory_order_release);
    } else {
        g_large_threshold = verdict.threshold;
    }
    g_state.store(kWaiting, std::memory_order_release);
    python_arenas_hook();
}

__attribute__((destructor)) static void spillway_front_destructor() {
    // The engine writes the line when it was loaded (startup.cpp).
    if (g_lazy_stats_file && !g_api && g_state.load(std::memory_order_acquire) == kWaiting)
        write_empty_stats_line(g_lazy_stats_file, g_lazy_stats_run);
}

} // namespace spillway
