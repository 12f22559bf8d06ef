// engine_loader.h — when libspillway.so (the front) loads and starts
// libspillway_engine.so (engine_api.h says why there are two libraries).
//
// WHEN. At start-up, in the front's constructor, if the job configures the
// shim (SPILLWAY_CONFIG, SPILLWAY_DIR, SPILLWAY_THRESHOLD, SPILLWAY_POLICY,
// SPILLWAY_LOG or SPILLWAY_STATS is set): a bad setting is then still one
// line and exit 78 before the program runs (DESIGN.md), unless `spillway
// run` has judged exactly these settings already (SPILLWAY_CHECKED,
// settings_check.h; the front then uses the judged threshold and log level
// and writes the process's empty stats line itself if the engine never
// starts). Otherwise, with the built-in defaults, which cannot be wrong, or
// with judged settings, it starts at its first use: the
// first allocation at or above the threshold, the first aligned
// request mimalloc cannot serve, the first open/unlink of a /dev/shm file,
// or the first spillway_* call. A process that never gets there (most of
// a build's or a pipeline's processes) never loads libstdc++, the config
// parser, libunwind, the spill directory or the engine's threads.
//
// THREADS. One thread starts the engine, under the start lock. A thread
// that needs it meanwhile waits for it, at most kStartWaitNs (the starter
// may be waiting for the dynamic loader's lock, which the waiter may hold
// while a library's constructor allocates); past that it is answered as if
// the shim were not routing (the small path), with one warning. The
// starting thread itself, and a signal handler that interrupted it, get
// the small path at once: start-up never recurses into itself.
//
// FORK. The front's handlers are the only ones registered: prepare takes
// the start lock while start-up is not settled (so no start-up is half done
// in the child; once it is, nothing takes that lock and forks need not wait
// for each other there), then calls the engine's prepare if it has started;
// parent and child call the engine's and release the lock. What prepare
// found is kept per thread: glibc runs the handlers of concurrent forks
// concurrently (it drops its atfork lock around each handler), and only the
// forking thread runs its fork's parent or child handler. A fork from a
// signal handler that interrupted the start-up (or one that could not get
// the lock in time) leaves the child with no engine: everything it
// allocates takes the small path.
#pragma once

#include "engine_api.h"

namespace spillway {

// The engine's table when it routes large allocations; starts it first if
// it has not started yet. nullptr when it does not route (it could not be
// loaded, its start-up left the shim off, or see THREADS above).
const EngineApi *engine_routing();

// The engine's table only if it has already started and routes: never
// starts it (for calls that can only concern the engine's own regions).
const EngineApi *engine_if_routing();

// For the control API: starts the engine if needed and returns its table
// whether or not it routes; nullptr only when it could not be loaded.
const EngineApi *engine_for_control();

} // namespace spillway
