// proc_stat.h — reads a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line
// past its command name: the fields from the state (field 3) on.
//
// Why one reader: the command name (field 2) is in parentheses and may
// itself hold spaces and parentheses, so the fields can only be counted
// from the last ')'. libc only and allocation-free.
#pragma once

#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

// Reads path into buf[size] and returns the text from the state letter on
// ("S 1 123 ..."), or nullptr when the file cannot be read or is malformed.
inline const char *proc_stat_fields(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0) return nullptr;
    buf[n] = 0;
    const char *end = strrchr(buf, ')');
    return end && end[1] == ' ' && end[2] ? end + 2 : nullptr;
}

} // namespace spillway
