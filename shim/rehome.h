// rehome.h — moving a live region's bytes to a new file in place: same
// address, same bytes, safe while other threads read and write it.
//
// How: the region is made read-only, its bytes are copied into the new
// file, and the file is mapped over the same range (one mmap MAP_FIXED,
// atomic for every other thread). A thread that writes during the copy
// faults; a SIGSEGV handler recognises the address as "being moved", waits
// for the move to finish and returns, so the write is retried against the
// new mapping. Faults anywhere else are passed to the handler that was
// installed before ours (or the default action), unchanged.
//
// Invariant: readers never block and never see torn data; writers wait;
// at most one move is in flight (moves are rare and serialised).
//
// Known limitation: the kernel's own stores into the region (read(2) or
// recv(2) into it) do not fault to user space; during the copy they fail
// with EFAULT. Only userfaultfd write-protection could make them wait, and
// container seccomp profiles forbid it, so it is documented instead.
#pragma once

#include <cstddef>

namespace spillway {

struct Region;
struct SpillFile;

// Copies r's bytes into dest (reserved, at least r->map_len long) and maps
// dest over r. The caller has looked r up and owns dest. 0 or -errno.
int rehome_region(Region *r, SpillFile *dest);

// Fork (fork_safety.h): prepare waits for a move in flight unless this
// thread is the mover (returns false then); the child never waits for a
// move that no thread of its own will finish.
bool rehome_fork_prepare();
void rehome_fork_parent();
void rehome_after_fork_child();

} // namespace spillway
