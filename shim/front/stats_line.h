// stats_line.h — the stats line of a process whose settings were judged
// but whose engine never started (it allocated nothing large): the line
// the engine would have written at exit, every count zero, so a summary
// that counts processes by their lines (`spillway run`) counts this one.
//
// Invariant: libc only; the same keys, in the same order, as the engine's
// stats_json (engine/stats/stats.cpp), named from stats_format.h.
#pragma once

namespace spillway {

// Before main, when the settings name a stats file: keeps the command line
// (argv, null-terminated, as glibc hands it to constructors) for the line.
void keep_command_line(const char *const *argv);

// pattern: the stats file ("%p" = the pid), as the settings give it; run:
// the run tag (stats_run.h, checked by the settings' judge), or nullptr.
void write_empty_stats_line(const char *pattern, const char *run);

} // namespace spillway
