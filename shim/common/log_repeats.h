// log_repeats.h — a warning that a retry can raise again and again (a
// demotion failing at every look of the tiering controller while the disk
// is full, a fallback at every allocation) is a warning once for each
// reason; its repeats go to the debug level (the stats count them).
//
// Invariant: lock-free and allocation-free, so it is usable wherever
// log_msg is (inside malloc, on any thread). The first call with a reason
// gets LogLevel::warn, every later call with the same reason
// LogLevel::debug; a different reason is a new failure and gets warn.
// Reasons are small non-negative numbers (an errno, an enum); one of 192 or
// more shares the last slot.
#pragma once

#include "log.h"

#include <atomic>
#include <cstdint>

namespace spillway {

class RepeatedWarning {
  public:
    // The level to log this failure at.
    LogLevel level(int reason) {
        unsigned r = reason < 0 ? 0 : (unsigned)reason;
        if (r >= kReasons) r = kReasons - 1;
        uint64_t bit = 1ull << (r % 64);
        bool seen = seen_[r / 64].fetch_or(bit, std::memory_order_relaxed) & bit;
        return seen ? LogLevel::debug : LogLevel::warn;
    }
    // The tail of the first line, so a reader knows why it does not repeat.
    static const char *tail(LogLevel at) {
        return at == LogLevel::warn ? " (later ones like it are logged at debug level)" : "";
    }
    // A fork child logs under its own pid: it says each reason again.
    void forget() {
        for (auto &s : seen_) s.store(0, std::memory_order_relaxed);
    }

  private:
    static constexpr unsigned kReasons = 192;
    std::atomic<uint64_t> seen_[kReasons / 64] = {};
};

} // namespace spillway
