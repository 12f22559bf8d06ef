// engine_table.cpp — the table libspillway_engine.so hands the front (engine_api.h):
// its only exported symbol. Every entry is a function of the engine's own
// files; the spillway_* ones are control.cpp's, which are local to the
// engine (its version script), so the front's stubs of the same names
// never shadow them.
#include "engine_api.h"

#include "fork_safety.h"
#include "large/large.h"
#include "python_arenas.h"
#include "shm/shm.h"
#include "startup.h"

using namespace spillway;

extern "C" __attribute__((visibility("default"))) const EngineApi spillway_engine_api = {
    kEngineApiVersion,
    sizeof(EngineApi),
    engine_startup,
    large_allocate,
    large_free,
    large_realloc,
    large_usable_size,
    shm_open_path,
    shm_resize,
    shm_unlink_path,
    fork_prepare,
    fork_parent,
    fork_child,
    python_arenas_wanted,
    python_arena_take,
    python_arena_give,
#define SPW_API_ENTRY(ret, name, params, args, unavailable) name,
    SPW_CONTROL_API(SPW_API_ENTRY)
#undef SPW_API_ENTRY
};
