// python_arenas.h — CPython's object arenas (its small objects, 1 MiB at a
// time, mapped by the interpreter with mmap, past malloc) handed to the
// engine's block zone (engine/large/block_zone.h) through CPython's own
// hook for them, PyObject_SetArenaAllocator (public since Python 3.4).
//
// WHEN. The hook is installed by the front's constructor, before main, in
// a process that has it (an interpreter, or a program linked with
// libpython). It decides at the interpreter's first arena: with no config
// file and no memory limit (python.arenas can then only be its default,
// "auto") it gives the interpreter its own allocator back without starting
// the engine; otherwise it starts the engine, which says whether the
// arenas go to the zone (engine/python_arenas.h).
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
