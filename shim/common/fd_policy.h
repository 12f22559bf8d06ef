// fd_policy.h — descriptors the shim keeps sit high, out of the program's way.
//
// Why not 0, 1 or 2: a program started with stdin/stdout/stderr closed
// (daemons, `cmd >&-`, subprocess swapping its std fds) would otherwise find
// the spill directory or a spill file in its stdout slot (found by CPython's
// test_subprocess under the shim).
// Why high (kHighFd and up, below the descriptor limit): a program may close
// every descriptor it did not open itself (close_range(3, ~0U), a daemon's
// clean-up) and open its own files. open(2) gives the lowest free number, so
// its files took the shim's old numbers, and the shim then punched holes in
// them, mapped them as regions, and libunwind wrote memory bytes into them:
// a program that closed descriptors 3 and up, then opened four files, had 64
// MiB of the fourth zeroed by the next free (tests/programs/closed_fds). High,
// the numbers stay free after such a clean-up: the shim's calls fail (EBADF)
// instead of reaching the program's files.
// Every descriptor the shim opens and keeps goes through move_high(); one
// opened only to be read and closed at once (a /proc or cgroup file) may hold
// a low slot for those few microseconds, and a /dev/shm descriptor opened for
// the program (shm.cpp) is the program's own, numbered as open(2) would.
// Start-up runs with any closed standard slot temporarily filled; libunwind's
// pipe, made by libunwind itself, is moved high by the front's pipe2
// (front/unwind_pipe.cpp).
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace spillway {

constexpr int kHighFd = 512;

// The lowest number move_high uses: kHighFd, or half the soft descriptor
// limit when that is lower (F_DUPFD fails at or above the limit).
inline int high_fd_floor() {
    static int floor = 0;
    if (!floor) {
        struct rlimit r;
        long limit = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? (long)r.rlim_cur : 1 << 20;
        floor = limit / 2 < kHighFd ? (int)(limit / 2 > 3 ? limit / 2 : 3) : kHighFd;
    }
    return floor;
}

// The first two numbers at the floor are libunwind's pipe's, made by
// libunwind and moved there by the front's pipe2 (front/unwind_pipe.cpp);
// the shim's own descriptors start above them. Why: libunwind reads its pipe
// to check memory, and after a program has closed it, reads whatever sits
// on that number (a read that succeeds keeps the number; one that fails
// makes a new pipe). Kept free of the shim's files, the number is free after
// such a clean-up, so libunwind makes a new pipe there rather than writing a
// byte of memory into a spill file.
constexpr int kUnwindPipeSlots = 2;

// Returns fd moved to a number >= floor (close-on-exec), or, when none is
// free there, >= 3; fd itself when it cannot be moved.
inline int move_at_or_above(int fd, int floor) {
    if (fd < 0 || fd >= floor) return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high < 0 && fd <= 2) high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (high < 0) return fd;
    close(fd);
    return high;
}

// A descriptor the shim keeps: above libunwind's two numbers.
inline int move_high(int fd) {
    return move_at_or_above(fd, high_fd_floor() + kUnwindPipeSlots);
}

// An end of libunwind's pipe: on the floor's two numbers when they are free.
inline int move_to_unwind_slots(int fd) {
    return move_at_or_above(fd, high_fd_floor());
}

// Grows the process's descriptor table past high_fd_floor() now. Why: the
// kernel grows it at the first descriptor past its size (64), and in a
// process with threads it then waits for an RCU grace period
// (expand_fdtable): the shim's first high descriptor took 15.8 ms in a
// numpy process (OpenBLAS's threads run by then), 10 ms more per process
// that starts the engine. Done by the front's constructor, while the
// process has one thread, it costs two system calls.
inline void grow_fd_table() {
    int fd = fcntl(2, F_DUPFD_CLOEXEC, high_fd_floor());
    if (fd < 0) { // stderr closed
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0) return;
        fd = fcntl(null, F_DUPFD_CLOEXEC, high_fd_floor());
        close(null);
    }
    if (fd >= 0) close(fd);
}

// Fills closed standard slots with /dev/null while the shim starts up.
class StdioGuard {
  public:
    StdioGuard() {
        for (int fd = 0; fd < 3; fd++)
            if (fcntl(fd, F_GETFD) == -1) filled_[fd] = open("/dev/null", O_RDWR | O_CLOEXEC) == fd;
    }
    ~StdioGuard() {
        for (int fd = 0; fd < 3; fd++)
            if (filled_[fd]) close(fd);
    }
    StdioGuard(const StdioGuard &) = delete;
    StdioGuard &operator=(const StdioGuard &) = delete;

  private:
    bool filled_[3] = {false, false, false};
};

} // namespace spillway
