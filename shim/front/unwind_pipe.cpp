// unwind_pipe.cpp — pipe2, so that libunwind's pipe always lands high.
//
// Why: libunwind checks memory by writing a byte of it into a pipe it keeps
// and reading it back. When a program has closed that pipe (close_range(3,
// ~0U), a daemon's clean-up), libunwind's next check fails to read it and
// makes a new one at the lowest free numbers (3 and 4 in
// tests/programs/closed_fds, second round); after the program's next
// clean-up those numbers can be the program's own files, and libunwind
// would then read a byte of one and write a byte of memory into the other. Every pipe libunwind makes,
// the first and any later one, is moved to the shim's high descriptors
// (fd_policy.h), where a program's files do not land.
//
// Invariant: a call from anywhere but libunwind's code is the system call
// alone; telling the two apart is two loads and two comparisons (unwind_text.h), no lock, so
// it is safe in a fork's child and in a signal handler.
#include "fd_policy.h"
#include "unwind_text.h"

#include <sys/syscall.h>
#include <unistd.h>

extern "C" __attribute__((visibility("default"))) int pipe2(int fds[2], int flags) {
    if (syscall(SYS_pipe2, fds, flags) != 0) return -1;
    // The engine stores end before begin (release): a begin seen is whole.
    uintptr_t begin = spillway::g_unwind_text_begin.load(std::memory_order_acquire);
    uintptr_t end = spillway::g_unwind_text_end.load(std::memory_order_relaxed);
    auto caller = (uintptr_t)__builtin_return_address(0);
    if (begin && caller >= begin && caller < end) {
        // O_NONBLOCK belongs to the open pipe, so the copies keep it; they
        // are close-on-exec, as libunwind asks.
        fds[0] = spillway::move_to_unwind_slots(fds[0]);
        fds[1] = spillway::move_to_unwind_slots(fds[1]);
    }
    return 0;
}
