// clock.h — the shim's and the tool's clocks, in nanoseconds.
//
// Invariant: header-only and libc-only (the front, built without libstdc++,
// uses it too); CLOCK_MONOTONIC for every interval and timestamp that
// crosses files, so a value from one place compares with one from another.
#pragma once

#include <cstdint>
#include <time.h>

namespace spillway {

inline uint64_t clock_ns(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

inline uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
// A few milliseconds coarse, and cheaper: for caches that expire in tens of ms.
inline uint64_t monotonic_coarse_ns() { return clock_ns(CLOCK_MONOTONIC_COARSE); }
inline uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

} // namespace spillway
