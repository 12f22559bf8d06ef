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
// unless SPILLWAY_ON_ERROR=continue. That happens before main: either the
// engine starts there, or the front judged the settings there already
// (request.judged) and the engine, starting later, parses the very bytes
// and variables that were judged, so it finds them good too; what may have
// changed since (the spill directory, the log file) then warns and falls
// back, never stops a running job. (With no settings given the defaults
// cannot be wrong, which is why that case may start late.)
#pragma once

namespace spillway {

struct StartRequest;

// Returns true when large allocations are routed (g_large_threshold is then
// the configured threshold).
bool engine_startup(const StartRequest *request);

} // namespace spillway
