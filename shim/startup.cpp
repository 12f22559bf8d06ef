// startup.cpp — bringing the shim up in a constructor, and down at exit.
//
// Why a constructor and not the first malloc: the first malloc can come
// from the dynamic loader or libc before libstdc++ is initialised, and the
// config parser needs it. Allocations before this runs simply take the small
// path (g_large_threshold is SIZE_MAX), which is always correct; ours runs
// after our dependencies' constructors and before the program's own code.
//
// Invariant: a bad config never leaves a job silently unprotected: one line
// on stderr and exit status 78 (EX_CONFIG), before anything is created,
// unless SPILLWAY_ON_ERROR=continue.
#include "arena.h"
#include "backing.h"
#include "callsite.h"
#include "config.h"
#include "fd_policy.h"
#include "fork_safety.h"
#include "large.h"
#include "log.h"
#include "profile.h"
#include "reaper.h"
#include "sampler.h"
#include "shm.h"
#include "spilldir.h"
#include "stats.h"
#include "tiering_loop.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

namespace spillway {

// The most address space large regions may ever use; only what they need
// (plus a step of slack) is reserved (arena.h).
constexpr size_t kArenaBytes = size_t(16) << 40;

static Settings *g_startup_settings = nullptr;
static pid_t g_started_pid = 0;

static bool config_error(const std::string &message) {
    const char *mode = getenv("SPILLWAY_ON_ERROR");
    bool continuing = mode && strcmp(mode, "continue") == 0;
    std::string line = config_error_line(message, continuing) + "\n";
    ssize_t ignored = write(2, line.data(), line.size());
    (void)ignored;
    if (!continuing) _exit(kConfigErrorExit);
    return false;
}

static void start() {
    auto *s = new Settings();
    if (auto err = load_settings(*s)) {
        config_error(*err);
        return;
    }
    int log_fd = 2;
    if (!s->log_file.empty()) {
        log_fd = above_stdio(open(s->log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
        if (log_fd < 0) {
            config_error(s->source + ": key 'log.file': cannot open " + s->log_file + " (" +
                         strerror(errno) + ")");
            return;
        }
    }
    log_configure(s->log_level, log_fd);
    backing_init(*s);
    bool needs_disk = s->policy != Policy::anon && s->policy != Policy::memory;
    if (spill_dir_refusal_is_fatal(spill_dir(), needs_disk)) {
        config_error(s->source + ": key 'spill.dir': " + disk_unusable_reason());
        return;
    }
    if (!arena::reserve(kArenaBytes)) {
        SPW_LOG(warn, "could not reserve address space for large regions; spillway is NOT "
                      "routing (check ulimit -v)");
        return;
    }
    g_startup_settings = s;
    g_started_pid = getpid();
    large_init(*s);
    shm_init(*s);
    callsite_init(*s);
    profile_load(*s);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    std::atomic_thread_fence(std::memory_order_release);
    g_large_threshold = s->threshold;
    SPW_LOG(info, "active: threshold %llu bytes, policy %s, spill dir %s%s",
            (unsigned long long)s->threshold, policy_name(s->policy), spill_dir_path().c_str(),
            disk_usable() ? "" : " (unusable)");
}

__attribute__((constructor(101))) static void spillway_constructor() {
    StdioGuard guard; // nothing we open at start-up may land in a closed 0/1/2
    start();
}

__attribute__((destructor)) static void spillway_destructor() {
    if (!g_startup_settings) return;
    sampler_stop();
    tiering_stop();
    stats_write_at_exit(g_startup_settings->stats_file);
    if (getpid() != g_started_pid) return; // a fork child: the starter saves what was learned
    profile_save(*g_startup_settings);
    callsite_log_summary();
}

} // namespace spillway
