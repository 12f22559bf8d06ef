// check.cpp — `spillway check [CONFIG]`: validate a config the way the shim
// will, and print the effective settings with every default filled in.
//
// Invariants: the verdict comes from the shim's own load_settings, so a
// config passes here exactly when the shim would start with it; a bad one
// prints exactly config_error_line(message, false), the line the shim
// prints, and exits kConfigErrorExit (78). Nothing is created or changed.
// stdout is valid TOML (notes are comments), so the output can itself be
// used as a config.
#include "cli.h"
#include "commands.h"
#include "derived_threshold.h"
#include "profile.h"
#include "settings_source.h"
#include "spill_dir_checks.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway::cli {

static const char kCheckHelp[] =
    "usage: spillway check [--ignore-env] [CONFIG]\n\n"
    "Validates CONFIG (default: the file named by SPILLWAY_CONFIG, else the built-in\n"
    "defaults) with the shim's own parser, then prints the effective settings as TOML,\n"
    "every default filled in. The SPILLWAY_DIR, SPILLWAY_THRESHOLD, SPILLWAY_POLICY and\n"
    "SPILLWAY_LOG environment variables override single settings, as in the shim.\n\n"
    "It also checks, without creating anything, that the spill directory and the log\n"
    "file would be usable, and that a learned profile (if any) parses.\n\n"
    "options:\n"
    "  --ignore-env   judge the file alone, ignoring SPILLWAY_* environment variables\n"
    "  -h, --help     this text\n\n"
    "exit status: 0 valid; 78 invalid (one line on stderr, the same the shim prints);\n"
    "2 usage error.\n";

// The log file is opened (created, appended) at start-up; failure stops the job.
static std::optional<std::string> log_file_problem(const Settings &s) {
    if (s.log_file.empty()) return std::nullopt;
    if (access(s.log_file.c_str(), F_OK) == 0) {
        if (access(s.log_file.c_str(), W_OK) != 0)
            return s.source + ": key 'log.file': cannot open " + s.log_file + " (" + strerror(errno) +
                   "); point log.file at a writable file, or set it to \"\" to log to stderr";
        return std::nullopt;
    }
    size_t slash = s.log_file.find_last_of('/');
    std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : s.log_file.substr(0, slash);
    if (access(parent.c_str(), W_OK | X_OK) != 0)
        return s.source + ": key 'log.file': cannot open " + s.log_file + " (" + strerror(errno) +
                   "); point log.file at a writable file, or set it to \"\" to log to stderr";
    return std::nullopt;
}

// A broken profile only costs what was learned (the shim warns), so a warning.
static void warn_about_profile(const Settings &s) {
    if (s.profile_file.empty()) return;
    std::ifstream in(s.profile_file);
    if (!in) return; // nothing learned yet; the first run writes it
    std::stringstream text;
    text << in.rdbuf();
    std::vector<ProfileEntry> entries;
    std::string error;
    if (!profile_parse(text.str(), s.profile_file, entries, error)) warn("check", error);
}

int check_command(const Args &args) {
    Options o("check", args);
    EnvOverlay overlay;
    while (o.at_option()) {
        if (o.flag("--help", "-h")) {
            std::cout << kCheckHelp;
            return kExitOk;
        }
        if (o.flag("--ignore-env")) {
            overlay.ignore_process_env = true;
            continue;
        }
        return usage_error("check", "unknown option " + o.peek());
    }
    Args positional = o.rest();
    if (positional.size() > 1) return usage_error("check", "expected one CONFIG, got " +
                                                               std::to_string(positional.size()));
    if (positional.size() == 1) overlay.values["SPILLWAY_CONFIG"] = positional[0];

    Settings s;
    if (auto err = load_effective_settings(s, overlay)) {
        std::cerr << config_error_line(*err, false) << "\n";
        return kConfigErrorExit;
    }
    std::string dir_note;
    SpillDir dir = inspect_spill_dir(s, dir_note);
    if (spill_dir_is_fatal(s, dir)) {
        std::cerr << config_error_line(s.source + ": key 'spill.dir': " + dir.why_unusable, false) << "\n";
        return kConfigErrorExit;
    }
    if (auto err = log_file_problem(s)) {
        std::cerr << config_error_line(*err, false) << "\n";
        return kConfigErrorExit;
    }
    bool needs_disk = policy_needs_disk(s.policy);
    if (needs_disk && spill_dir_falls_back(dir, s.spill_dir_given))
        warn("check", dir.why_unusable + "; the shim will spill to a new private directory (" +
                          kPrivateSpillBase + "/spillway-" + std::to_string(geteuid()) +
                          ".XXXXXX) instead");
    else if (!dir.usable && !dir.why_unusable.empty())
        warn("check", dir.why_unusable + "; large allocations will fall back to " +
                          (needs_disk ? "anonymous memory" : "their policy"));
    warn_about_profile(s);

    std::cout << describe_settings(s);
    if (s.threshold_origin == ThresholdOrigin::not_given) { // what a job in this cgroup would get
        uint64_t limit = read_memory_limit("");
        char origin[160];
        describe_threshold_origin(origin, sizeof origin, ThresholdOrigin::not_given, limit);
        std::cout << "# threshold in this cgroup: " << format_size(threshold_for_limit(limit)) << " (" << origin
                  << ")\n";
    }
    std::cout << "\n# spillway check: valid";
    std::string env = active_env_overrides(overlay);
    if (!env.empty()) std::cout << "; environment overrides applied: " << env;
    std::cout << "\n";
    if (!dir_note.empty()) std::cout << "# note: " << dir_note << "\n";
    if (dir.usable && dir_note.empty()) std::cout << "# spill directory filesystem: " << filesystem_name(dir.path) << "\n";
    return kExitOk;
}

} // namespace spillway::cli
