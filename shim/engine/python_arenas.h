// python_arenas.h — the engine's side of CPython's object arenas (its small
// objects, 1 MiB at a time, which the interpreter maps with mmap itself,
// past malloc): whether this process's arenas go to the block zone
// (large/block_zone.h), and the zone's take and give as the front's hook
// calls them (front/python_arenas.cpp installs the hook).
//
// Invariant: wanted only while the large path routes, under policy "auto"
// or "disk" (memory and anon put nothing on disk), with fork snapshots on
// (a fork child must never share its parent's heap: each side writes its
// objects' reference counts), and under python.arenas "auto" only when a
// memory limit applies.
#pragma once

#include <cstddef>

namespace spillway {

bool python_arenas_wanted();
void *python_arena_take(size_t size);
bool python_arena_give(void *p, size_t size);

} // namespace spillway
