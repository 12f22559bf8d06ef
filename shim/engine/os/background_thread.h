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

// Ends the process with exit(0), as glibc does when a program's last thread
// ends, once none of the program's own threads is left: its main thread
// called pthread_exit and every other thread of the program has ended.
// Why: glibc counts the threads started here too, so such a process lived
// on with spillway's threads alone, every signal blocked (a SIGTERM stayed
// pending: only SIGKILL ended it). CPython's test_threading hung on it: a
// child forked from a thread, whose one thread then returned. Called by the
// threads' periodic loops; it looks at most once a second, and at the
// other threads only when the main thread has ended.
void exit_if_only_ours_left();

// The rule (for tests): given the state letters of the process's threads
// (/proc/<pid>/task/<tid>/stat) that were not started here, whether none
// of them is running any more (each a zombie, 'Z', or dead, 'X').
bool no_program_thread_left(const char *states, size_t n);

} // namespace spillway
