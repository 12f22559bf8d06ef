// config.h — the job's settings: documented defaults, then the TOML file
// named by SPILLWAY_CONFIG, then single-setting environment overrides.
//
// Invariant: load_settings either fills every field or returns one line that
// names the file, line, key and what was expected. It never half-applies a
// bad file and never exits; the caller decides (the shim exits, the CLI
// prints).
#pragma once

#include "config_error.h"
#include "log.h"
#include "setting_names.h"
#include "threshold.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace spillway {

// Policy and its words: setting_names.h (the front reads them too).
const char *policy_name(Policy p);
bool parse_policy(std::string_view text, Policy &out);

enum class Access { unknown, sequential, random };
const char *access_name(Access a);

// One [[rule]]: first match wins. Empty globs match anything.
struct Rule {
    std::string match;  // glob against function names of the captured frames
    std::string module; // glob against the object file's base name
    std::string python; // glob against "relpath:qualname[:line]" of the Python frames
    Policy policy = Policy::auto_;
    Access access = Access::unknown; // optional hint: sets advice and auto's choice
    int line = 0;
};

// The default spill directory: one per user, /var/tmp/spillway-<euid>, so
// that no user's directory can stand in another's way.
std::string default_spill_dir();

// [tiering]: moving live regions between disk and memory in place
// (shim/engine/tiering/tiering.h says when and why).
struct TierSettings {
    bool enabled = true;
    uint64_t min_size = 64ull << 20;      // smaller regions never move
    uint64_t promote_rate = 1ull << 30;   // bytes per second of promotions, at most
    unsigned interval_ms = 100;           // how often the controller looks
    unsigned cooldown_ms = 10000;         // before a moved region may move again (doubles each time)
    uint64_t demote_margin = 128ull << 20; // demote when unreclaimable usage is this close to the limit
    unsigned horizon_ms = 500;            // ...or would be at the current growth rate within this
};

// python.arenas: "auto" (in spill chunks under a memory limit), "always", "never".
enum class PythonArenas { auto_, always, never };
const char *python_arenas_name(PythonArenas a);

struct Settings {
    std::string source = "(defaults)";
    uint64_t threshold = kDefaultThreshold;
    // not_given: the engine derives it from the memory limit at start-up
    // (derived_threshold.h); threshold then holds the default until it does.
    ThresholdOrigin threshold_origin = ThresholdOrigin::not_given;
    Policy policy = Policy::auto_;
    std::string spill_dir = default_spill_dir();
    // Named by spill.dir or SPILLWAY_DIR: a bad directory is then the user's
    // to fix (exit 78); a refused default falls back to a private directory.
    bool spill_dir_given = false;
    bool allow_tmpfs = false;
    uint64_t dedicated_min = 256ull << 20;
    uint64_t memory_reserve = 256ull << 20;
    LogLevel log_level = LogLevel::warn;
    std::string log_file;
    std::string stats_file;
    // Written into every stats line as "run" (stats_run.h); empty: none.
    std::string stats_run;
    std::string profile_file;
    bool callsites = true;
    unsigned callsite_depth = 12;
    unsigned python_depth = 4; // innermost Python frames per site; 0: native only
    bool learn = true;
    // Learning also probes regions whose every page is mapped (page_probes.h).
    bool learn_probe = true;
    bool shm_redirect = true;
    // A fork child gets a snapshot of the regions it inherits (the parent's
    // view private until the child ends: large/fork_snapshot.h); false: the
    // child sees the parent's later writes and frees (docs/limitations.md).
    bool fork_snapshot = true;
    uint64_t shm_min = 64ull << 20;
    // [python] arenas: where CPython's object arenas (its small objects, 1
    // MiB at a time) live (large/block_zone.h, engine/python_arenas.cpp).
    PythonArenas python_arenas = PythonArenas::auto_;
    TierSettings tiering;
    std::vector<Rule> rules;
};

// Reads environment variables through getenv unless a lookup is given (tests).
using EnvLookup = std::function<const char *(const char *)>;

// What load_settings reads the config from, and what else it hands back.
struct LoadOptions {
    // The text of the file SPILLWAY_CONFIG names, already read (the front
    // read it at start-up, so the engine parses the very bytes that were
    // judged); nullptr: read the file.
    const std::string_view *config_text = nullptr;
    std::string *text_out = nullptr;  // the text parsed (`spillway run` hashes it, settings_check.h)
    Settings *file_settings = nullptr; // the defaults and the file, before the variables (verdict_cache.h)
};

// Returns std::nullopt on success, else the one-line error.
std::optional<std::string> load_settings(Settings &out, const EnvLookup &env = nullptr,
                                         const LoadOptions &opts = {});

// The file SPILLWAY_CONFIG names, whole (at most 16 MiB); else the one-line error.
std::optional<std::string> read_config_file(const char *path, std::string &out);

// Parses TOML text as if read from `source` (used by load_settings and tests).
std::optional<std::string> parse_config_text(std::string_view text, const std::string &source,
                                             Settings &out);

// The effective settings, as a TOML document (spillway check prints it).
std::string describe_settings(const Settings &s);

// The one line the shim prints for a bad config (the CLI prints the same).
// continuing: SPILLWAY_ON_ERROR=continue is set and the job runs unprotected.
// (The words and the status are config_error.h's.)
std::string config_error_line(const std::string &message, bool continuing);

} // namespace spillway
