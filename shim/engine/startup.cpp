// startup.cpp — see startup.h.
#include "startup.h"

#include "registry/arena.h"
#include "backing/backing.h"
#include "sites/callsite.h"
#include "config.h"
#include "derived_threshold.h"
#include "engine_api.h"
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
#include "verdict_cache.h"

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

static const char *g_on_error = nullptr; // SPILLWAY_ON_ERROR as the process started

static bool config_error(const std::string &message) {
    bool continuing = config_error_continues(g_on_error);
    std::string line = config_error_line(message, continuing) + "\n";
    ssize_t ignored = write(2, line.data(), line.size());
    (void)ignored;
    if (!continuing) _exit(kConfigErrorExit);
    return false;
}

// What a good config gives start-up, for the front's next judgement
// (verdict_cache.h): its values before the variables.
static void store_verdict(const StartRequest &req, const Settings &file) {
    ConfigVerdict v;
    v.threshold = file.threshold;
    v.threshold_given = file.threshold_origin == ThresholdOrigin::config;
    v.policy = file.policy;
    v.log_level = file.log_level;
    v.spill_dir_given = file.spill_dir_given;
    v.allow_tmpfs = file.allow_tmpfs;
    v.spill_dir = file.spill_dir.c_str();
    v.log_file = file.log_file.c_str();
    v.stats_file = file.stats_file.c_str();
    v.stats_run = file.stats_run.c_str();
    char cache[64];
    verdict_cache_dir(cache, sizeof cache);
    verdict_cache_store(cache, req.engine, req.config_text, req.config_len, v);
}

// The log's descriptor: the front's, or the file opened now. -1 after a
// config error that lets the job go on (SPILLWAY_ON_ERROR=continue).
static int open_log(const StartRequest &req, const Settings &s) {
    if (s.log_file.empty()) return 2;
    if (req.log_fd >= 0) return req.log_fd;
    int fd = move_high(open(s.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (fd >= 0) return fd;
    if (req.judged) { // judged openable at start-up: the job runs, so it logs to stderr
        SPW_LOG(warn, "cannot open the log file %s any more (%s); logging to stderr: check that its directory "
                      "still exists and its disk has room, or set log.file to another file", s.log_file.c_str(),
                strerror(errno));
        return 2;
    }
    config_error(s.source + ": key 'log.file': cannot open " + s.log_file + " (" + strerror(errno) +
                 "; point log.file at a writable file, or set it to \"\" to log to stderr");
    return -1;
}

bool engine_startup(const StartRequest *request) {
    const StartRequest &req = *request;
    g_on_error = req.on_error;
    auto *s = new Settings();
    Settings file_only;
    std::string_view text(req.config_text ? req.config_text : "", req.config_len);
    LoadOptions opts;
    if (req.config_text) opts.config_text = &text;
    if (req.store_verdict && req.config_text) opts.file_settings = &file_only;
    EnvLookup env = [&req](const char *name) -> const char * {
        for (size_t i = 0; i < kSettingVariableCount; i++)
            if (strcmp(name, kSettingVariables[i]) == 0) return req.env[i];
        return nullptr;
    };
    if (auto err = load_settings(*s, env, opts)) {
        config_error(*err);
        return false;
    }
    if (opts.file_settings) store_verdict(req, file_only);
    // Not given: derived from the memory limit, as the front derived it
    // (derived_threshold.h); the same files, so the same answer.
    uint64_t memory_limit = s->threshold_origin == ThresholdOrigin::not_given ? read_memory_limit("") : 0;
    s->threshold = effective_threshold(s->threshold_origin, s->threshold, memory_limit);
    int log_fd = open_log(req, *s);
    if (log_fd < 0) return false;
    log_configure(s->log_level, log_fd);
    backing_init(*s);
    if (spill_dir_refusal_is_fatal(spill_dir(), policy_needs_disk(s->policy))) {
        if (req.judged) // fine before main; the job runs now, so it goes on without the disk
            SPW_LOG(warn, "spill directory refused: %s; large allocations will use anonymous memory",
                    disk_unusable_reason().c_str());
        else
            return config_error(s->source + ": key 'spill.dir': " + disk_unusable_reason());
    }
    if (!arena::reserve(kArenaBytes)) {
        SPW_LOG(warn, "could not reserve address space for large regions; spillway is NOT "
                      "routing: large allocations use ordinary memory, NOT protected from the memory "
                      "limit; raise or remove ulimit -v");
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
    char origin[160];
    describe_threshold_origin(origin, sizeof origin, s->threshold_origin, memory_limit);
    SPW_LOG(info, "active: threshold %llu bytes (%s), policy %s, spill dir %s%s",
            (unsigned long long)s->threshold, origin, policy_name(s->policy), spill_dir_path().c_str(),
            disk_usable() ? "" : " (unusable)");
    return true;
}

__attribute__((destructor)) static void spillway_destructor() {
    if (!g_startup_settings) return;
    sampler_stop();
    tiering_stop();
    stats_write_at_exit(g_startup_settings->stats_file, g_startup_settings->stats_run);
    if (getpid() != g_started_pid) return; // a fork child: the starter saves what was learned
    profile_save(*g_startup_settings);
    callsite_log_summary();
}

} // namespace spillway
