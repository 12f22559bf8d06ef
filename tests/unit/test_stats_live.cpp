// test_stats_live.cpp — the live snapshot: one JSON line with every live
// region (range, backing, phase, advice, fault rate, a disk region's page
// cache when measured), opened by the length and hash of the rest
// (text_sum.h), truncated honestly when it does not fit, rewritten in a
// memfd of this process's own (a fork child's own too), never into a
// descriptor the program took back.
#include "shim_fixture.h"
#include "access/sampler.h"
#include "backing/reaper.h"
#include "stats/stats_live.h"
#include "cachestat.h"
#include "large/large.h"
#include "registry/arena.h"
#include "registry/region.h"
#include "spillway.h"
#include "text_sum.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <ctime>
#include <vector>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
    // The head: the body's length and hash, then the body, pid first.
    REQUIRE(s.size() > text_sum::kHeadLen);
    CHECK(s.rfind("{\"text_sum\":\"", 0) == 0);
    CHECK(s.compare(text_sum::kHeadLen, 30, "\"pid\":42,\"mono_ns\":3500000000,") == 0);
    CHECK(text_sum::check(s.data(), s.size()) == text_sum::Verdict::whole);
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

    // A disk region's page cache: only when measured; never a 0 standing for unknown.
    CHECK(s.find("cached") == std::string::npos);
    CHECK(s.find("dirty") == std::string::npos);
    r[0].cache_known = true;
    r[0].cached = 768 << 10;
    r[0].dirty = 4096;
    s.assign(buf, stats_live_format(buf, sizeof buf, 42, 3'500'000'000, r, 2, 2));
    CHECK(s.find("\"fault_pages_s\":250,\"cached\":786432,\"dirty\":4096}") != std::string::npos);
    CHECK(s.find("\"private\":true}") != std::string::npos); // the other entry as it was
    CHECK(text_sum::check(s.data(), s.size()) == text_sum::Verdict::whole);
}

TEST_CASE("a snapshot's head gives the rest's length and hash: any torn read is told") {
    LiveRegion r[40];
    for (int i = 0; i < 40; i++) {
        r[i].start = 4096u * (i + 1);
        r[i].len = 4096;
        r[i].backing = (uint8_t)Backing::disk;
        r[i].cache_known = true;
        r[i].cached = 4096;
    }
    static char a_buf[1 << 16], b_buf[1 << 16];
    std::string old_text(a_buf, stats_live_format(a_buf, sizeof a_buf, 9, 1'000'000'000, r, 40, 40));
    r[3].cached = 8192; // the next snapshot: one figure changed, same length
    std::string same_len(b_buf, stats_live_format(b_buf, sizeof b_buf, 9, 2'000'000'000, r, 40, 40));
    std::string shorter(b_buf, stats_live_format(b_buf, sizeof b_buf, 9, 2'000'000'000, r, 20, 40));
    REQUIRE(old_text.size() == same_len.size());
    REQUIRE(shorter.size() < old_text.size());
    using text_sum::Verdict;
    CHECK(text_sum::check(old_text.data(), old_text.size()) == Verdict::whole);
    CHECK(text_sum::check(same_len.data(), same_len.size()) == Verdict::whole);
    CHECK(text_sum::check(shorter.data(), shorter.size()) == Verdict::whole);
    // Every cut of a rewrite in place: the new text's first k bytes over the
    // old one (the file not yet truncated), or the new text cut short (the
    // file growing).
    for (const std::string *next : {&same_len, &shorter}) {
        for (size_t k = 0; k < next->size(); k++) {
            std::string torn = next->substr(0, k) + (k < old_text.size() ? old_text.substr(k) : "");
            if (torn == *next || torn == old_text) continue;
            INFO("cut at " << k);
            REQUIRE(text_sum::check(torn.data(), torn.size()) == Verdict::torn);
        }
        std::string tail_left = *next + old_text.substr(std::min(next->size(), old_text.size()));
        if (tail_left != *next) CHECK(text_sum::check(tail_left.data(), tail_left.size()) == Verdict::torn);
        for (size_t k = 0; k < next->size(); k++) {
            std::string cut = next->substr(0, k);
            REQUIRE(text_sum::check(cut.data(), cut.size()) == Verdict::torn);
        }
    }
    // One byte changed anywhere: torn.
    std::string flipped = same_len;
    flipped[flipped.size() / 2] ^= 1;
    CHECK(text_sum::check(flipped.data(), flipped.size()) == Verdict::torn);
    // An older shim's text has no head: not judged here.
    const char old_shim[] = "{\"pid\":9,\"regions\":[],\"unlisted\":0}\n";
    CHECK(text_sum::check(old_shim, sizeof old_shim - 1) == Verdict::unsummed);
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
    CHECK(text_sum::check(buf, len) == text_sum::Verdict::whole);
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

TEST_CASE("the sampler's tick measures a disk or memfd region's pages in its file, mapped or not, once the snapshot is read") {
    test::bring_up();
    sampler_hold(true); // ticks by hand (see above)
    struct Release {
        ~Release() { sampler_hold(false); }
    } release;
    const size_t n = 8 << 20;
    bool use_small = false;
    auto [prefer, backing] = GENERATE(std::make_pair(SPILLWAY_PREFER_DISK, Backing::disk),
                                      std::make_pair(SPILLWAY_PREFER_MEMORY, Backing::memory));
    char *p = (char *)large_alloc(n, 0, prefer, &use_small);
    REQUIRE(p);
    Region *r = arena::region_at(p);
    REQUIRE(r);
    REQUIRE(r->backing == backing);
    memset(p, 7, n);
    // The job's own MADV_DONTNEED (or the pacer's): the pages leave the
    // mapping and stay in the page cache, dirty until written back.
    REQUIRE(madvise(p, n, MADV_DONTNEED) == 0);
    static uint64_t t = 20'000'000'000'000ull;
    // The region's entry in the snapshot the next tick writes; with
    // read_after, the snapshot read (a reader) a clock tick after the write.
    auto entry_after_tick = [&](bool read_after) {
        stats_live_tick(t += kLivePeriodNs);
        if (!read_after) return std::string();
        usleep(20'000); // file times move with a coarse clock: read in a later tick
        std::string text = read_all("/proc/self/fd/" + std::to_string(stats_live_fd()));
        REQUIRE(text_sum::check(text.data(), text.size()) == text_sum::Verdict::whole);
        size_t at = text.find("{\"start\":" + std::to_string((uintptr_t)p) + ",");
        REQUIRE(at != std::string::npos);
        return text.substr(at, text.find('}', at) - at);
    };
    // Nobody read the last snapshot: the tick measures nothing (cachestat
    // walks every page slot of the range); a reader's read makes the next
    // tick measure.
    entry_after_tick(false);
    std::string unread = entry_after_tick(true);
    CHECK(unread.find("cached") == std::string::npos);
    std::string entry = entry_after_tick(true);
    Cachestat cs{};
    bool have_cachestat = cachestat(r->file->fd, CachestatRange{r->file_off, n}, cs) == 0 || errno != ENOSYS;
    if (!have_cachestat) {
        CHECK(entry.find("cached") == std::string::npos); // before Linux 6.5: left out, not faked
        return;
    }
    INFO(entry);
    size_t c = entry.find("\"cached\":");
    REQUIRE(c != std::string::npos);
    uint64_t cached = strtoull(entry.c_str() + c + 9, nullptr, 10);
    // Nothing forces these pages out in a unit run; a little slack for
    // writeback and reclaim on a busy machine.
    CHECK(cached >= n / 2);
    CHECK(cached <= n);
    CHECK(entry.find("\"dirty\":") != std::string::npos);
    // The dups it took to measure are closed again: no descriptor of the
    // spill file is left behind per tick (the region's own stays).
    auto descriptors_of_file = [&] {
        struct stat want;
        REQUIRE(fstat(r->file->fd, &want) == 0);
        int count = 0;
        for (int fd = 0; fd < 4096; fd++) {
            struct stat st;
            if (fcntl(fd, F_GETFD) >= 0 && fstat(fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino)
                count++;
        }
        return count;
    };
    int before = descriptors_of_file();
    for (int i = 0; i < 3; i++) entry_after_tick(true);
    CHECK(descriptors_of_file() == before);
    large_free(p);
    reaper_drain();
}

// Not run by default (hidden): what one snapshot write costs the sampler
// thread with 2048 disk regions, in a pool file and in files of their own
// (a dup and a cachestat each). Run:
//   build/tests/unit/unit_tests '[.live_cost]' -s
TEST_CASE("the cost of one snapshot write with 2048 disk regions", "[.live_cost]") {
    test::bring_up();
    sampler_hold(true);
    struct Release {
        ~Release() { sampler_hold(false); }
    } release;
    struct rlimit nofile;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &nofile) == 0);
    nofile.rlim_cur = nofile.rlim_max; // 2048 files of their own, and as many dups
    REQUIRE(setrlimit(RLIMIT_NOFILE, &nofile) == 0);
    static uint64_t t = 30'000'000'000'000ull;
    for (bool own_files : {false, true}) {
        if (own_files) { // every region a file of its own
            test::settings().dedicated_min = 1 << 20;
            backing_init(test::settings());
        }
        std::vector<char *> regions;
        for (int i = 0; i < 2048; i++) {
            bool use_small = false;
            char *p = (char *)large_alloc(1 << 20, 0, SPILLWAY_PREFER_DISK, &use_small);
            REQUIRE(p);
            REQUIRE(arena::region_at(p)->backing == Backing::disk);
            p[0] = 1; // one page each in the page cache
            regions.push_back(p);
        }
        std::vector<double> us;
        for (int i = 0; i < 21; i++) {
            timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            stats_live_tick(t += kLivePeriodNs);
            clock_gettime(CLOCK_MONOTONIC, &b);
            us.push_back((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
        }
        std::sort(us.begin(), us.end());
        struct stat st;
        REQUIRE(fstat(stats_live_fd(), &st) == 0);
        printf("live snapshot, 2048 disk regions (%s): one write min %.0f us, median %.0f us, max %.0f us; "
               "%lld bytes\n",
               own_files ? "a file each" : "one pool file", us[0], us[10], us[20], (long long)st.st_size);
        for (char *p : regions) large_free(p);
        reaper_drain();
    }
}
