// stats_collect.h — the stats lines a run produced, and only those.
//
// The shim appends one JSON line per process to `[stats] file` at exit
// ("%p" in the name gives each process its own file). A configured file may
// already hold earlier runs' lines, so the collector notes every matching
// file's size before the run and afterwards reads only what was appended.
//
// Invariant: lines written before mark_start() are never reported.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace spillway::cli {

class StatsCollector {
  public:
    explicit StatsCollector(std::string pattern);
    void mark_start();
    std::vector<std::string> new_lines() const;
    // Where the lines are, for the summary ("/tmp/x/stats.jsonl" or the pattern).
    const std::string &pattern() const { return pattern_; }

  private:
    std::map<std::string, long long> matching_files() const; // path -> size
    std::string pattern_;
    std::map<std::string, long long> before_;
};

} // namespace spillway::cli
