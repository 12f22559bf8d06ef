// test_sampler.cpp — the detector's thread on real disk regions: a region
// written in order is published sequential, one touched at scattered pages
// random, and the advice in force follows (MADV_RANDOM outside streams).
#include "shim_fixture.h"

#include "arena.h"
#include "reaper.h"
#include "region.h"
#include "sampler.h"
#include "spillway.h"

#include <catch2/catch.hpp>
#include <ctime>
#include <random>
#include <sys/mman.h>

using namespace spillway;

namespace {
void sleep_ms(long ms) {
    timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}

int phase_of(void *p) { return arena::region_at(p)->phase.load(); }
} // namespace

TEST_CASE("the thread publishes a stream as sequential and scattered faults as random") {
    test::bring_up();
    bool use_small = false;
    const size_t n = 256 << 20;
    unsigned char *p = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(p);
    Region *r = arena::region_at(p);
    CHECK(r->advice == MADV_SEQUENTIAL); // born streaming: it is about to be filled
    sleep_ms(120);                       // older than the detector's minimum age
    // In order, slowly enough for several looks: ~1 s over the first half.
    for (size_t i = 0; i < n / 2; i += 4096) {
        p[i] = 1;
        if (i % (4 << 20) == 0) sleep_ms(15);
    }
    CHECK(phase_of(p) == (int)Verdict::sequential);
    CHECK(r->phase_since_ns.load() > 0);
    // Scattered 8-byte writes into the untouched second half.
    std::mt19937_64 rng(7);
    int phase = 0;
    for (int round = 0; round < 40 && phase != (int)Verdict::random; round++) {
        for (int i = 0; i < 200; i++) p[n / 2 + (rng() % (n / 16)) * 8] = 1;
        sleep_ms(25);
        phase = phase_of(p);
    }
    CHECK(phase == (int)Verdict::random);
    CHECK(r->advice == MADV_RANDOM);
    CHECK(sampler_ticks() > 0);
    large_free(p);
    reaper_drain();
}
