// log.cpp — see log.h. The level and fd are plain globals written once at
// start-up (before any thread of ours exists) and read racily afterwards.
#include "log.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <unistd.h>

namespace spillway {

static LogLevel g_level = LogLevel::warn;
static int g_fd = 2;

void log_configure(LogLevel level, int fd) {
    g_level = level;
    g_fd = fd;
}

bool log_enabled(LogLevel level) { return level <= g_level; }

void log_msg(LogLevel level, const char *fmt, ...) {
    static const char *const names[] = {"error", "warning", "info", "debug"};
    int saved_errno = errno;
    char line[1024];
    int n = snprintf(line, sizeof line, "spillway[%d]: %s: ", (int)getpid(),
                     names[static_cast<int>(level)]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    size_t len = n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t ignored = write(g_fd, line, len);
    (void)ignored;
    errno = saved_errno;
}

} // namespace spillway
