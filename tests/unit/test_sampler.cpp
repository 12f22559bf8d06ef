// test_sampler.cpp — the random-access detector: the window rule, and the
// page-table sampling on real disk mappings written in order and at random.
#include "shim_fixture.h"

#include "reaper.h"
#include "sampler.h"
#include "spillway.h"

#include <catch2/catch.hpp>
#include <random>

using namespace spillway;

TEST_CASE("the window rule") {
    CHECK(classify_windows({0, 40, 10}) == Verdict::random);
    CHECK(classify_windows({40, 1, 23}) == Verdict::sequential);
    CHECK(classify_windows({60, 2, 2}) == Verdict::undecided);   // too little seen yet
    CHECK(classify_windows({30, 5, 29}) == Verdict::undecided);  // ambiguous
}

TEST_CASE("a region filled in order samples as sequential, scattered writes as random") {
    test::bring_up();
    bool use_small = false;
    const size_t n = 256 << 20;
    unsigned char *seq = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_DISK, &use_small);
    unsigned char *rnd = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(seq);
    REQUIRE(rnd);
    for (size_t i = 0; i < n / 2; i += 4096) seq[i] = 1; // first half, in order
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20000; i++) rnd[(rng() % (n / 8)) * 8] = 1; // 8-byte scatter
    WindowCounts s = sample_region((uintptr_t)seq, n);
    WindowCounts r = sample_region((uintptr_t)rnd, n);
    INFO("sequential " << s.empty << "/" << s.partial << "/" << s.full << ", random " << r.empty << "/"
                       << r.partial << "/" << r.full);
    CHECK(classify_windows(s) == Verdict::sequential);
    CHECK(classify_windows(r) == Verdict::random);
    large_free(seq);
    large_free(rnd);
    reaper_drain();
}
