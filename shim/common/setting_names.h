// setting_names.h — the words a setting takes (a policy, a log level) and
// what they mean: one list, read by the config parser (config.cpp), the
// environment's check (env_overrides.cpp, which the front runs before the
// engine is loaded) and the tool.
//
// Invariant: header-only over libc and log.h; no allocation, no libstdc++
// (the front includes it).
#pragma once

#include "log.h"

#include <cstddef>
#include <cstring>

namespace spillway {

enum class Policy { disk, memory, anon, auto_ };

// Whether a policy may put regions on disk, so needs a usable spill
// directory (memory and anon never touch it).
constexpr bool policy_needs_disk(Policy p) { return p == Policy::disk || p == Policy::auto_; }

inline bool same_word(const char *text, size_t len, const char *word) {
    return strlen(word) == len && memcmp(text, word, len) == 0;
}

// "disk", "memory", "anon", "auto".
inline bool parse_policy_word(const char *text, size_t len, Policy *out) {
    static const char *const words[] = {"disk", "memory", "anon", "auto"};
    for (int i = 0; i < 4; i++)
        if (same_word(text, len, words[i])) return *out = (Policy)i, true;
    return false;
}

inline const char *policy_word(Policy p) {
    static const char *const words[] = {"disk", "memory", "anon", "auto"};
    return (int)p >= 0 && (int)p < 4 ? words[(int)p] : "?";
}

// "error", "warn" (or "warning"), "info", "debug".
inline bool parse_level_word(const char *text, size_t len, LogLevel *out) {
    static const char *const words[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (same_word(text, len, words[i])) return *out = (LogLevel)i, true;
    if (same_word(text, len, "warning")) return *out = LogLevel::warn, true;
    return false;
}

inline const char *level_word(LogLevel l) {
    static const char *const words[] = {"error", "warn", "info", "debug"};
    return (int)l >= 0 && (int)l < 4 ? words[(int)l] : "?";
}

} // namespace spillway
