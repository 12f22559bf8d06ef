// log.h — one-line diagnostics that never allocate.
//
// Invariant: log_msg formats into a stack buffer and emits it with a single
// write(2), so it is safe inside malloc, in a fork child and from the reaper
// thread, and lines from concurrent threads never interleave.
#pragma once

#include "shared_symbol.h"

namespace spillway {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

// Defined in libspillway.so (the front), used by both libraries.
SPW_SHARED void log_configure(LogLevel level, int fd);
SPW_SHARED bool log_enabled(LogLevel level);
SPW_SHARED void log_msg(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define SPW_LOG(level, ...)                                                  \
    do {                                                                     \
        if (::spillway::log_enabled(::spillway::LogLevel::level))            \
            ::spillway::log_msg(::spillway::LogLevel::level, __VA_ARGS__);   \
    } while (0)

// The same with a level chosen at run time (log_repeats.h).
#define SPW_LOG_AT(level_value, ...)                                         \
    do {                                                                     \
        ::spillway::LogLevel spw_level_ = (level_value);                     \
        if (::spillway::log_enabled(spw_level_)) ::spillway::log_msg(spw_level_, __VA_ARGS__); \
    } while (0)

} // namespace spillway
