// start_memory.h — memory for what the front's start-up keeps for the
// process's life (the settings' snapshot, the config file's text, the
// config's cached verdict: start_verdict.h), taken from a static area.
//
// Why not malloc: mimalloc maps and touches its first segment at the first
// malloc, which a process that never allocates (/bin/true, most of a shell
// script's commands) otherwise never pays for; judging the settings with
// malloc cost /bin/true about 0.1 ms, the most of what the front added
// (docs/benchmarks.md, start-up).
//
// Invariant: libc only; what it gives is never freed, 8-aligned, zeroed
// only as .bss is; when the area is full it falls back to malloc, so a
// large config still works, at mimalloc's price.
#pragma once

#include <cstddef>

namespace spillway {

// n bytes, kept for the process's life; nullptr only if malloc fails.
void *start_keep(size_t n);

} // namespace spillway
