// test_reaper.cpp — regions handed to the reaper are all retired, by the
// thread or (past the backpressure bound) inline, and drain() waits for them.
#include "large.h"
#include "reaper.h"
#include "region.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <vector>

using namespace spillway;

static std::atomic<int> g_retired{0};

TEST_CASE("every submitted region is retired exactly once") {
    reaper_init([](Region *r) {
        g_retired++;
        region_delete(r);
    });
    for (int i = 0; i < 500; i++) reaper_submit(region_new());
    reaper_drain();
    CHECK(g_retired == 500);
    reaper_init(large_retire); // what the rest of this test binary expects
}
