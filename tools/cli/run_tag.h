// run_tag.h — the tag `spillway run` gives its job, so that it can tell its
// job's stats lines from other jobs' in a stats file they share (a
// configured `[stats] file` such as /var/log/spillway.jsonl), by what each
// line says ("run", shim/common/stats_run.h) rather than by when it came.
//
// A fresh tag is 128 random bits in hex. A run given a tag already (its
// settings name one: the user's `[stats] run`, or SPILLWAY_STATS_RUN set
// by an outer `spillway run`) extends it, "outer/fresh", so the outer run
// still finds the inner job's lines as its own.
//
// Invariant: a line belongs to a run when its tag is the run's tag or
// starts with it and a '/'; two fresh tags never match each other.
#pragma once

#include <string>

namespace spillway::cli {

struct RunTag {
    std::string tag;   // for SPILLWAY_STATS_RUN
    std::string error; // one line, when no tag could be made
};

// given: the tag the settings name already ("" for none), already valid.
RunTag new_run_tag(const std::string &given);

// Whether a line carrying line_tag is of the run tagged run_tag.
bool tag_is_of_run(const std::string &line_tag, const std::string &run_tag);

} // namespace spillway::cli
