// python_arenas.h — CPython's object arenas (its small objects, 1 MiB at a
// time, mapped by the interpreter with mmap, past malloc) handed to the
// engine's block zone (engine/large/block_zone.h) through CPython's own
// hook for them, PyObject_SetArenaAllocator (public since Python 3.4).
//
// WHEN. The hook is installed by the front's constructor, before main, in
// a process that has it (an interpreter, or a program linked with
// libpython). It decides at the first arena the interpreter asks for once
// the engine routes (its first large allocation, or start-up when a config
// file is judged then): the engine says whether the arenas go to the zone
// (engine/python_arenas.h); if not, the interpreter gets its own allocator
// back. It never starts the engine itself: a process that allocates
// nothing large (most of a pipeline's helpers) keeps no engine, no spill
// file and no descriptor for its arenas. Arenas mapped before the decision
// stay the interpreter's.
//
// Invariants:
//  * An arena the zone did not hand out (when no chunk could be had) is
//    freed by the interpreter's own allocator: the zone tells its own.
//  * CPython's free is replaced before its alloc, so whatever order the
//    interpreter's struct copy stores in, no arena of the zone can reach
//    the interpreter's munmap.
#pragma once

namespace spillway {

// Installs the hook if this process has CPython's; called once, by the
// front's constructor.
void python_arenas_hook();

} // namespace spillway
