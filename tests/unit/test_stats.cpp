// test_stats.cpp — the per-process JSON line: fields present, one line,
// appended (so a process tree can share a file), "%p" expands to the pid,
// the rank named when RANK / LOCAL_RANK are set.
#include "stats/stats.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace spillway;

TEST_CASE("stats are one JSON object per process, appended") {
    stats_on_alloc(Backing::disk, 100);
    stats_on_alloc(Backing::disk, 50);
    stats_on_free(Backing::disk, 100);
    stats_on_fallback(Fallback::no_space);
    std::string json = stats_json();
    CHECK(json.front() == '{');
    CHECK(json.back() == '}');
    CHECK(json.find('\n') == std::string::npos);
    for (const char *key : {"\"pid\":", "\"regions\":", "\"bytes\":", "\"peak_bytes\":", "\"fallbacks\":",
                            "\"no_space\":", "\"sites\":"})
        CHECK(json.find(key) != std::string::npos);

    CHECK(json.find("\"rank\"") == std::string::npos);
    setenv("RANK", "3", 1);
    setenv("LOCAL_RANK", "1", 1);
    json = stats_json();
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    CHECK(json.find(",\"rank\":\"3\",\"local_rank\":\"1\",") != std::string::npos);

    char tmpl[] = "/tmp/spillway-stats.XXXXXX";
    std::string dir = mkdtemp(tmpl);
    stats_write_at_exit(dir + "/s.jsonl");
    stats_write_at_exit(dir + "/s.jsonl");
    stats_write_at_exit(dir + "/p-%p.jsonl");
    std::ifstream in(dir + "/s.jsonl");
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) lines++;
    CHECK(lines == 2);
    CHECK(std::ifstream(dir + "/p-" + std::to_string(getpid()) + ".jsonl").good());
    std::system(("rm -rf " + dir).c_str());
}
