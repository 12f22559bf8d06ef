// test_reaper.cpp — regions and files handed to the reaper are all retired
// or closed exactly once, by the thread or (past the backpressure bound)
// inline, and drain() waits for them; the recycle cache's trim runs on the
// thread while the cache holds regions, and drain() empties it first; the
// fork snapshot's settle runs every tick while it waits for something.
#include "backing/backing.h"
#include "large/large.h"
#include "backing/reaper.h"
#include "large/fork_snapshot.h"
#include "large/recycle.h"
#include "registry/region.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <pthread.h>
#include <unistd.h>

using namespace spillway;

static std::atomic<int> g_retired{0}, g_closed{0}, g_closed_elsewhere{0};
static pthread_t g_submitter;

TEST_CASE("every submitted region is retired exactly once") {
    reaper_drain(); // regions other tests left in the recycle cache retire the real way first
    reaper_init(
        [](Region *r) {
            g_retired++;
            region_delete(r);
        },
        close_spill_file);
    for (int i = 0; i < 500; i++) reaper_submit(region_new());
    reaper_drain();
    CHECK(g_retired == 500);
    reaper_init(large_retire, close_spill_file); // what the rest of this test binary expects
}

TEST_CASE("every submitted file is closed exactly once, mostly off the submitting thread") {
    g_submitter = pthread_self();
    reaper_init(large_retire, [](SpillFile *f) {
        if (!pthread_equal(pthread_self(), g_submitter)) g_closed_elsewhere++;
        g_closed++;
        close_spill_file(f);
    });
    for (int i = 0; i < 200; i++) {
        SpillFile *f = nullptr;
        REQUIRE(new_dedicated_memfd(4096, &f) == 0);
        reaper_submit_file(f);
    }
    reaper_drain();
    CHECK(g_closed == 200);
    CHECK(g_closed_elsewhere > 0); // the thread took some: the point of it
    reaper_init(large_retire, close_spill_file);
}

static std::atomic<int> g_trims{0}, g_trims_all{0}, g_left{0};

TEST_CASE("the trim runs on the thread while anything is cached, and drain asks for everything") {
    reaper_drain();
    reaper_set_trim([](bool all) {
        g_trims++;
        if (all) {
            g_trims_all++;
            g_left = 0;
        } else if (g_left > 0) {
            g_left--;
        }
        return g_left > 0;
    });
    g_left = 3; // three ticks until the (pretend) cache is empty
    reaper_wake_for_trim();
    for (int i = 0; i < 200 && g_left > 0; i++) usleep(10 * 1000);
    CHECK(g_left == 0);
    CHECK(g_trims >= 3);
    CHECK(g_trims_all == 0);
    // Disarmed once empty: no more ticks.
    int ticks = g_trims;
    usleep(3 * kTrimTickMs * 1000);
    CHECK(g_trims == ticks);
    g_left = 100;
    reaper_drain();
    CHECK(g_trims_all == 1);
    CHECK(g_left == 0);
    recycle_init(); // the real trim, for the rest of this test binary
}

static std::atomic<int> g_settles{0}, g_settle_left{0};

TEST_CASE("the fork snapshot's settle runs on the thread every tick until it has nothing to wait for") {
    reaper_drain();
    reaper_set_settle([] {
        g_settles++;
        if (g_settle_left > 0) g_settle_left--;
        return g_settle_left > 0;
    });
    g_settle_left = 3; // three ticks until the (pretend) children are gone
    reaper_wake_for_settle();
    for (int i = 0; i < 200 && g_settle_left > 0; i++) usleep(10 * 1000);
    CHECK(g_settle_left == 0);
    CHECK(g_settles >= 3);
    int ticks = g_settles; // disarmed: no more calls
    usleep(3 * kTrimTickMs * 1000);
    CHECK(g_settles == ticks);
    reaper_set_settle(snapshot_settle); // the real one, for the rest of this test binary
}
