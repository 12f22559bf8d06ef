// verdict_cache.h — the verdicts of good config files, kept per user, so
// that a process whose SPILLWAY_CONFIG names a config this user's jobs have
// run before is judged by the front alone, without loading the engine
// (libstdc++, the TOML parser) before main (front/start_verdict.h).
//
// Where: /var/tmp/spillway-<euid>/.spillway-verdicts, in the default spill
// directory (one per user, mode 0700). A directory or file that is not this
// user's own and private (a symlink, another owner, writable by group or
// others) is never read nor written: the cache is not trusted across users.
//
// What: an entry is a config's exact text, the identity of the engine that
// judged it (its file's device, inode, size and modification time, so an
// upgraded or rebuilt engine judges anew), and what start-up needs of the
// settings it gives (ConfigVerdict). Only good configs are stored, by the
// engine after it parsed them; a bad one is always judged by the engine,
// which prints its one line. A hit needs the same engine and the same
// bytes, compared in full, so an edited, replaced or truncated file (or a
// stale or damaged cache) can only miss: a stale entry never lets a bad
// config run. The engine, when it starts, parses the very bytes the front
// read (engine_api.h, StartRequest), never the file again.
//
// Invariant: no exception, no libstdc++ (the front runs the lookup);
// allocates only with malloc. Writing is atomic (a private temporary file,
// then rename): a reader sees the old file or the new one, whole. A cache
// that cannot be read or written is no error: the engine judges instead.
#pragma once

#include "setting_names.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

// The engine file that judged a config.
struct EngineIdentity {
    uint64_t dev = 0, ino = 0, size = 0, mtime_sec = 0, mtime_nsec = 0;
};

// The engine file at this path; false if it cannot be stat'ed.
bool engine_identity(const char *engine_path, EngineIdentity *out);

// What start-up needs of a good config: its values before the variables
// of env_overrides.h apply. The strings are never nullptr ("" for none).
struct ConfigVerdict {
    uint64_t threshold = 0;
    bool threshold_given = false; // false: not in the config, derived at start (derived_threshold.h)
    Policy policy = Policy::auto_;
    LogLevel log_level = LogLevel::warn;
    bool spill_dir_given = false;
    bool allow_tmpfs = false;
    const char *spill_dir = "";
    const char *log_file = "";
    const char *stats_file = "";
    const char *stats_run = ""; // stats_run.h
};

// The cache's file name in its directory. Its temporary files start with
// spilldir.h's kTmpPrefix, so a crash's leftover is removed as any other.
constexpr const char kVerdictCacheName[] = ".spillway-verdicts";

// The cache's directory: the default spill directory (spill_dir_check.h),
// whose path this writes into out[0..cap).
void verdict_cache_dir(char *out, size_t cap);

// Looks the text up in the cache in directory `dir`. On a hit, fills *out,
// whose strings point into the cache file as read: into *storage (malloc'd:
// the caller frees it once done with them), or, given `keep`, into memory
// from keep, which is never freed (*storage is then nullptr; the front
// passes its static area so that judging a config does not initialise
// mimalloc: front/start_memory.h).
bool verdict_cache_lookup(const char *dir, const EngineIdentity &engine, const char *text, size_t len,
                          ConfigVerdict *out, void **storage, void *(*keep)(size_t) = nullptr);

// Stores a good config's verdict, first; keeps at most kVerdictCacheEntries,
// the newest, of any engine (the oldest go). Best effort.
constexpr int kVerdictCacheEntries = 8;
constexpr size_t kVerdictCacheMaxText = 64 * 1024; // a larger config is judged every time
// The directory is made (0700) if it is missing, its parent only if there.
void verdict_cache_store(const char *dir, const EngineIdentity &engine, const char *text, size_t len,
                         const ConfigVerdict &v);

} // namespace spillway
