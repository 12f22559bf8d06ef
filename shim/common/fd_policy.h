// fd_policy.h — descriptors the shim keeps never occupy 0, 1 or 2.
//
// Why: a program started with stdin/stdout/stderr closed (daemons, `cmd
// >&-`, subprocess swapping its std fds) would otherwise find the spill
// directory or a spill file in its stdout slot (found by CPython's
// test_subprocess under the shim). Every descriptor the shim opens and
// keeps goes through above_stdio(); one opened only to be read and closed
// at once (a /proc or cgroup file) may hold a free standard slot for those
// few microseconds, and a /dev/shm descriptor opened for the program
// (shm.cpp) is the program's own, numbered as open(2) would. Start-up,
// which also lets libunwind open its pipe, runs with any closed standard
// slot temporarily filled.
#pragma once

#include <fcntl.h>
#include <unistd.h>

namespace spillway {

// Returns fd moved to a number >= 3 (close-on-exec), or fd itself.
inline int above_stdio(int fd) {
    if (fd < 0 || fd > 2) return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return high;
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
