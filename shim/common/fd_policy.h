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
// Start-up, which also lets libunwind open its pipe, runs with any closed
// standard slot temporarily filled; libunwind's pipe is made high too
// (LowFdsTaken).
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

// Returns fd moved to a number >= high_fd_floor() (close-on-exec), or, when
// none is free there, >= 3; fd itself when it cannot be moved.
inline int move_high(int fd) {
    if (fd < 0 || fd >= high_fd_floor()) return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, high_fd_floor());
    if (high < 0 && fd <= 2) high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (high < 0) return fd;
    close(fd);
    return high;
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

// While it lives, every free descriptor below high_fd_floor() is taken (by
// copies of /dev/null), so a descriptor a library opens meanwhile lands
// high: libunwind's pipe, which it keeps and writes bytes of memory into.
class LowFdsTaken {
  public:
    LowFdsTaken() {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0) return;
        taken_[n_++] = null;
        while (n_ < kHighFd) {
            int fd = fcntl(null, F_DUPFD_CLOEXEC, 0);
            if (fd < 0) break;
            if (fd >= high_fd_floor()) {
                close(fd);
                break;
            }
            taken_[n_++] = fd;
        }
    }
    ~LowFdsTaken() {
        for (int i = 0; i < n_; i++) close(taken_[i]);
    }
    LowFdsTaken(const LowFdsTaken &) = delete;
    LowFdsTaken &operator=(const LowFdsTaken &) = delete;

  private:
    int taken_[kHighFd];
    int n_ = 0;
};

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
