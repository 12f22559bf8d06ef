// test_stats_live.cpp — the live snapshot: one JSON line with every live
// region (range, backing, phase, advice, fault rate), truncated honestly
// when it does not fit, written into the spill directory by rename and
// removed at exit.
#include "shim_fixture.h"
#include "reaper.h"
#include "spilldir.h"
#include "stats_live.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

using namespace spillway;

namespace {

std::string read_all(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

size_t count_of(const std::string &text, const std::string &needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) n++;
    return n;
}

} // namespace

TEST_CASE("a live snapshot is one line naming each region's phase and advice") {
    LiveRegion r[2];
    r[0].start = 0x10000000;
    r[0].len = 1 << 20;
    r[0].backing = (uint8_t)Backing::disk;
    r[0].phase = 2;
    r[0].phase_since_ns = 1'000'000'000;
    r[0].advice = MADV_RANDOM;
    r[0].fault_rate = 250;
    r[1].start = 0x20000000;
    r[1].len = 2 << 20;
    r[1].backing = (uint8_t)Backing::memory;
    char buf[4096];
    size_t len = stats_live_format(buf, sizeof buf, 42, 3'500'000'000, r, 2, 2);
    std::string s(buf, len);
    CHECK(s.back() == '\n');
    CHECK(count_of(s, "\n") == 1);
    CHECK(s.rfind("{\"pid\":42,\"mono_ns\":3500000000,", 0) == 0);
    CHECK(s.find("{\"start\":268435456,\"len\":1048576,\"backing\":\"disk\",\"phase\":\"random\",\"phase_ms\":2500,"
                 "\"advice\":\"random\",\"fault_pages_s\":250}") != std::string::npos);
    CHECK(s.find("\"backing\":\"memory\",\"phase\":\"undecided\",\"phase_ms\":0,\"advice\":\"normal\"") !=
          std::string::npos);
    CHECK(s.find("\"unlisted\":0}") != std::string::npos);
}

TEST_CASE("a snapshot that does not fit lists a prefix and counts the rest") {
    LiveRegion r[50];
    for (int i = 0; i < 50; i++) {
        r[i].start = 4096u * (i + 1);
        r[i].len = 4096;
        r[i].backing = (uint8_t)Backing::anon;
    }
    char buf[1500];
    size_t len = stats_live_format(buf, sizeof buf, 7, 1, r, 50, 60);
    REQUIRE(len > 0);
    std::string s(buf, len);
    size_t listed = count_of(s, "\"start\":");
    CHECK(listed > 0);
    CHECK(listed < 50);
    CHECK(s.find("\"unlisted\":" + std::to_string(60 - listed) + "}\n") != std::string::npos);
    CHECK(stats_live_format(buf, 40, 7, 1, r, 50, 60) == 0); // not even the head
}

TEST_CASE("the sampler's tick writes the snapshot into the spill directory; exit removes it") {
    test::bring_up();
    bool use_small = false;
    void *p = large_alloc(4 << 20, 16, 0, &use_small);
    REQUIRE(p);
    char name[64];
    stats_live_name(name, sizeof name, getpid());
    std::string path = test::settings().spill_dir + "/" + name;
    stats_live_tick(10'000'000'000'000ull);
    std::string text = read_all(path);
    REQUIRE(!text.empty());
    CHECK(text.find("\"pid\":" + std::to_string(getpid())) != std::string::npos);
    CHECK(text.find("{\"start\":" + std::to_string((uintptr_t)p) + ",") != std::string::npos);
    // Within the period nothing is rewritten; after it, the freed region is gone.
    large_free(p);
    reaper_drain();
    stats_live_tick(10'000'000'000'000ull + kLivePeriodNs / 2);
    CHECK(read_all(path).find(std::to_string((uintptr_t)p)) != std::string::npos);
    stats_live_tick(10'000'000'000'000ull + kLivePeriodNs);
    CHECK(read_all(path).find(std::to_string((uintptr_t)p)) == std::string::npos);
    CHECK(access((test::settings().spill_dir + "/" + kTmpPrefix + "live-" + std::to_string(getpid())).c_str(),
                 F_OK) != 0);
    stats_live_remove();
    CHECK(access(path.c_str(), F_OK) != 0);
}
