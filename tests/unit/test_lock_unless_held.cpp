// test_lock_unless_held.cpp — a fork's prepare handler takes a lock unless
// the forking thread itself holds it: it waits for any other holder, never
// for itself.
#include "os/lock_unless_held.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <ctime>
#include <pthread.h>
#include <thread>

using namespace spillway;

namespace {

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

} // namespace

TEST_CASE("lock_unless_held_here: takes a free lock, waits for others, never for itself") {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    REQUIRE(lock_unless_held_here(&m));
    // Now held by this thread: a second call must return at once, untaken.
    double t0 = now_s();
    CHECK_FALSE(lock_unless_held_here(&m));
    CHECK(now_s() - t0 < 0.04);
    pthread_mutex_unlock(&m);

    std::atomic<bool> holding{false};
    std::thread holder([&] {
        pthread_mutex_lock(&m);
        holding = true;
        struct timespec ts = {0, 150000000};
        nanosleep(&ts, nullptr);
        pthread_mutex_unlock(&m);
    });
    while (!holding) std::this_thread::yield();
    t0 = now_s();
    CHECK(lock_unless_held_here(&m)); // waits for the other thread
    CHECK(now_s() - t0 > 0.05);
    pthread_mutex_unlock(&m);
    holder.join();
}
