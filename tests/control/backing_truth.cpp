// backing_truth.cpp — see backing_truth.h.
#include "backing_truth.h"

#include "spillway.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace control_test {

std::vector<MapSpan> mappings_over(uintptr_t start, size_t len) {
    std::vector<MapSpan> out;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return out;
    char line[PATH_MAX + 256];
    const uintptr_t end = start + len;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        unsigned long long inode = 0;
        char perms[8] = {0};
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %llu %n", &lo, &hi, perms, &inode, &path_at) < 4) continue;
        if (hi <= start || lo >= end) continue;
        MapSpan s;
        s.lo = lo < start ? start : lo;
        s.hi = hi > end ? end : hi;
        s.perms = perms;
        s.inode = inode;
        s.path = path_at > 0 ? line + path_at : "";
        while (!s.path.empty() && (s.path.back() == '\n' || s.path.back() == ' ')) s.path.pop_back();
        out.push_back(s);
    }
    fclose(f);
    return out;
}

namespace {

const char *name_of(int backing) {
    switch (backing) {
    case SPILLWAY_DISK: return "disk";
    case SPILLWAY_MEMORY: return "memory";
    case SPILLWAY_ANON: return "anon";
    default: return "none";
    }
}

// Whether a mapping with this path holds bytes of that backing.
bool path_fits(int backing, const std::string &path) {
    bool memfd = path.rfind("/memfd:", 0) == 0;
    bool special = !path.empty() && path[0] == '[';
    switch (backing) {
    case SPILLWAY_DISK: return !path.empty() && !memfd && !special && path.rfind("/dev/shm/", 0) != 0;
    case SPILLWAY_MEMORY: return memfd;
    case SPILLWAY_ANON: return path.empty();
    default: return false;
    }
}

std::string describe(const MapSpan &s, uintptr_t start) {
    char buf[PATH_MAX + 128];
    snprintf(buf, sizeof buf, "%zu KiB at offset %zu KiB is %s %s", (size_t)(s.hi - s.lo) >> 10,
             (size_t)(s.lo - start) >> 10, s.perms.c_str(), s.path.empty() ? "(anonymous)" : s.path.c_str());
    return buf;
}

} // namespace

std::string backing_lie(const void *p, bool fork_child) {
    void *start_p = nullptr;
    size_t size = 0;
    if (spillway_region(p, &start_p, &size) != 0) return "not a live region of the shim";
    const int backing = spillway_backing(p);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = (uintptr_t)start_p;
    const size_t len = (size + page - 1) / page * page;
    const char sharing = fork_child || backing == SPILLWAY_ANON ? 'p' : 's';
    std::string head = std::string("reported ") + name_of(backing) + " for " + std::to_string(len >> 10) + " KiB, but ";
    uintptr_t at = start;
    for (const MapSpan &s : mappings_over(start, len)) {
        if (s.lo != at) return head + std::to_string((s.lo - at) >> 10) + " KiB at offset " +
                               std::to_string((at - start) >> 10) + " KiB is not mapped";
        if (s.perms.size() != 4 || s.perms[0] != 'r' || s.perms[1] != 'w' || s.perms[3] != sharing ||
            !path_fits(backing, s.path))
            return head + describe(s, start);
        at = s.hi;
    }
    if (at != start + len)
        return head + "its last " + std::to_string((start + len - at) >> 10) + " KiB are not mapped";
    return "";
}

} // namespace control_test
