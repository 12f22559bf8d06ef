// start_verdict.cpp — see start_verdict.h.
#include "start_verdict.h"

#include "engine_loader.h"
#include "env_overrides.h"
#include "fd_policy.h"
#include "settings_check.h"
#include "spill_dir_check.h"
#include "start_memory.h"
#include "stats_run.h"
#include "verdict_cache.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

namespace {

enum Variable { kConfig, kDir, kThreshold, kPolicy, kLog, kStats, kStatsRun }; // kSettingVariables' order

const char *request_lookup(void *ctx, const char *name) {
    auto *req = static_cast<const StartRequest *>(ctx);
    for (size_t i = 0; i < kSettingVariableCount; i++)
        if (strcmp(name, kSettingVariables[i]) == 0) return req->env[i];
    return nullptr;
}

// The config file's text, as the engine's read_config_file would read it
// (at most 16 MiB). Only a regular file: anything else (a pipe, a
// directory, an error) the engine reads itself, and says what is wrong.
bool read_config(const char *path, StartRequest *req) {
    constexpr size_t kMaxConfig = 16u << 20;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    char *text = nullptr;
    size_t cap = 0, len = 0;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= kMaxConfig;
    if (ok) {
        cap = (size_t)st.st_size + 1; // one more, to see the end at once
        text = (char *)start_keep(cap); // kept for the process's life: the engine parses it
        ok = text != nullptr;
    }
    while (ok) {
        if (len == cap) { // it grew since fstat: the engine reads it itself
            ok = false;
            break;
        }
        ssize_t n = read(fd, text + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) ok = false;
        if (n <= 0) break;
        len += (size_t)n;
        // Short of the one byte more at the size fstat gave: the end
        // (a regular file's read is short only there), without asking again.
        if (len == (size_t)st.st_size) break;
    }
    close(fd);
    if (!ok || len > kMaxConfig) return false; // text, if any, is abandoned: start-up memory is never freed
    req->config_text = text;
    req->config_len = len;
    return true;
}

// The variables the front reads at start-up (kSettingVariables, then
// these), found in one pass over the environment: nine getenv calls
// scanned it nine times, the first bound lazily (about 2,500 instructions
// before main in every process). As getenv: the first of a name counts.
constexpr size_t kOnError = kSettingVariableCount, kChecked = kSettingVariableCount + 1, kFound = kChecked + 1;

const char *value_of(const char *name, const char *entry) { // entry: "NAME=value"; nullptr: another name
    while (*name && *name == *entry) name++, entry++;
    return !*name && *entry == '=' ? entry + 1 : nullptr;
}

void find_variables(const char *found[kFound]) {
    static constexpr char kPrefix[] = "SPILLWAY_";
    for (size_t i = 0; i < kFound; i++) found[i] = nullptr;
    for (char **e = environ; e && *e; e++) {
        const char *entry = *e;
        size_t k = 0;
        while (k < sizeof kPrefix - 1 && entry[k] == kPrefix[k]) k++;
        if (k < sizeof kPrefix - 1) continue;
        for (size_t i = 0; i < kFound; i++) {
            const char *name = i < kSettingVariableCount ? kSettingVariables[i]
                               : i == kOnError           ? "SPILLWAY_ON_ERROR"
                                                         : kCheckedMarker;
            if (const char *value = value_of(name, entry)) {
                if (!found[i]) found[i] = value;
                break;
            }
        }
    }
}

// `spillway run` judged exactly these settings and this config text.
bool judged_by_runner(StartRequest *req, StartVerdict *v, const char *checked) {
    uint64_t threshold = 0, hash = 0;
    int level = 0;
    if (!parse_checked(checked, &threshold, &level, &hash)) return false;
    if (req->env[kConfig] && !req->config_text) return false; // unread: not the text it judged
    // The runner judged its tag: a bad one is not the runner's, so the engine judges it and says why.
    const char *run = req->env[kStatsRun];
    if (run && !stats_run_ok(run, strlen(run))) return false;
    // threshold 0: none was given, it is derived here (derived_threshold.h).
    if (hash != settings_hash(request_lookup, req, req->config_text, req->config_len) ||
        (threshold && threshold < kMinThreshold) || level < (int)LogLevel::error || level > (int)LogLevel::debug)
        return false;
    v->threshold = threshold ? threshold : kDefaultThreshold;
    v->derive_threshold = threshold == 0;
    v->level = (LogLevel)level;
    v->stats_file = req->env[kStats];
    // The runner always sets the variable (run.cpp), so a tag the config
    // names, which the front cannot read, is never the one that counts.
    v->stats_run = req->env[kStatsRun];
    return true;
}

// The message's length said it was cut: leave it to the engine, never
// print half a line.
bool fits(size_t needed, size_t cap) { return needed < cap; }

// The log file a judged config names: open now, as the engine would.
bool open_log(const SimpleSettings &s, StartVerdict *v) {
    if (!*s.log_file) return true;
    int fd = move_high(open(s.log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (fd >= 0) {
        v->log_fd = fd;
        return true;
    }
    int n = snprintf(v->message, StartVerdict::kMessageCap, "%s: key 'log.file': cannot open %s (%s); point log.file at a writable file, or set it to \"\" to log to stderr", s.source,
                     s.log_file, strerror(errno));
    v->mode = fits((size_t)n, StartVerdict::kMessageCap) ? StartMode::refused : StartMode::engine_judges;
    return false;
}

// A directory the job named, where a refusal stops it (the engine's
// spill_dir_refusal_is_fatal, less spill_dir_falls_back: a directory of
// another user is replaced by a private one, tmpfs only warns).
// Buffers of a few hundred bytes, not PATH_MAX: start-up's frames stay
// within the stack the loader already touched (a fresh page costs 3-7 us);
// a longer path or message is the engine's to judge.
bool check_named_dir(const SimpleSettings &s, StartVerdict *v) {
    if (!s.spill_dir_given || !policy_needs_disk(s.policy)) return true;
    char path[512];
    size_t len = strlen(s.spill_dir);
    if (len >= sizeof path) return v->mode = StartMode::engine_judges, false;
    memcpy(path, s.spill_dir, len + 1);
    char why[1024];
    SpillDirCheck d;
    check_spill_dir_verdict(path, s.allow_tmpfs, &d, why, sizeof why); // the engine opens it at its first spill
    if (d.usable || d.on_tmpfs || d.foreign) return true;
    if (!fits(d.why_needed, sizeof why)) return v->mode = StartMode::engine_judges, false;
    int n = snprintf(v->message, StartVerdict::kMessageCap, "%s: key 'spill.dir': %s", s.source, why);
    v->mode = fits((size_t)n, StartVerdict::kMessageCap) ? StartMode::refused : StartMode::engine_judges;
    return false;
}

// The variables as they are now, copied: a program may overwrite its
// initial environment in place later (setproctitle does, to show a longer
// process title), and the engine may start much later. false: none is set.
bool snapshot_variables(StartRequest *req, const char *found[kFound]) {
    const char *values[kSettingVariableCount + 1];
    size_t total = 0;
    bool any = false;
    for (size_t i = 0; i <= kSettingVariableCount; i++) {
        const char *v = found[i];
        values[i] = v && *v ? v : nullptr;
        if (values[i]) total += strlen(values[i]) + 1;
        any = any || (values[i] && i < kSettingVariableCount);
    }
    char *copy = total ? (char *)start_keep(total) : nullptr; // kept for the process's life
    for (size_t i = 0; i <= kSettingVariableCount; i++) {
        const char *v = values[i];
        if (v && copy) {
            size_t n = strlen(v) + 1;
            v = (const char *)memcpy(copy, v, n);
            copy += n;
        }
        if (i < kSettingVariableCount) req->env[i] = v;
        else req->on_error = v;
    }
    return any;
}

} // namespace

// The refusal's message (StartVerdict::message): written only when a
// setting is refused, so it stays off the pages start-up touches (.lbss:
// after the front's other variables).
char g_refusal[StartVerdict::kMessageCap] __attribute__((section(".lbss")));

void judge_settings_at_start(StartRequest *req, StartVerdict *v) {
    v->message = g_refusal;
    const char *found[kFound];
    find_variables(found);
    bool any = snapshot_variables(req, found);
    req->judged = true; // unless the engine must start now (below)
    v->mode = StartMode::defaults;
    v->threshold = kDefaultThreshold;
    v->derive_threshold = true;
    if (!any) return;

    const char *config = req->env[kConfig];
    if (config) read_config(config, req);
    if (judged_by_runner(req, v, found[kChecked])) {
        v->mode = StartMode::judged;
        return;
    }

    // Judged here, or by the engine now.
    v->mode = StartMode::engine_judges;
    req->judged = false;
    SimpleSettings s;
    void *storage = nullptr; // stays nullptr: the entry is read into start_keep memory, never freed
    if (config) {
        char engine[512]; // longer: the engine judges (check_named_dir says why not PATH_MAX)
        ConfigVerdict c;
        if (!req->config_text || engine_file_path(engine, sizeof engine) >= sizeof engine ||
            !engine_identity(engine, &req->engine))
            return;
        char cache[64];
        verdict_cache_dir(cache, sizeof cache);
        if (!verdict_cache_lookup(cache, req->engine, req->config_text, req->config_len, &c, &storage,
                                  start_keep)) {
            req->store_verdict = true;
            return;
        }
        s.source = config;
        s.threshold = c.threshold;
        s.threshold_origin = c.threshold_given ? ThresholdOrigin::config : ThresholdOrigin::not_given;
        s.policy = c.policy;
        s.log_level = c.log_level;
        s.spill_dir = c.spill_dir_given ? c.spill_dir : nullptr;
        s.spill_dir_given = c.spill_dir_given;
        s.allow_tmpfs = c.allow_tmpfs;
        s.log_file = c.log_file;
        s.stats_file = c.stats_file;
        s.stats_run = c.stats_run;
    }
    size_t needed = 0;
    // First with no room: good variables (the usual case) then write
    // nothing into the message's buffer, whose page start-up otherwise
    // never touches; a refusal asks again for its words.
    if (!apply_env_overrides(&s, request_lookup, req, nullptr, 0, &needed)) {
        apply_env_overrides(&s, request_lookup, req, v->message, StartVerdict::kMessageCap, &needed);
        if (fits(needed, StartVerdict::kMessageCap)) v->mode = StartMode::refused;
        return;
    }
    if (!open_log(s, v) || !check_named_dir(s, v)) {
        if (v->log_fd > 2) close(v->log_fd);
        v->log_fd = 2;
        return;
    }
    v->mode = StartMode::judged;
    v->threshold = s.threshold;
    v->derive_threshold = s.threshold_origin == ThresholdOrigin::not_given;
    v->level = s.log_level;
    v->stats_file = *s.stats_file ? s.stats_file : nullptr;
    v->stats_run = *s.stats_run ? s.stats_run : nullptr;
    req->judged = true;
    req->log_fd = v->log_fd > 2 ? v->log_fd : -1;
}

} // namespace spillway
