// test_probe_rules.cpp — the probe method's pure rules (probe_rules.h):
// where probes go, how they are hidden from presence, and what two
// windows' touches say.
#include "access/probe_rules.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

using namespace spillway;

TEST_CASE("probes: one per stratum of whole 16-page blocks, none for small regions") {
    CHECK(probe_count(kProbeBlockPages * kMinProbes - 1) == 0);
    CHECK(probe_count(kProbeBlockPages * kMinProbes) == kMinProbes);
    CHECK(probe_count(131072) == kMaxProbes); // 512 MiB
    uint64_t pages = 131072, stride = probe_stride(pages);
    CHECK(stride % kProbeBlockPages == 0);
    for (uint32_t i = 0; i < probe_count(pages); i++) {
        uint64_t p = probe_page(pages, i, 0x9e3779b97f4a7c15ull * (i + 1));
        CHECK(p >= i * stride);
        CHECK(p < (i + 1) * stride);
    }
}

TEST_CASE("probe pages are merged into presence as present, clipped to the span") {
    PageRun runs[] = {{0, 10}, {20, 5}};
    PageRun probes[] = {{5, 1}, {10, 1}, {15, 1}, {40, 1}, {200, 1}};
    PageRun out[8];
    long n = runs_with_probes(runs, 2, probes, 5, 0, 100, out, 8);
    REQUIRE(n == 4); // probe 5 inside a run adds nothing; 200 is outside the span
    CHECK(out[0].first == 0); // 0..9 and probe 10 touch: one run of 11
    CHECK(out[0].count == 11);
    CHECK(out[1].first == 15);
    CHECK(out[1].count == 1);
    CHECK(out[2].first == 20);
    CHECK(out[2].count == 5);
    CHECK(out[3].first == 40);
    CHECK(out[3].count == 1);
    n = runs_with_probes(runs, 2, probes, 5, 0, 100, out, 2);
    CHECK(n == -1); // does not fit
    PageRun none[1];
    n = runs_with_probes(none, 0, probes, 5, 100, 300, out, 8); // relative to lo = 100
    REQUIRE(n == 1);
    CHECK(out[0].first == 100);
}

TEST_CASE("a probe's unmapped 2 MiB block is merged whole, clipped to the span, over runs it overlaps") {
    PageRun runs[] = {{0, 3}, {600, 10}, {2000, 4}};
    PageRun masks[] = {{1, 1}, {512, 512}, {1100, 1}};
    PageRun out[8];
    long n = runs_with_probes(runs, 3, masks, 3, 0, 4096, out, 8);
    REQUIRE(n == 4);
    CHECK(out[0].first == 0);
    CHECK(out[0].count == 3);
    CHECK(out[1].first == 512); // the block swallows the run inside it
    CHECK(out[1].count == 512);
    CHECK(out[2].first == 1100);
    CHECK(out[3].first == 2000);
    // A span starting inside the block: its part from lo, relative to lo.
    PageRun inside[] = {{100, 5}}; // page 900 of the region
    n = runs_with_probes(inside, 1, masks, 3, 800, 1000, out, 8);
    REQUIRE(n == 1);
    CHECK(out[0].first == 0);
    CHECK(out[0].count == 200);
}

TEST_CASE("random access: repeats as many as chance gives, spread out; strong with 16 expected") {
    ProbeCounts c;
    c.probes = 128;
    c.first = 50;
    c.second = 48;
    c.both = 15; // 18.75 expected
    c.first_runs = 35;
    c.second_runs = 33;
    ProbeReading r = read_probes(c);
    CHECK(r.verdict == Verdict::random);
    CHECK(r.strong);
    c.first = c.second = 36; // 10.1 expected: random, but a second cycle must agree
    c.both = 9;
    c.first_runs = c.second_runs = 28;
    r = read_probes(c);
    CHECK(r.verdict == Verdict::random);
    CHECK_FALSE(r.strong);
}

TEST_CASE("a pass in order repeats nothing: sequential; a busy spot repeats but is not spread") {
    ProbeCounts c;
    c.probes = 128;
    c.first = 40;
    c.second = 40; // 12.5 expected at random
    c.both = 0;
    c.first_runs = c.second_runs = 1;
    CHECK(read_probes(c).verdict == Verdict::sequential);
    c.both = 40; // the same 40 probes in both windows, one run each: a hot spot
    CHECK(read_probes(c).verdict == Verdict::undecided);
}

TEST_CASE("hot: both windows saw most probes, a quarter in both: random at once, whatever the runs") {
    ProbeCounts c;
    c.probes = 128;
    c.first = 126;
    c.second = 121;
    c.both = 119;
    c.first_runs = c.second_runs = 3;
    ProbeReading r = read_probes(c);
    CHECK(r.verdict == Verdict::random);
    CHECK(r.strong);
    CHECK(r.change == WindowChange::shorter);
    c.first = 98; // the control test's miss (learn-relearn, idle machine): 98, 126, 96 in both
    c.second = 126;
    c.both = 96;
    CHECK(read_probes(c).verdict == Verdict::random);
    c.first = c.second = 66; // just over half each, the pigeonhole's 4 in both: not enough
    c.both = 4;
    c.first_runs = c.second_runs = 1;
    CHECK(read_probes(c).verdict != Verdict::random);
}

TEST_CASE("windows: shorter when nearly all were touched, longer when too few to count") {
    ProbeCounts c;
    c.probes = 128;
    c.first = 126; // the first window saw nearly all, the second few: a pass ended
    c.second = 10;
    c.both = 9;
    c.first_runs = c.second_runs = 3;
    ProbeReading r = read_probes(c);
    CHECK(r.verdict == Verdict::undecided);
    CHECK(r.change == WindowChange::shorter);
    c = ProbeCounts();
    c.probes = 128;
    c.first = 3;
    c.second = 4;
    c.first_runs = 3;
    c.second_runs = 4;
    r = read_probes(c);
    CHECK(r.verdict == Verdict::undecided);
    CHECK(r.change == WindowChange::longer);
}

TEST_CASE("window lengths: to where 40% would be touched at random, within bounds") {
    ProbeCounts c;
    c.probes = 128;
    CHECK(window_scale(c, WindowChange::keep) == 1);
    c.first = 128; // all: no rate to estimate
    CHECK(window_scale(c, WindowChange::shorter) == Approx(1.0 / 16));
    c.first = 125; // 98%: 1 - e^(-r w) = 0.98, so 40% takes w * ln(0.6) / ln(0.02), 0.14 w
    CHECK(window_scale(c, WindowChange::shorter) == Approx(std::log(0.6) / std::log(3.0 / 128)));
    c.first = 100; // 78%: 0.34 of the window
    CHECK(window_scale(c, WindowChange::shorter) == Approx(std::log(0.6) / std::log(1 - 100.0 / 128)));
    c.first = 70; // 55%: at most half
    CHECK(window_scale(c, WindowChange::shorter) == Approx(0.5));
    c.first = 0;
    CHECK(window_scale(c, WindowChange::longer) == 2); // nothing touched: no rate, double
    c.second = 10; // 8%: about 6.3 times longer
    CHECK(window_scale(c, WindowChange::longer) == Approx(std::log(0.6) / std::log(1 - 10.0 / 128)));
    c.second = 1; // at most 8 times
    CHECK(window_scale(c, WindowChange::longer) == 8);
    c.second = 30; // 23%: at least 1.5 times
    CHECK(window_scale(c, WindowChange::longer) == Approx(std::log(0.6) / std::log(1 - 30.0 / 128)));
}

TEST_CASE("runs of touched probes") {
    uint64_t bits[2] = {0b1011'0110ull, 1ull}; // runs: {1,2}, {4,5}, {7}, and bit 64
    CHECK(touched_runs(bits, 64) == 3);
    CHECK(touched_runs(bits, 128) == 4);
    CHECK(touched_runs(bits, 0) == 0);
}
