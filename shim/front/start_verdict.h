// start_verdict.h — what the front decides about the job's settings before
// main: a bad setting must stop the job with one line and exit 78 before
// it runs (DESIGN.md), yet loading the engine (libstdc++, the TOML parser)
// to judge them doubles the start-up of a small process, and settings in a
// container's environment (a Dockerfile's ENV, a pod spec) reach every
// process of it, every shell command of an entry script included.
//
// So the front judges what it can itself, with the engine's own rules
// (common/, in C-compatible C++: env_overrides.h, spill_dir_check.h):
//  * no setting given: the defaults, which cannot be wrong;
//  * SPILLWAY_CHECKED names exactly these settings and config text:
//    `spillway run` judged them (settings_check.h);
//  * otherwise: the variables (SPILLWAY_THRESHOLD, _POLICY, _LOG, _DIR,
//    _STATS); a config file by its verdict in this user's cache
//    (verdict_cache.h: the same bytes, judged by the same engine file);
//    the log file a config names, opened; and a spill directory the job
//    named, when a refusal would stop it (a disk policy): made if missing,
//    refused if a symlink, not a directory, writable by others, not
//    writable (spill_dir_check.h). That is every check that can stop the
//    job; what only warns (the default directory taken by another user, a
//    tmpfs directory, another user's directory after a uid change) is said
//    by the engine when it starts, once, at the first large allocation.
// What the front cannot judge (a config file the cache does not know: its
// first run, an edit, a new engine; a value too long for its buffers) the
// engine judges, loaded before main as it always was; a good config's
// verdict is then stored for the next process.
//
// Invariant: libc and mimalloc only; the message of a refusal is the
// engine's, word for word (the same code makes it).
#pragma once

#include "engine_api.h"
#include "log.h"

#include <climits>
#include <cstdint>

namespace spillway {

enum class StartMode {
    defaults,      // nothing given: the engine starts at its first use, with the defaults
    judged,        // judged before main: the engine starts at its first use
    engine_judges, // the engine must start now, before main, and judge
    refused,       // a bad setting: message says which
};

struct StartVerdict {
    StartMode mode = StartMode::defaults;
    uint64_t threshold = 0;   // judged: the large path starts here
    // No threshold given: it is derived from the memory limit at the first
    // allocation of at least kDerivedThresholdFloor (derived_threshold.h);
    // threshold is the default meanwhile.
    bool derive_threshold = true;
    LogLevel level = LogLevel::warn;
    int log_fd = 2;
    const char *stats_file = nullptr; // judged: this process's line should the engine never start
    const char *stats_run = nullptr;  // ...and the run tag it carries (stats_run.h); nullptr: none
    // refused: the config error (after "spillway: config error: "), in a
    // static buffer (judge_settings_at_start points this at it): on the
    // stack, its 8.7 KiB put the constructor's calls two pages deeper than
    // the loader had gone, a fresh stack page (3-7 us) each.
    static constexpr size_t kMessageCap = 2 * PATH_MAX + 512;
    char *message = nullptr;
};

// Fills the request the engine will start with (the variables as they are
// now, the config file's text) and says what to do with it.
void judge_settings_at_start(StartRequest *request, StartVerdict *verdict);

} // namespace spillway
