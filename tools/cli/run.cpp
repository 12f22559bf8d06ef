// run.cpp — `spillway run [options] -- COMMAND...`: run a command under the
// shim and summarise what it did.
//
// Invariants, in the order they act:
//  1. The config is judged first, by the shim's own code: a bad one stops
//     here with the shim's exact line and exit 78, before anything runs.
//  2. The spill directory is created and cleared of stale spillway files
//     once, here, for the whole process tree; SPILLWAY_PREPARED in the
//     child's environment tells every process of the tree it was done.
//  3. The child keeps the user's LD_PRELOAD entries, with libspillway first.
//  4. The command's exit status passes through unchanged (128+N for signal
//     N), so `spillway run` can wrap any command in any script.
//  5. The summary is printed to stderr, never stdout, so it cannot corrupt
//     the command's output.
#include "child_config.h"
#include "child_process.h"
#include "cli.h"
#include "commands.h"
#include "library_locator.h"
#include "preload_env.h"
#include "recorder.h"
#include "run_tag.h"
#include "settings_check.h"
#include "settings_source.h"
#include "size_parse.h"
#include "spill_dir_checks.h"
#include "spill_dir_prepare.h"
#include "stats_collect.h"
#include "stats_summary.h"
#include "system_libraries.h"

#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sys/prctl.h>
#include <unistd.h>

extern char **environ;

namespace spillway::cli {

static const char kRunHelp[] =
    "usage: spillway run [options] [--] COMMAND [ARGS...]\n\n"
    "Runs COMMAND with libspillway.so preloaded, so its large allocations go to\n"
    "reserved spill files (reclaimable page cache) instead of anonymous memory.\n"
    "Existing LD_PRELOAD entries are kept. The config is validated first; the spill\n"
    "directory is created and cleared of stale spillway files once for the whole\n"
    "process tree. At the end a short summary (regions and bytes by backing,\n"
    "fallbacks, peak) goes to stderr.\n\n"
    "options:\n"
    "  -c, --config FILE     TOML config (default: $SPILLWAY_CONFIG, else built-in defaults)\n"
    "      --dir DIR         spill directory (overrides spill.dir; an absolute path)\n"
    "      --threshold SIZE  smallest allocation routed, e.g. 64MiB (overrides threshold)\n"
    "      --policy P        disk, memory, anon or auto (overrides policy)\n"
    "  -q, --quiet           no summary\n"
    "      --record FILE     sample the job while it runs (processes, regions, cgroup)\n"
    "                        into FILE as JSON lines; 'spillway report FILE' sums it up\n"
    "      --record-interval SECS  between samples (default 1; 0.1 to 60)\n"
    "  -h, --help            this text\n\n"
    "libspillway.so is looked for in $SPILLWAY_LIBRARY, next to this program in the\n"
    "build tree, then in the installed library directory (a wheel's tool: in the\n"
    "wheel only). The libraries it loads from the system (libmimalloc.so.2,\n"
    "libunwind.so.8) are checked first.\n\n"
    "exit status: COMMAND's own status; 128+N when it was killed by signal N; 127\n"
    "command not found; 126 not executable; 78 bad config; 1 spillway failed before\n"
    "running COMMAND; 2 usage error.\n";

namespace {

struct RunOptions {
    EnvOverlay overlay;
    bool quiet = false;
    std::string record_path;
    double record_interval = 1.0;
    std::vector<std::string> command;
};

std::string absolute_path(const std::string &path) {
    char buf[PATH_MAX];
    return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// Returns -1 when parsing succeeded, else the exit status to return.
int parse_run_options(const Args &args, RunOptions &out) {
    Options o("run", args);
    while (o.at_option()) {
        if (o.flag("--help", "-h")) {
            std::cout << kRunHelp;
            return kExitOk;
        }
        if (o.flag("--quiet", "-q")) {
            out.quiet = true;
        } else if (auto v = o.value("--config", "-c")) {
            // Absolute, so a child that changes directory still finds it.
            if (o.error().empty()) out.overlay.values["SPILLWAY_CONFIG"] = absolute_path(*v);
        } else if (auto v = o.value("--dir")) {
            if (o.error().empty() && (v->empty() || (*v)[0] != '/'))
                return usage_error("run", "--dir needs an absolute directory path, got \"" + *v + "\"");
            out.overlay.values["SPILLWAY_DIR"] = *v;
        } else if (auto v = o.value("--threshold")) {
            uint64_t bytes;
            std::string err;
            if (o.error().empty() && !parse_size(*v, bytes, err))
                return usage_error("run", "--threshold: " + err);
            out.overlay.values["SPILLWAY_THRESHOLD"] = *v;
        } else if (auto v = o.value("--record")) {
            if (o.error().empty() && v->empty()) return usage_error("run", "--record needs a file name");
            out.record_path = *v;
        } else if (auto v = o.value("--record-interval")) {
            char *end = nullptr;
            out.record_interval = strtod(v->c_str(), &end);
            if (o.error().empty() && (v->empty() || *end || !(out.record_interval >= 0.1 && out.record_interval <= 60)))
                return usage_error("run", "--record-interval needs seconds between 0.1 and 60, got \"" + *v + "\"");
        } else if (auto v = o.value("--policy")) {
            Policy p;
            if (o.error().empty() && !parse_policy(*v, p))
                return usage_error("run", "--policy: expected disk, memory, anon or auto, got \"" + *v + "\"");
            out.overlay.values["SPILLWAY_POLICY"] = *v;
        } else {
            return usage_error("run", "unknown option " + o.peek() + " (put '--' before the command)");
        }
        if (!o.error().empty()) return usage_error("run", o.error());
    }
    out.command = o.rest();
    if (out.command.empty()) return usage_error("run", "no command given; try: spillway run -- python3 train.py");
    return -1;
}

std::vector<std::string> child_environment(const std::map<std::string, std::string> &set) {
    std::vector<std::string> env;
    for (char **e = environ; *e; e++) {
        std::string entry = *e;
        std::string name = entry.substr(0, entry.find('='));
        if (!set.count(name)) env.push_back(entry);
    }
    for (const auto &[name, value] : set) env.push_back(name + "=" + value);
    return env;
}

// The settings are judged (above): SPILLWAY_CHECKED lets every process of
// the tree whose settings are still exactly these start the shim's engine
// at its first use instead of judging them again (shim/common/settings_check.h).
void mark_settings_judged(const Settings &settings, const std::string &config_text,
                          std::map<std::string, std::string> &child_env) {
    auto lookup = [](void *ctx, const char *name) -> const char * {
        auto *env = static_cast<std::map<std::string, std::string> *>(ctx);
        auto it = env->find(name);
        return it != env->end() ? it->second.c_str() : getenv(name);
    };
    uint64_t hash = settings_hash(lookup, &child_env, config_text.data(), config_text.size());
    char marker[80];
    // 0: no threshold given; the shim derives it in the job's own cgroup.
    uint64_t threshold = settings.threshold_origin == ThresholdOrigin::not_given ? 0 : settings.threshold;
    format_checked(marker, sizeof marker, threshold, static_cast<int>(settings.log_level), hash);
    child_env[kCheckedMarker] = marker;
}

bool continuing_on_error() {
    const char *mode = getenv("SPILLWAY_ON_ERROR");
    return mode && strcmp(mode, "continue") == 0;
}

int report_exec_failure(const ChildOutcome &outcome, const std::string &command) {
    if (outcome.exec_error == ENOENT)
        fail("run", "cannot run '" + command + "': command not found (check the name and PATH)");
    else
        fail("run", "cannot run '" + command + "': " + strerror(outcome.exec_error) +
                        " (check that it is an executable file for this machine and that you may run it)");
    return outcome.status;
}

void report_signal(const ChildOutcome &outcome, const std::string &command) {
    std::string line = "'" + command + "' was killed by signal " + std::to_string(outcome.signal) + " (" +
                       (sigabbrev_np(outcome.signal) ? std::string("SIG") + sigabbrev_np(outcome.signal)
                                                      : std::string("unknown")) + ")";
    if (outcome.signal == SIGKILL)
        line += "; SIGKILL is often the OOM killer: check `dmesg` or the cgroup's memory.events";
    if (outcome.signal == SIGBUS)
        line += "; SIGBUS on a file mapping means an unreserved page: please report it";
    std::cerr << "spillway run: " << line << "\n";
}

// The command runs unprotected (SPILLWAY_ON_ERROR=continue), as the shim would.
int run_without_shim(const std::vector<std::string> &command) {
    ChildOutcome outcome = run_child(command, child_environment({}));
    if (outcome.exec_error) return report_exec_failure(outcome, command[0]);
    return outcome.status;
}

} // namespace

int run_command(const Args &args) {
    RunOptions opts;
    if (int status = parse_run_options(args, opts); status >= 0) return status;

    Settings settings;
    std::string config_text; // the bytes judged: the marker names them (settings_check.h)
    if (auto err = load_effective_settings(settings, opts.overlay, &config_text)) {
        std::cerr << config_error_line(*err, continuing_on_error()) << "\n";
        return continuing_on_error() ? run_without_shim(opts.command) : kConfigErrorExit;
    }

    LibrarySearch library = locate_library();
    if (library.found.empty()) {
        if (!library.error.empty()) return fail("run", library.error);
        std::string tried;
        for (const std::string &t : library.tried) tried += (tried.empty() ? "" : ", ") + t;
        return fail("run", "cannot find libspillway.so (looked for " + tried +
                               "); build it (tools/build.sh) or set SPILLWAY_LIBRARY=/path/to/libspillway.so");
    }

    // Before anything is prepared: a library the loader would not find is
    // one line naming its package (system_libraries.h).
    for (const LibraryProblem &problem : missing_system_libraries()) {
        if (!problem.library->required) {
            warn("run", describe(problem));
        } else if (continuing_on_error()) {
            warn("run", describe(problem) + "; running without the shim (SPILLWAY_ON_ERROR=continue)");
            return run_without_shim(opts.command);
        } else {
            return fail("run", describe(problem));
        }
    }

    std::map<std::string, std::string> child_env = opts.overlay.values;
    // Nested inside a tree that is already prepared (a `spillway run` under
    // another), clearing again would delete a sibling's fresh exports.
    const char *outer_marker = getenv(kPreparedMarker);
    PreparedDir prepared = prepare_spill_dir(settings, /*remove_stale=*/!outer_marker);
    if (spill_dir_is_fatal(settings, prepared.dir)) {
        std::string message = settings.source + ": key 'spill.dir': " + prepared.dir.why_unusable;
        std::cerr << config_error_line(message, continuing_on_error()) << "\n";
        return continuing_on_error() ? run_without_shim(opts.command) : kConfigErrorExit;
    }
    if (prepared.dir.usable) {
        child_env[kPreparedMarker] = outer_marker ? outer_marker : std::to_string(getpid());
        if (prepared.removed && !opts.quiet)
            std::cerr << "spillway run: removed " << prepared.removed << " stale spillway file(s) from "
                      << prepared.dir.path << "\n";
        for (const std::string &k : prepared.kept) warn("run", "could not remove stale file " + k + " (the job runs; remove it by hand to free its disk space)");
    }

    // Every stats line of the job carries this tag, so that other jobs'
    // lines in a stats file they share are told apart (run_tag.h).
    RunTag tag = new_run_tag(settings.stats_run);
    if (!tag.error.empty()) return fail("run", tag.error);
    const char *user_config = opts.overlay.lookup("SPILLWAY_CONFIG");
    ChildConfig config = compose_child_config(settings, user_config ? user_config : "", config_text);
    if (!config.error.empty()) return fail("run", config.error);
    if (!config.config_path.empty()) child_env["SPILLWAY_CONFIG"] = config.config_path;
    if (!config.stats_pattern.empty()) child_env["SPILLWAY_STATS"] = config.stats_pattern;
    // A variable, not a key in the child's config: the user's own config
    // (their [stats] file) is handed over unchanged, and a shim older than
    // the tag ignores a variable it does not know but would refuse the key.
    child_env["SPILLWAY_STATS_RUN"] = tag.tag;
    child_env["LD_PRELOAD"] = compose_ld_preload(library.found, getenv("LD_PRELOAD"));
    mark_settings_judged(settings, config.text, child_env);

    Recorder recorder;
    if (!opts.record_path.empty()) {
        std::string error;
        if (!recorder.open(opts.record_path, opts.record_interval, opts.command, error)) {
            remove_child_config(config);
            return fail("run", error);
        }
    }
    // Recording: the job's orphans (a process whose parent exited, a
    // daemonising double fork) are reparented to this process instead of
    // init, so they stay in the sampled tree (rooted here); the wait loop
    // reaps them (child_process.cpp).
    bool recording = !opts.record_path.empty();
    if (recording) prctl(PR_SET_CHILD_SUBREAPER, 1);
    // Our private file holds only the job's lines; a configured one may
    // hold other jobs' too, told apart by the tag.
    StatsCollector stats(config.stats_pattern, config.stats_are_ours ? "" : tag.tag);
    stats.mark_start();
    ChildOutcome outcome = run_child(opts.command, child_environment(child_env),
                                     [&recorder](pid_t) { recorder.start(getpid()); });
    CollectedStats collected = stats.new_lines();
    const std::vector<std::string> &stats_lines = collected.lines;
    recorder.finish(stats_lines, outcome.status, outcome.signal);
    if (outcome.exec_error) {
        remove_child_config(config);
        return report_exec_failure(outcome, opts.command[0]);
    }
    if (outcome.signal) report_signal(outcome, opts.command[0]);
    if (!opts.quiet) {
        StatsSummary summary = summarize_stats(stats_lines);
        std::string where = config.stats_are_ours ? "spill dir " + prepared.dir.path
                                                  : "stats in " + config.stats_pattern;
        for (const std::string &line : render_summary(summary, where)) std::cerr << line << "\n";
        if (collected.fell_back)
            std::cerr << "spillway:   warning: no line in " << config.stats_pattern
                      << " carries this run's tag (the shim predates it?), so these figures count every untagged "
                         "line appended during the run, other jobs' included; use the libspillway.so built with "
                         "this tool, or a stats file of this job's own\n";
    }
    remove_child_config(config);
    return outcome.status;
}

} // namespace spillway::cli
