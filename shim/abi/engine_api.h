// engine_api.h — the one table through which libspillway.so (the front:
// the interposed entry points, loaded into every process) reaches
// libspillway_engine.so (the large path, the config parser, the control
// API: everything that needs libstdc++, toml++ and libunwind).
//
// Why two libraries: loading libstdc++ (with libm and libgcc_s) into a
// process costs more than everything else the shim does at start-up
// (/bin/true: about 1.5x bare mimalloc for libstdc++ alone). The front
// depends on libc and libmimalloc.so.2 only; the engine is dlopened from
// the same directory when it is first needed (engine_loader.h says when).
//
// Invariants:
//  * The table is constant and exported under one name; its version and
//    size are checked before use, so a front never calls an engine from
//    another build.
//  * The engine never registers fork handlers of its own: the front's
//    handlers call fork_prepare/parent/child, so a start-up racing a fork
//    cannot register them in the middle of one.
//  * The state both halves read on the small path (the threshold, the
//    arena's bounds) and the logger live in the front (front_state.cpp);
//    the engine refers to them by name (SPW_SHARED).
#pragma once

#include <cstddef>
#include <sys/types.h>

#include "settings_check.h"
#include "spillway.h"
#include "verdict_cache.h"

namespace spillway {

// Every spillway_* function of spillway.h: return type, name, parameters,
// arguments, and what the front returns when no engine could be loaded
// (the answers of a shim that is not routing).
#define SPW_CONTROL_API(X)                                                                       \
    X(int, spillway_is_active, (void), (), 0)                                                    \
    X(int, spillway_backing, (const void *p), (p), SPILLWAY_NONE)                                \
    X(int, spillway_is_disk_backed, (const void *p), (p), 0)                                     \
    X(int, spillway_access_phase, (const void *p), (p), 0)                                       \
    X(int, spillway_release_page_cache, (const void *p), (p), -EINVAL)                           \
    X(long, spillway_residency, (const void *p, size_t len), (p, len), -ENOSYS)                  \
    X(int, spillway_has_live_mapping, (const char *path), (path), -ENOSYS)                       \
    X(int, spillway_release_page_cache_by_path, (const char *path), (path), -ENOSYS)             \
    X(void *, spillway_alloc, (size_t size, unsigned flags), (size, flags), malloc(size))        \
    X(int, spillway_spill, (void *p), (p), -EINVAL)                                              \
    X(int, spillway_export, (const void *p, char *path, size_t cap), (p, path, cap), -EINVAL)    \
    X(int, spillway_file_path, (const void *p, char *path, size_t cap), (p, path, cap), -EINVAL) \
    X(void *, spillway_map, (const char *path, size_t expected_size), (path, expected_size),     \
      (errno = ENOSYS, nullptr))                                                                 \
    X(void *, spillway_alloc_disk, (size_t size, unsigned flags), (size, flags),                 \
      (errno = ENOSYS, nullptr))                                                                 \
    X(size_t, spillway_threshold, (void), (), SIZE_MAX)                                          \
    X(int, spillway_can_spill, (void), (), 0)                                                    \
    X(int, spillway_memory_fits, (size_t size), (size), -ENOSYS)                                 \
    X(int, spillway_region, (const void *p, void **start, size_t *size), (p, start, size),      \
      -EINVAL)                                                                                   \
    X(int, spillway_prepare_dir, (void), (), -ENOSYS)

constexpr unsigned kEngineApiVersion = 5; // 5: CPython's object arenas (python_arenas_*)

// What the front hands the engine's start-up (front/start_verdict.h says
// how it decides): the settings as the process started with them, so the
// engine judges exactly what the front saw, whenever it starts.
struct StartRequest {
    // The setting variables at start-up, in kSettingVariables' order
    // (settings_check.h); nullptr: unset or empty. A later setenv changes
    // nothing: the settings are the process's from its start.
    const char *env[kSettingVariableCount] = {};
    const char *on_error = nullptr; // SPILLWAY_ON_ERROR
    // The text of the file SPILLWAY_CONFIG names, read once by the front;
    // nullptr when it could not be (the engine then reads the file and
    // says why it cannot).
    const char *config_text = nullptr;
    size_t config_len = 0;
    // The settings were judged before main (by the front, or by `spillway
    // run`): the job is running, so nothing may stop it now; what went bad
    // since (the spill directory, the log file) is a warning and a fallback.
    bool judged = false;
    int log_fd = -1;            // the log file the front opened for judged settings, else -1
    bool store_verdict = false; // put a good config's verdict in the cache (verdict_cache.h)
    EngineIdentity engine;      // the engine file the front found, the cache's key
};

struct EngineApi {
    unsigned version; // kEngineApiVersion
    size_t size;      // sizeof(EngineApi)
    // Start-up (engine/startup.h, engine_startup): settings, spill
    // directory, arena, call sites, profile.
    // true when large allocations are routed. A bad config exits 78 here
    // (unless the request says it was judged already).
    bool (*start)(const StartRequest *request);
    void *(*large_allocate)(size_t size, size_t align, bool zero);
    void (*large_free)(void *p);
    void *(*large_realloc)(void *p, size_t size);
    size_t (*large_usable_size)(const void *p);
    int (*shm_open_path)(const char *path, int flags, mode_t mode, int dirfd);
    int (*shm_resize)(int fd, off_t size, bool truncate_call, int mode, off_t offset);
    int (*shm_unlink_path)(const char *path, int dirfd, int flags);
    void (*fork_prepare)();
    void (*fork_parent)();
    void (*fork_child)();
    // CPython's object arenas (engine/python_arenas.h): whether they go to
    // the block zone, and its take and give (nullptr / false: not the zone's).
    bool (*python_arenas_wanted)();
    void *(*python_arena_take)(size_t size);
    bool (*python_arena_give)(void *p, size_t size);
#define SPW_API_SLOT(ret, name, params, args, unavailable) ret(*name) params;
    SPW_CONTROL_API(SPW_API_SLOT)
#undef SPW_API_SLOT
};

} // namespace spillway

// The engine's one exported symbol.
#define SPW_ENGINE_API_SYMBOL "spillway_engine_api"
