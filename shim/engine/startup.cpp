// startup.cpp — see startup.h.
#include "startup.h"

#include "registry/arena.h"
#include "backing/backing.h"
#include "sites/callsite.h"
#include "config.h"
#include "fd_policy.h"
#include "large/large.h"
#include "log.h"
#include "profile.h"
#include "backing/reaper.h"
#include "access/sampler.h"
#include "shm/shm.h"
#include "spilldir.h"
#include "stats/stats.h"
#include "stats/stats_live.h"
#include "tiering/rehome.h"
#include "tiering/tiering_loop.h"

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

bool engine_startup() {
    auto *s = new Settings();
    if (auto err = load_settings(*s)) {
        config_error(*err);
        return false;
    }
    int log_fd = 2;
    if (!s->log_file.empty()) {
        log_fd = above_stdio(open(s->log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
        if (log_fd < 0) {
            config_error(s->source + ": key 'log.file': cannot open " + s->log_file + " (" +
                         strerror(errno) + ")");
            return false;
        }
    }
    log_configure(s->log_level, log_fd);
    backing_init(*s);
    if (spill_dir_refusal_is_fatal(spill_dir(), policy_needs_disk(s->policy))) {
        config_error(s->source + ": key 'spill.dir': " + disk_unusable_reason());
        return false;
    }
    if (!arena::reserve(kArenaBytes)) {
        SPW_LOG(warn, "could not reserve address space for large regions; spillway is NOT "
                      "routing (check ulimit -v)");
        return false;
    }
    g_startup_settings = s;
    g_started_pid = getpid();
    large_init(*s);
    shm_init(*s);
    callsite_init(*s);
    sampler_init(*s);
    tiering_init(*s);
    stats_live_init(moving_to); // the snapshot names a move under way (rehome.h)
    profile_load(*s);
    std::atomic_thread_fence(std::memory_order_release);
    g_large_threshold = s->threshold;
    SPW_LOG(info, "active: threshold %llu bytes, policy %s, spill dir %s%s",
            (unsigned long long)s->threshold, policy_name(s->policy), spill_dir_path().c_str(),
            disk_usable() ? "" : " (unusable)");
    return true;
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
