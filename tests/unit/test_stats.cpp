// test_stats.cpp — the per-process JSON line: fields present, one line,
// appended (so a process tree can share a file), "%p" expands to the pid,
// the rank named when RANK / LOCAL_RANK are set.
#include "stats/stats.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

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
    stats_write_at_exit(dir + "/s.jsonl", "");
    stats_write_at_exit(dir + "/s.jsonl", "nightly/9c1e");
    stats_write_at_exit(dir + "/p-%p.jsonl", "");
    std::ifstream in(dir + "/s.jsonl");
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(in, line)) lines.push_back(line);
    CHECK(lines.size() == 2);
    // The run tag right after the pid, only when given (stats_run.h).
    CHECK(lines[0].find("\"run\"") == std::string::npos);
    CHECK(lines[1].find("\"pid\":" + std::to_string(getpid()) + ",\"run\":\"nightly/9c1e\",\"cmd\":") == 1);
    CHECK(std::ifstream(dir + "/p-" + std::to_string(getpid()) + ".jsonl").good());
    std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a region moved in place is neither a free nor a new region: only its live bytes change backing") {
    auto now = [] {
        struct Counts {
            uint64_t regions_disk, regions_memory, frees, live_disk, live_memory, demotions;
        };
        return Counts{g_stats.regions[(int)Backing::disk].load(), g_stats.regions[(int)Backing::memory].load(),
                      g_stats.frees.load(), g_stats.live_bytes[(int)Backing::disk].load(),
                      g_stats.live_bytes[(int)Backing::memory].load(), g_stats.demotions.load()};
    };
    stats_on_alloc(Backing::memory, 4096);
    auto before = now();
    stats_on_rehome(Backing::memory, Backing::disk, 4096); // spillway_spill, spillway_export
    auto after = now();
    CHECK(after.regions_disk == before.regions_disk);
    CHECK(after.regions_memory == before.regions_memory);
    CHECK(after.frees == before.frees);
    CHECK(after.live_memory == before.live_memory - 4096);
    CHECK(after.live_disk == before.live_disk + 4096);
    CHECK(after.demotions == before.demotions); // not tiering's
    stats_on_move(Backing::disk, Backing::memory, 4096, 1000, 10); // a promotion: counted as one
    CHECK(g_stats.live_bytes[(int)Backing::memory].load() == before.live_memory);
    CHECK(g_stats.frees.load() == before.frees);
    CHECK(g_stats.promotions.load() >= 1);
    stats_on_free(Backing::memory, 4096);
}

TEST_CASE("the writeback pacer's passes and failed moves are in the line, and a fork child starts them at zero") {
    std::string json = stats_json();
    uint64_t passes = g_stats.writeback_passes.load(), bytes = g_stats.writeback_bytes.load(),
             unmapped = g_stats.writeback_unmapped_bytes.load(), ns = g_stats.writeback_ns.load();
    stats_on_writeback_pass(3 << 20, 8 << 20, 2500000);
    stats_on_writeback_pass(1 << 20, 0, 1500000);
    uint64_t zeroed = g_stats.writeback_zeroed_bytes.load();
    stats_on_zeroed(6 << 20);
    CHECK(g_stats.writeback_zeroed_bytes.load() == zeroed + (6 << 20));
    CHECK(g_stats.writeback_passes.load() == passes + 2);
    CHECK(g_stats.writeback_bytes.load() == bytes + (4 << 20));
    CHECK(g_stats.writeback_unmapped_bytes.load() == unmapped + (8 << 20));
    CHECK(g_stats.writeback_ns.load() == ns + 4000000);
    g_stats.failed_demotions.fetch_add(3);
    g_stats.failed_promotions.fetch_add(1);
    json = stats_json();
    auto has = [&](const std::string &key, uint64_t value) {
        return json.find("\"" + key + "\":" + std::to_string(value)) != std::string::npos;
    };
    CHECK(json.find("\"writeback\":{\"passes\":") != std::string::npos);
    CHECK(has("passes", g_stats.writeback_passes.load()));
    CHECK(has("written_back_bytes", g_stats.writeback_bytes.load()));
    CHECK(has("unmapped_bytes", g_stats.writeback_unmapped_bytes.load()));
    CHECK(has("pass_ms", g_stats.writeback_ns.load() / 1000000));
    CHECK(has("zeroed_bytes", g_stats.writeback_zeroed_bytes.load()));
    CHECK(has("failed_demotions", g_stats.failed_demotions.load()));
    CHECK(has("failed_promotions", g_stats.failed_promotions.load()));
    // Inside "tiering", next to the moves they failed to make.
    CHECK(json.find("\"failed_demotions\"") > json.find("\"tiering\":{"));
    CHECK(json.find("\"failed_demotions\"") < json.find("\"writeback\":{"));
    CHECK(json.find('\n') == std::string::npos);
    stats_after_fork_child();
    json = stats_json();
    CHECK(json.find("\"writeback\":{\"passes\":0,\"written_back_bytes\":0,\"unmapped_bytes\":0,\"pass_ms\":0,"
                    "\"zeroed_bytes\":0}") != std::string::npos);
    CHECK(has("failed_demotions", 0));
    CHECK(has("failed_promotions", 0));
}

TEST_CASE("the prefetch worker's read and paged-out bytes are in the line, and a fork child starts them at zero") {
    uint64_t read = g_stats.prefetch_read_bytes.load(), dropped = g_stats.prefetch_dropped_bytes.load();
    stats_on_prefetch(4 << 20, 0);
    stats_on_prefetch(1 << 20, 2 << 20);
    stats_on_prefetch(0, 0);
    CHECK(g_stats.prefetch_read_bytes.load() == read + (5 << 20));
    CHECK(g_stats.prefetch_dropped_bytes.load() == dropped + (2 << 20));
    std::string json = stats_json();
    std::string expected = "\"prefetch\":{\"read_bytes\":" + std::to_string(read + (5 << 20)) +
                           ",\"dropped_bytes\":" + std::to_string(dropped + (2 << 20)) + "}";
    CHECK(json.find(expected) != std::string::npos);
    // After the pacer's object, before the sites.
    CHECK(json.find("\"prefetch\":{") > json.find("\"writeback\":{"));
    CHECK(json.find("\"prefetch\":{") < json.find("\"sites\":"));
    stats_after_fork_child();
    json = stats_json();
    CHECK(json.find("\"prefetch\":{\"read_bytes\":0,\"dropped_bytes\":0}") != std::string::npos);
}

TEST_CASE("Python arenas and fork snapshot spills are in the line; a fork child keeps its arenas in use") {
    uint64_t taken = g_stats.arenas_taken.load(), given = g_stats.arenas_given.load(),
             in_use = g_stats.arenas_in_use.load(), chunks = g_stats.arena_chunks.load();
    stats_on_arena_chunk();
    for (int i = 0; i < 5; i++) stats_on_arena(true);
    for (int i = 0; i < 2; i++) stats_on_arena(false);
    stats_on_arena(true);
    CHECK(g_stats.arenas_taken.load() == taken + 6);
    CHECK(g_stats.arenas_given.load() == given + 2);
    CHECK(g_stats.arenas_in_use.load() == in_use + 4);
    CHECK(g_stats.arenas_peak.load() >= in_use + 5);
    uint64_t spills = g_stats.snapshot_spills.load(), copies = g_stats.snapshot_spill_copies_bytes.load();
    stats_on_snapshot_spill(300u << 20);
    stats_on_snapshot_spill(0); // an early move: no copy yet
    std::string json = stats_json();
    std::string arenas = "\"python_arenas\":{\"taken\":" + std::to_string(taken + 6) +
                         ",\"given_back\":" + std::to_string(given + 2) +
                         ",\"peak\":" + std::to_string(g_stats.arenas_peak.load()) +
                         ",\"chunks\":" + std::to_string(chunks + 1) + "}";
    CHECK(json.find(arenas) != std::string::npos);
    std::string fork = "\"fork\":{\"snapshot_spills\":" + std::to_string(spills + 2) +
                       ",\"snapshot_spill_copies_bytes\":" + std::to_string(copies + (300u << 20)) + "}";
    CHECK(json.find(fork) != std::string::npos);
    CHECK(json.find("\"fork\":{") < json.find("\"sites\":"));
    stats_on_arena(false); // what this case took, given back before the child's view
    stats_on_arena(false);
    stats_on_arena(false);
    stats_on_arena(false);
    stats_after_fork_child();
    json = stats_json();
    // The child's heap holds the parent's arenas: its peak starts at those in use.
    CHECK(json.find("\"python_arenas\":{\"taken\":0,\"given_back\":0,\"peak\":" +
                    std::to_string(g_stats.arenas_in_use.load()) + ",\"chunks\":0}") != std::string::npos);
    CHECK(json.find("\"fork\":{\"snapshot_spills\":0,\"snapshot_spill_copies_bytes\":0}") != std::string::npos);
}
