// stats_collect.h — the stats lines a run produced, and only those.
//
// The shim appends one JSON line per process to `[stats] file` at exit
// ("%p" in the name gives each process its own file). A configured file may
// already hold earlier runs' lines, so the collector notes every matching
// file's size before the run and afterwards reads only what was appended.
// Other jobs may append to a configured file during the run too: given the
// run's tag (run_tag.h), the collector keeps only the lines that carry it.
//
// A shim older than the tag writes no "run" into its lines. When no line
// appended during the run carries this run's tag but some carry none, the
// collector keeps those untagged lines (what every run counted before the
// tag) and says so (fell_back), for the summary to warn that other jobs'
// lines may be among them. A line tagged for another run is never kept.
//
// Invariant: lines written before mark_start() are never reported; with a
// tag, a line carrying another run's tag is never reported.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace spillway::cli {

struct CollectedStats {
    std::vector<std::string> lines;
    bool fell_back = false; // untagged lines kept: none carried this run's tag
    size_t left_out = 0;    // lines appended during the run that are not this run's
};

class StatsCollector {
  public:
    // run_tag: keep only the lines of this run (run_tag.h); empty: every
    // appended line is this run's (a private file only its job writes).
    explicit StatsCollector(std::string pattern, std::string run_tag = "");
    void mark_start();
    CollectedStats new_lines() const;
    // Where the lines are, for the summary ("/tmp/x/stats.jsonl" or the pattern).
    const std::string &pattern() const { return pattern_; }

  private:
    std::map<std::string, long long> matching_files() const; // path -> size
    std::string pattern_;
    std::string run_tag_;
    std::map<std::string, long long> before_;
};

// The lines of the run tagged run_tag among lines appended during it, as
// new_lines() chooses them (for tests).
CollectedStats lines_of_run(const std::vector<std::string> &appended, const std::string &run_tag);

} // namespace spillway::cli
