// stats_run.h — the run tag (`[stats] run`, SPILLWAY_STATS_RUN): a word
// the shim writes into every stats line as "run", so that a reader of a
// stats file several jobs append to (`spillway run` with a shared
// `[stats] file`) keeps its own job's lines and no other's, by what each
// line says rather than by when it was written.
//
// Letters, digits and . _ - / only: the tag is written into the line
// without escaping (the front does so before main, with no JSON quoting
// of its own), and '/' lets a `spillway run` nested in another extend the
// outer run's tag ("outer/inner") so that the outer run still counts the
// inner job's lines as its own.
//
// Invariant: header-only over libc, no allocation (the front includes it);
// the config parser and the environment's check take the same rule.
#pragma once

#include <cstddef>

namespace spillway {

constexpr size_t kStatsRunMax = 256;

// What a bad tag gets told, after "got ...": one rule for both sources.
constexpr const char kStatsRunExpected[] =
    "expected at most 256 letters, digits, '.', '_', '-' or '/' (a tag that marks this job's lines in the stats file)";

inline bool stats_run_char_ok(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-' || c == '/';
}

// An empty tag is no tag (the lines then carry none), as an empty
// stats.file is no file.
inline bool stats_run_ok(const char *text, size_t len) {
    if (len > kStatsRunMax) return false;
    for (size_t i = 0; i < len; i++)
        if (!stats_run_char_ok(text[i])) return false;
    return true;
}

} // namespace spillway
