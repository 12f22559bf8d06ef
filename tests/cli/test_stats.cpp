// test_stats.cpp — stats_collect.cpp and stats_summary.cpp: only this
// run's lines, sums of counts, the largest per-process peak.
#include "stats_collect.h"
#include "stats_summary.h"
#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace spillway::cli;

namespace {

void append(const std::string &path, const std::string &line) {
    std::ofstream(path, std::ios::app) << line << "\n";
}

const char *kLineA = R"({"pid":1,"regions":{"disk":2,"memory":1,"anon":0},"bytes":{"disk":100,"memory":50,"anon":0},)"
                     R"("peak_bytes":{"disk":80,"memory":50,"anon":0},"fallbacks":{"no_space":1,"quota":0}})";
const char *kLineB = R"({"pid":2,"regions":{"disk":1,"memory":0,"anon":3},"bytes":{"disk":10,"memory":0,"anon":30},)"
                     R"("peak_bytes":{"disk":10,"memory":0,"anon":30},"fallbacks":{"no_space":2,"arena_full":1}})";
const char *kIdle = R"({"pid":3,"regions":{"disk":0,"memory":0,"anon":0},"fallbacks":{}})";

} // namespace

TEST_CASE("summary: sums, the largest peak, fallbacks by reason, unreadable lines counted") {
    StatsSummary s = summarize_stats({kLineA, kLineB, kIdle, "{not json"});
    CHECK(s.processes == 3);
    CHECK(s.routing == 2);
    CHECK(s.unreadable == 1);
    CHECK(s.regions[0] == 3);
    CHECK(s.regions[2] == 3);
    CHECK(s.bytes[0] == 110);
    CHECK(s.peak[0] == 80); // not 90: peaks of different processes are not simultaneous
    CHECK(s.fallbacks == std::map<std::string, uint64_t>{{"arena_full", 1}, {"no_space", 3}});
    auto lines = render_summary(s, "here");
    REQUIRE(lines.size() == 10); // head, 3 backings, fallbacks, by-process head, 3 processes, unreadable
    CHECK(lines[0].find("3 processes reported, 2 placed large regions") != std::string::npos);
    CHECK(lines[4].find("arena_full 1, no_space 3") != std::string::npos);
    CHECK(lines[5] == "spillway:   by process (bytes placed, peak held at once):");
    CHECK(lines[6] == "spillway:     pid 1: 3 regions, disk 100B peak 80B, memory 50B peak 50B, 1 fallback");
    CHECK(lines[7] == "spillway:     pid 2: 4 regions, disk 10B peak 10B, anon 30B peak 30B, 3 fallbacks");
    CHECK(lines[8] == "spillway:     pid 3: 0 regions");
    CHECK(lines[9].find("1 stats line(s) could not be read") != std::string::npos);
}

TEST_CASE("summary: one line per process, named and ordered by rank; none for a single process") {
    std::string r10 = R"({"pid":40,"rank":"10","local_rank":"2","cmd":"python3 train.py","regions":{"disk":1},)"
                      R"("bytes":{"disk":2048},"peak_bytes":{"disk":1024}})";
    std::string r2 = R"({"pid":50,"rank":"2","local_rank":"0","cmd":"python3 train.py","regions":{"disk":1},)"
                     R"("bytes":{"disk":4096},"peak_bytes":{"disk":4096}})";
    std::string launcher = R"({"pid":30,"cmd":"/usr/bin/python3 /opt/job/launch.py","regions":{"disk":0}})";
    std::string local = R"({"pid":60,"local_rank":"1","cmd":"worker","regions":{"disk":0}})";
    auto lines = render_summary(summarize_stats({r10, launcher, r2, local}), "here");
    REQUIRE(lines.size() == 10);
    CHECK(lines[0].find("4 processes reported, 2 placed large regions") != std::string::npos);
    CHECK(lines[6] == "spillway:     rank 2 (local 0) pid 50: 1 region, disk 4.00KiB peak 4.00KiB  [python3 train.py]");
    CHECK(lines[7] == "spillway:     rank 10 (local 2) pid 40: 1 region, disk 2.00KiB peak 1.00KiB  [python3 train.py]");
    CHECK(lines[8] == "spillway:     local rank 1 pid 60: 0 regions  [worker]"); // LOCAL_RANK alone: after the ranks
    CHECK(lines[9] == "spillway:     pid 30: 0 regions  [python3 /opt/job/launch.py]"); // the program's name only
    CHECK(render_summary(summarize_stats({r2}), "here").size() == 5); // the total is that process's line
}

TEST_CASE("summary: tiering moves are summed and shown only when there were some") {
    const char *moved = R"({"pid":4,"regions":{"disk":1},"tiering":{"promotions":1,"promoted_bytes":268435456,)"
                        R"("demotions":2,"demoted_bytes":1073741824}})";
    StatsSummary s = summarize_stats({kLineA, moved, moved});
    CHECK(s.promotions == 2);
    CHECK(s.promoted_bytes == 2 * 268435456ull);
    CHECK(s.demotions == 4);
    auto lines = render_summary(s, "here");
    REQUIRE(lines.size() == 10); // 5, the tiering line, then 3 processes under a heading
    CHECK(lines[5].find("tiering: 2 promotions to memory") != std::string::npos);
    CHECK(lines[6].find("by process") != std::string::npos);
    CHECK(lines[5].find("4 demotions to disk") != std::string::npos);
    CHECK(render_summary(summarize_stats({kLineA}), "here").size() == 5);
}

TEST_CASE("summary: failed moves and the writeback pacer's passes are summed and shown only when there were some") {
    const char *failing = R"({"pid":5,"regions":{"disk":1},"tiering":{"promotions":0,"promoted_bytes":0,)"
                          R"("demotions":0,"demoted_bytes":0,"failed_promotions":1,"failed_demotions":9},)"
                          R"("writeback":{"passes":3,"written_back_bytes":201326592,"unmapped_bytes":1073741824,"pass_ms":12}})";
    const char *pacing = R"({"pid":6,"regions":{"disk":1},"writeback":{"passes":1,"written_back_bytes":67108864,)"
                         R"("unmapped_bytes":0,"pass_ms":3,"zeroed_bytes":33554432}})";
    StatsSummary s = summarize_stats({failing, pacing});
    CHECK(s.failed_promotions == 1);
    CHECK(s.failed_demotions == 9);
    CHECK(s.writeback_passes == 4);
    CHECK(s.written_back_bytes == 268435456ull);
    CHECK(s.unmapped_bytes == 1073741824ull);
    CHECK(s.writeback_ms == 15);
    CHECK(s.zeroed_bytes == 33554432ull);
    auto lines = render_summary(s, "here");
    REQUIRE(lines.size() == 10); // 5, tiering, writeback, then 2 processes under a heading
    CHECK(lines[5] == "spillway:   tiering: 0 promotions to memory (0B), 0 demotions to disk (0B), in place; the log "
                      "at info level says why; failed: 1 promotion, 9 demotions (see the shim's warnings above for why)");
    CHECK(lines[6] == "spillway:   writeback: 4 passes wrote back 256MiB of dirty spill pages, unmapping 1.00GiB "
                      "first, in 15 ms; 32.0MiB of zeros left unwritten");
    CHECK(lines[7].find("by process") != std::string::npos);
    // A line from an older shim, without these keys, shows neither.
    lines = render_summary(summarize_stats({kLineA}), "here");
    CHECK(lines.size() == 5);
    for (const std::string &l : lines) CHECK(l.find("writeback") == std::string::npos);
}

TEST_CASE("summary: nothing written is said, not shown as zeros") {
    auto lines = render_summary(summarize_stats({}), "here");
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("no stats were written") != std::string::npos);
}

TEST_CASE("collector: a configured file's earlier lines are not this run's") {
    TempDir dir;
    std::string file = dir.path + "/stats.jsonl";
    append(file, kLineA);
    StatsCollector c(file);
    c.mark_start();
    append(file, kLineB);
    CHECK(c.new_lines().lines == std::vector<std::string>{kLineB});
}

TEST_CASE("collector: %p files, old and new") {
    TempDir dir;
    append(dir.path + "/s-100.jsonl", kLineA);
    StatsCollector c(dir.path + "/s-%p.jsonl");
    c.mark_start();
    append(dir.path + "/s-100.jsonl", kIdle);
    append(dir.path + "/s-200.jsonl", kLineB);
    append(dir.path + "/s-abc.jsonl", kLineB); // not a pid
    append(dir.path + "/other.jsonl", kLineB);
    auto lines = c.new_lines().lines;
    std::sort(lines.begin(), lines.end());
    std::vector<std::string> want{kLineB, kIdle};
    std::sort(want.begin(), want.end());
    CHECK(lines == want);
}

TEST_CASE("collector: no file at all is no lines") {
    TempDir dir;
    StatsCollector c(dir.path + "/never.jsonl");
    c.mark_start();
    CHECK(c.new_lines().lines.empty());
}

namespace {
const char *kOursA = R"({"pid":11,"run":"7f3a","regions":{"disk":1,"memory":0,"anon":0}})";
const char *kOursNested = R"({"pid":12,"run":"7f3a/b01c","regions":{"disk":1,"memory":0,"anon":0}})";
const char *kTheirs = R"({"pid":21,"run":"9e44","regions":{"disk":5,"memory":0,"anon":0}})";
const char *kTheirsLookalike = R"({"pid":22,"run":"7f3ab","regions":{"disk":5,"memory":0,"anon":0}})";
const char *kUntagged = R"({"pid":31,"regions":{"disk":3,"memory":0,"anon":0}})";
} // namespace

TEST_CASE("collector: with a run tag, another job's lines appended meanwhile are left out") {
    TempDir dir;
    std::string file = dir.path + "/shared.jsonl";
    append(file, kTheirs); // before the run
    StatsCollector c(file, "7f3a");
    c.mark_start();
    append(file, kTheirs); // during it, from another job
    append(file, kOursA);
    append(file, kTheirsLookalike);
    append(file, kOursNested); // a `spillway run` inside this one
    append(file, kUntagged);   // an older shim's, somebody else's: ours are tagged
    CollectedStats got = c.new_lines();
    CHECK(got.lines == std::vector<std::string>{kOursA, kOursNested});
    CHECK_FALSE(got.fell_back);
    CHECK(got.left_out == 3);
}

TEST_CASE("collector: no line with this run's tag but untagged ones: an older shim's, kept and said") {
    CollectedStats got = lines_of_run({kTheirs, kUntagged, "{\"pid\":32,\"regions\""}, "7f3a");
    // The torn line says nothing of whose it is: untagged, kept with the rest.
    CHECK(got.lines == std::vector<std::string>{kUntagged, "{\"pid\":32,\"regions\""});
    CHECK(got.fell_back);
    CHECK(got.left_out == 1);

    got = lines_of_run({kTheirs}, "7f3a"); // only other runs' lines: none is ours, nothing to fall back on
    CHECK(got.lines.empty());
    CHECK_FALSE(got.fell_back);
    CHECK(got.left_out == 1);
}

TEST_CASE("collector: without a tag (a private file) every appended line is the run's") {
    TempDir dir;
    std::string file = dir.path + "/stats.jsonl";
    StatsCollector c(file);
    c.mark_start();
    append(file, kTheirs);
    append(file, kUntagged);
    CollectedStats got = c.new_lines();
    CHECK(got.lines == std::vector<std::string>{kTheirs, kUntagged});
    CHECK_FALSE(got.fell_back);
}
