// test_reaper.cpp — regions and files handed to the reaper are all retired
// or closed exactly once, by the thread or (past the backpressure bound)
// inline, and drain() waits for them.
#include "backing.h"
#include "large.h"
#include "reaper.h"
#include "region.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <pthread.h>
#include <unistd.h>

using namespace spillway;

static std::atomic<int> g_retired{0}, g_closed{0}, g_closed_elsewhere{0};
static pthread_t g_submitter;

TEST_CASE("every submitted region is retired exactly once") {
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
