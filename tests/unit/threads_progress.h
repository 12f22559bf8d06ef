// threads_progress.h — for the unit tests whose threads could be left
// waiting by a lost wake-up: how many of them made no progress within a
// bound. A thread a wake reached gets on within a scheduling delay
// (milliseconds; none of 50 runs under two busy loops at load 7 to 13 came
// near 10 s); one that no wake reached never does, so the bound only
// decides how long a failure takes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <unistd.h>

namespace test {

template <int N>
int threads_stuck(const std::atomic<uint64_t> (&progress)[N], std::chrono::seconds bound = std::chrono::seconds(10)) {
    uint64_t before[N];
    for (int t = 0; t < N; t++) before[t] = progress[t].load();
    auto deadline = std::chrono::steady_clock::now() + bound;
    for (int t = 0; t < N; t++)
        while (progress[t].load() == before[t] && std::chrono::steady_clock::now() < deadline) usleep(100);
    int stuck = 0;
    for (int t = 0; t < N; t++) stuck += progress[t].load() == before[t];
    return stuck;
}

} // namespace test
