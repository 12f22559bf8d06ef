// startup.h — the engine's start-up (settings, spill directory, arena,
// call sites, learned profile) and its work at exit (startup.cpp).
//
// When it runs is the front's decision (front/engine_loader.h): in the
// front's constructor when the job configures the shim, else at the
// engine's first use; the front calls it through the table (EngineApi::
// start, engine_table.cpp). Allocations before it has finished (and during
// it, from the config parser, the logger or the dynamic loader) take the
// small path, which is always correct.
//
// Invariant: a bad config never leaves a job silently unprotected: one line
// on stderr and exit status 78 (EX_CONFIG), before anything is created,
// unless SPILLWAY_ON_ERROR=continue. (With no settings given the defaults
// cannot be wrong, which is why that case may start late.)
#pragma once

namespace spillway {

// Returns true when large allocations are routed (g_large_threshold is then
// the configured threshold).
bool engine_startup();

} // namespace spillway
