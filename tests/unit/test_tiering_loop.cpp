// test_tiering_loop.cpp — the controller thread's wake-up: a fork that froze
// regions makes it look at once, not at the end of its sleep.
#include "shim_fixture.h"
#include "tiering/tiering_loop.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using namespace spillway;

namespace {
// Polls pred for up to seconds.
template <typename Pred>
bool within(double seconds, Pred pred) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}
} // namespace

TEST_CASE("tiering_look_soon wakes the controller before its interval ends") {
    test::bring_up();
    tiering_notice(); // started once the large path is up
    unsigned &interval = test::settings().tiering.interval_ms;
    const unsigned saved = interval;
    REQUIRE(within(10, [] { return tiering_ticks() > 0; }));
    interval = 60000;
    // A look that begins after this call returns the new interval (one
    // under way may return the old, but its sleep ends at once): from then
    // on the loop sleeps a minute.
    const uint64_t t0 = tiering_ticks();
    tiering_look_soon();
    REQUIRE(within(10, [&] { return tiering_ticks() > t0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const uint64_t asleep = tiering_ticks();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(tiering_ticks() == asleep); // no limit here, nothing watched: it sleeps on
    tiering_look_soon();
    CHECK(within(10, [&] { return tiering_ticks() > asleep; }));
    interval = saved;
    tiering_look_soon(); // back to the usual interval at once
}
