// config_error.h — the line a bad setting gets and the status it stops the
// job with, for every place that says it: the engine's start-up, the front's
// (front/start_verdict.h), `spillway run` and `spillway check`
// (config.h's config_error_line assembles it from these).
//
// Invariant: constants only, over libc alone (the front reads them).
#pragma once

#include <cstring>

namespace spillway {

constexpr int kConfigErrorExit = 78; // EX_CONFIG

// "spillway: config error: " MESSAGE, then one of the two endings.
constexpr char kConfigErrorStart[] = "spillway: config error: ";
constexpr char kConfigErrorStops[] = " (fix it, or set SPILLWAY_ON_ERROR=continue to run unprotected)";
constexpr char kConfigErrorContinues[] = " (SPILLWAY_ON_ERROR=continue: running WITHOUT spilling)";

// Whether SPILLWAY_ON_ERROR (its value, or nullptr) lets the job run on.
inline bool config_error_continues(const char *on_error) {
    return on_error && strcmp(on_error, "continue") == 0;
}

} // namespace spillway
