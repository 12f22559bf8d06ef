// env_overrides.h — the rules for the single-setting variables
// (SPILLWAY_DIR, SPILLWAY_STATS, SPILLWAY_STATS_RUN, SPILLWAY_THRESHOLD, SPILLWAY_POLICY,
// SPILLWAY_LOG) over the settings a config gave: the one implementation
// the engine's load_settings (config.cpp), the tool and the front run. The
// front judges these at start-up without loading the engine (libstdc++, the
// TOML parser), so a bad one still stops the job before it runs for the
// price of a few comparisons (front/start_verdict.h).
//
// Invariant: no allocation, no exception, no libstdc++; the first bad
// variable, in load_settings' order, gives the one line the engine would
// print, word for word.
#pragma once

#include "setting_names.h"
#include "threshold.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

// What the environment may override, and what start-up must know of the
// rest to judge the job (the spill directory's check, the log file): the
// defaults, or a config file's values (verdict_cache.h). Strings are
// borrowed, never owned.
struct SimpleSettings {
    const char *source = "(defaults)"; // the config file's path, else "(defaults)"
    uint64_t threshold = kDefaultThreshold;
    ThresholdOrigin threshold_origin = ThresholdOrigin::not_given;
    Policy policy = Policy::auto_;
    LogLevel log_level = LogLevel::warn;
    const char *spill_dir = nullptr; // nullptr: the default, /var/tmp/spillway-<euid>
    bool spill_dir_given = false;    // named by spill.dir or SPILLWAY_DIR (spilldir.h)
    bool allow_tmpfs = false;
    const char *log_file = "";
    const char *stats_file = "";
    const char *stats_run = ""; // stats_run.h
};

// Returns the variable's value, or nullptr; an empty value counts as unset.
using SettingLookup = const char *(*)(void *ctx, const char *name);

// Applies the variables to s, then checks what they set as load_settings'
// validate() does (an absolute spill directory). On the first bad one
// returns false with the message (what follows "spillway: config error: ")
// in message[0..cap), cut if it did not fit; *needed is its whole length,
// so a caller whose buffer was too small can tell (and ask again).
bool apply_env_overrides(SimpleSettings *s, SettingLookup lookup, void *ctx, char *message, size_t cap,
                         size_t *needed);

} // namespace spillway
