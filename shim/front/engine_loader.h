// engine_loader.h — when libspillway.so (the front) loads and starts
// libspillway_engine.so (engine_api.h says why there are two libraries).
//
// WHEN. At its first use: the first allocation at or above the threshold,
// the first aligned request mimalloc cannot serve, the first open/unlink of
// a /dev/shm file, or the first spillway_* call. A process that never gets
// there (most of a build's or a pipeline's processes) never loads
// libstdc++, the config parser, libunwind, the spill directory or the
// engine's threads. The settings are judged before main all the same, so a
// bad one is still one line and exit 78 before the program runs (DESIGN.md):
// by the front itself (start_verdict.h: the variables, the spill directory,
// a config file by its cached verdict), or by `spillway run`
// (SPILLWAY_CHECKED, settings_check.h). Only a config file the front
// cannot judge (one this user's jobs have not run with this engine) makes
// the engine start before main, in the front's constructor, to judge it.
// A process whose judged settings name a stats file and whose engine never
// started still writes its (empty) line at exit (stats_line.h).
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

// THRESHOLD NOT GIVEN. The front holds kDerivedThresholdFloor meanwhile, so
// that no allocation the derived threshold would route slips past; the
// first request at or above it (before the engine starts) derives the
// threshold from the memory limit (derived_threshold.h) and returns it, and
// the front holds that from then on. 0 when there is nothing to derive (a
// threshold was given, or it was derived already, or the engine started and
// holds its own). Reading the limit costs a few small file reads, once, and
// only in a process that allocates that much: start-up reads nothing.
size_t derive_threshold_if_pending();

// Where the engine is: next to this library (libspillway_engine.so), cut
// to fit cap; returns the path's whole length (>= cap: it was cut).
size_t engine_file_path(char *out, size_t cap);

} // namespace spillway
