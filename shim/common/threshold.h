// threshold.h — the threshold's default and its floor: what the front needs
// of the settings before the engine (and config.h, with its parser and
// libstdc++ types) is loaded.
//
// Invariant: constants and an enum only, over <cstdint> alone: the front (built without
// libstdc++), the engine and the command-line tool all read these.
#pragma once

#include <cstdint>

namespace spillway {

// The threshold with no settings given (the front starts the engine lazily
// with it, front/engine_loader.h).
constexpr uint64_t kDefaultThreshold = 64ull << 20;

// Smallest threshold the shim accepts: below it regions waste whole pages.
constexpr uint64_t kMinThreshold = 64 * 1024;

// Where the threshold in force came from (the "active:" log line says it).
// Not given by the user: derived from the memory limit (derived_threshold.h),
// which is the default itself without a limit under 512 MiB.
enum class ThresholdOrigin : uint8_t { not_given, config, environment };

} // namespace spillway
