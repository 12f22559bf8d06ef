// derived_threshold.cpp — see derived_threshold.h.
#include "derived_threshold.h"
#include "size_text.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

namespace {

// Bounds of what is read, on the allocating thread's stack (~6.5 KiB in
// all). A longer cgroup path or file is read as "no limit": today's default.
constexpr size_t kCgroupFileMax = 4096; // /proc/self/cgroup (v1: a line per controller)
constexpr size_t kCgroupPathMax = 1024; // a Kubernetes pod's path is ~200 bytes
constexpr size_t kFullPathMax = 1536;

// The whole of a small file into buf (NUL-terminated); false if unreadable.
bool read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    return len > 0;
}

// One limit file: its bytes, or 0 for none ("max", v1's near-2^63, unreadable).
uint64_t limit_in(const char *path) {
    char text[64];
    if (!read_small(path, text, sizeof text)) return 0;
    char *end = nullptr;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || v >= (1ull << 60)) return 0;
    return v;
}

// The smallest limit from <root><base><path> up to <root><base>; 0 for none.
uint64_t tightest_on_path(const char *root, const char *base, char *path, const char *file) {
    uint64_t tightest = 0;
    char full[kFullPathMax];
    for (;;) {
        size_t len = strlen(path);
        bool top = len == 0 || (len == 1 && path[0] == '/');
        int n = snprintf(full, sizeof full, "%s%s%s/%s", root, base, top ? "" : path, file);
        if (n > 0 && (size_t)n < sizeof full) {
            uint64_t limit = limit_in(full);
            if (limit && (!tightest || limit < tightest)) tightest = limit;
        }
        if (top) break;
        char *slash = strrchr(path, '/');
        if (!slash) break;
        *(slash == path ? slash + 1 : slash) = 0; // "/a/b" -> "/a" -> "/"
    }
    return tightest;
}

} // namespace

uint64_t read_memory_limit(const char *root) {
    char cgroups[kCgroupFileMax];
    {
        char file[kFullPathMax];
        int n = snprintf(file, sizeof file, "%s/proc/self/cgroup", root);
        if (n <= 0 || (size_t)n >= sizeof file || !read_small(file, cgroups, sizeof cgroups)) return 0;
    }
    const char *v1 = nullptr, *v2 = nullptr;
    for (char *line = cgroups; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (strncmp(line, "0::", 3) == 0) v2 = line + 3;
        else if (char *c = strstr(line, ":memory:")) v1 = c + 8;
        line = next;
    }
    // The memory controller's v1 hierarchy binds when it is mounted (a
    // hybrid host lists both); otherwise the unified one. As cgroup.h reads.
    const char *path = v1 ? v1 : v2;
    if (!path) return 0;
    char walk[kCgroupPathMax];
    size_t len = strlen(path);
    if (len >= sizeof walk) return 0;
    memcpy(walk, path, len + 1);
    return v1 ? tightest_on_path(root, "/sys/fs/cgroup/memory", walk, "memory.limit_in_bytes")
              : tightest_on_path(root, "/sys/fs/cgroup", walk, "memory.max");
}

int describe_threshold_origin(char *out, size_t cap, ThresholdOrigin origin, uint64_t limit) {
    if (origin == ThresholdOrigin::environment) return snprintf(out, cap, "SPILLWAY_THRESHOLD");
    if (origin == ThresholdOrigin::config) return snprintf(out, cap, "the config file");
    if (limit == 0) return snprintf(out, cap, "the default, no memory limit");
    char lim[48], floor[48];
    format_size_text(lim, sizeof lim, limit);
    format_size_text(floor, sizeof floor, kDerivedThresholdFloor);
    uint64_t t = threshold_for_limit(limit);
    unsigned d = (unsigned)kDerivedThresholdDivisor;
    if (t == kDefaultThreshold)
        return snprintf(out, cap, "the default, 1/%u of the %s memory limit is above it", d, lim);
    if (t == kDerivedThresholdFloor && limit / kDerivedThresholdDivisor < kDerivedThresholdFloor)
        return snprintf(out, cap, "the %s floor, 1/%u of the %s memory limit is below it", floor, d, lim);
    return snprintf(out, cap, "1/%u of the %s memory limit", d, lim);
}

} // namespace spillway
