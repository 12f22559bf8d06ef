// background_thread.h — how the shim starts each of its threads (the
// detector, the writeback pacer, the reaper, the tiering controller).
//
// Invariants: the thread is detached, runs with every signal blocked (a
// handler of the program never runs on it, and a signal meant for the
// program is never taken by it), has the given stack size and a name that
// says it is spillway's in `top -H` and /proc/<pid>/task/<tid>/comm. The
// caller's signal mask is unchanged when this returns. Threads do not
// survive fork: each owner resets its own "started" state in its
// *_after_fork_child hook (fork_safety.h), and starts again when next needed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// Starts main(nullptr) on a new thread; true when it was created.
bool start_background_thread(void *(*main)(void *), const char *name, size_t stack_bytes);

// CPU time the program itself has used: the process's, less what every
// thread started here has (so a background thread's work, writeback for
// one, is never taken for the program's progress). Threads inherited
// across fork are not this process's and are not counted.
uint64_t program_cpu_ns();

} // namespace spillway
