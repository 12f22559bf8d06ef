// python_arenas.cpp — see python_arenas.h.
#include "python_arenas.h"

#include "derived_threshold.h"
#include "large/block_zone.h"
#include "large/large.h"
#include "log.h"

namespace spillway {

bool python_arenas_wanted() {
    if (!large_active()) return false;
    const Settings &s = large_settings();
    if (s.python_arenas == PythonArenas::never) return false;
    // Without fork snapshots a fork child would share the chunks' pages
    // with its parent: two interpreters writing one heap (a DataLoader
    // worker crashed so at once).
    if (!s.fork_snapshot) return false;
    if (s.policy != Policy::auto_ && s.policy != Policy::disk) return false;
    if (s.python_arenas == PythonArenas::auto_ && read_memory_limit("") == 0) return false;
    SPW_LOG(info, "Python object arenas go to spill chunks of %zu bytes (python.arenas = \"%s\")",
            block_zone_chunk_bytes(size_t(1) << 20), python_arenas_name(s.python_arenas));
    return true;
}

void *python_arena_take(size_t size) { return block_zone_take(size); }

bool python_arena_give(void *p, size_t size) { return block_zone_give(p, size); }

} // namespace spillway
