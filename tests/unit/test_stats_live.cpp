// test_stats_live.cpp — the live snapshot: one JSON line with every live
// region (range, backing, phase, advice, fault rate), truncated honestly
// when it does not fit, rewritten in a memfd of this process's own (a fork
// child's own too), never into a descriptor the program took back.
#include "shim_fixture.h"
#include "access/sampler.h"
#include "backing/reaper.h"
#include "stats/stats_live.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
    CHECK(s.find("moving_to") == std::string::npos); // only while a move is under way
    r[1].moving_to = (uint8_t)Backing::disk;
    s.assign(buf, stats_live_format(buf, sizeof buf, 42, 3'500'000'000, r, 2, 2));
    CHECK(s.find("\"advice\":\"normal\",\"fault_pages_s\":0,\"moving_to\":\"disk\"}") != std::string::npos);
    CHECK(s.find("private") == std::string::npos); // only in a fork child
    r[1].moving_to = 0;
    r[1].is_private = true;
    s.assign(buf, stats_live_format(buf, sizeof buf, 42, 3'500'000'000, r, 2, 2));
    CHECK(s.find("\"advice\":\"normal\",\"fault_pages_s\":0,\"private\":true}") != std::string::npos);
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

TEST_CASE("the sampler's tick writes the snapshot into a memfd of this process's own") {
    test::bring_up();
    // This test ticks by hand on its own clock; the sampler thread (started
    // by an earlier test's disk region) ticking on the real one between two
    // of its ticks rewrote the snapshot early: 1 failure in 2 runs of the
    // unit suite under two busy loops (line 'Within the period').
    sampler_hold(true);
    struct Release {
        ~Release() { sampler_hold(false); }
    } release;
    bool use_small = false;
    void *p = large_alloc(4 << 20, 16, 0, &use_small);
    REQUIRE(p);
    const uint64_t t0 = 10'000'000'000'000ull;
    stats_live_tick(t0);
    int fd = stats_live_fd();
    REQUIRE(fd > 2);
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    char target[256] = {0};
    REQUIRE(readlink(link.c_str(), target, sizeof target - 1) > 0);
    CHECK(std::string(target) == "/memfd:" + std::string(kLiveMemfdName) + " (deleted)");
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    std::string text = read_all(link);
    CHECK(text.find("\"pid\":" + std::to_string(getpid())) != std::string::npos);
    CHECK(text.find("{\"start\":" + std::to_string((uintptr_t)p) + ",") != std::string::npos);
    CHECK(count_of(text, "\n") == 1);
    // Within the period nothing is rewritten; after it, the freed region is gone.
    large_free(p);
    reaper_drain();
    stats_live_tick(t0 + kLivePeriodNs / 2);
    CHECK(read_all(link).find(std::to_string((uintptr_t)p)) != std::string::npos);
    stats_live_tick(t0 + kLivePeriodNs);
    std::string after = read_all(link);
    CHECK(after.find(std::to_string((uintptr_t)p)) == std::string::npos);
    CHECK(after.back() == '\n'); // truncated to the new, shorter text
    CHECK(count_of(after, "\n") == 1);

    // A fork child writes a memfd of its own; the parent's keeps the parent's pid.
    struct stat parent_st;
    REQUIRE(fstat(fd, &parent_st) == 0);
    pid_t child = fork();
    if (child == 0) {
        stats_live_tick(t0 + 3 * kLivePeriodNs);
        struct stat st;
        bool own = stats_live_fd() >= 0 && fstat(stats_live_fd(), &st) == 0 && st.st_ino != parent_st.st_ino;
        _exit(own ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_all(link).find("\"pid\":" + std::to_string(getpid()) + ",") != std::string::npos);

    // A descriptor the program closed (and whose number it reused) is never written to.
    int stolen = fd;
    close(stolen);
    int other = open("/dev/null", O_WRONLY | O_CLOEXEC);
    REQUIRE(other >= 0);
    if (other != stolen) {
        REQUIRE(dup2(other, stolen) == stolen);
        close(other);
    }
    stats_live_tick(t0 + 4 * kLivePeriodNs);
    CHECK(stats_live_fd() != stolen);
    CHECK(stats_live_fd() > 2);
    close(stolen);
}
