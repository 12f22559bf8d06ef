// cgroup.cpp — see cgroup.h.
#include "os/cgroup.h"
#include "clock.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

static const char *g_root = ""; // a plain pointer: usable before static initialisers run

void cgroup_set_root_for_tests(const char *root) { g_root = root ? root : ""; }

static bool read_small(const std::string &path, char *buf, size_t cap) {
    int fd = open((std::string(g_root) + path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0) return false;
    buf[n] = 0;
    return true;
}

static bool read_number(const std::string &path, uint64_t &out) {
    char buf[64];
    if (!read_small(path, buf, sizeof buf)) return false;
    if (strncmp(buf, "max", 3) == 0) {
        out = UINT64_MAX;
        return true;
    }
    char *end;
    out = strtoull(buf, &end, 10);
    return end != buf;
}

static uint64_t stat_field(const std::string &path, const char *key) {
    char buf[8192];
    if (!read_small(path, buf, sizeof buf)) return 0;
    size_t klen = strlen(key);
    for (char *line = buf; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') return strtoull(line + klen + 1, nullptr, 10);
        line = strchr(line, '\n');
        if (line) line++;
    }
    return 0;
}

uint64_t process_anon_bytes() {
    char buf[128];
    if (!read_small("/proc/self/statm", buf, sizeof buf)) return 0;
    unsigned long long size = 0, resident = 0, shared = 0;
    if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 || shared > resident) return 0;
    return (uint64_t)(resident - shared) * (uint64_t)sysconf(_SC_PAGESIZE);
}

MemoryFigures read_memory_figures() {
    MemoryFigures f;
    char buf[4096];
    if (!read_small("/proc/self/cgroup", buf, sizeof buf)) return f;
    std::string v1_path, v2_path;
    bool have_v2 = false;
    for (char *line = buf; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (strncmp(line, "0::", 3) == 0) {
            v2_path = line + 3;
            have_v2 = true;
        } else if (char *c = strstr(line, ":memory:")) {
            v1_path = c + 8;
        }
        line = next;
    }
    // Walk from our cgroup up to the visible root; the tightest limit binds.
    auto walk = [&](const std::string &base, std::string path, const char *limit_file,
                    const char *usage_file, const char *file_key, const char *shmem_key) {
        for (;;) {
            std::string dir = base + (path == "/" ? "" : path);
            uint64_t limit = 0, usage = 0;
            if (read_number(dir + "/" + limit_file, limit) && limit < (1ull << 60) &&
                read_number(dir + "/" + usage_file, usage)) {
                uint64_t file = stat_field(dir + "/memory.stat", file_key);
                uint64_t shmem = stat_field(dir + "/memory.stat", shmem_key);
                uint64_t reclaimable = file > shmem ? file - shmem : 0;
                MemoryFigures here{true, limit, usage, reclaimable < usage ? reclaimable : usage, dir};
                if (!f.limited || here.room() < f.room()) f = here;
            }
            if (path.empty() || path == "/") break;
            size_t slash = path.rfind('/');
            path = slash == 0 ? "/" : path.substr(0, slash);
        }
    };
    if (!v1_path.empty())
        walk("/sys/fs/cgroup/memory", v1_path, "memory.limit_in_bytes", "memory.usage_in_bytes",
             "total_cache", "total_shmem");
    else if (have_v2)
        walk("/sys/fs/cgroup", v2_path, "memory.max", "memory.current", "file", "shmem");
    return f;
}

// "some avg10=0.12 avg60=..." / "full avg10=..." lines of memory.pressure.
static double psi_avg10(const char *text, const char *kind) {
    const char *line = strstr(text, kind);
    if (!line) return 0;
    const char *v = strstr(line, "avg10=");
    return v ? strtod(v + 6, nullptr) : 0;
}

PressureSignals read_pressure_signals(const std::string &where) {
    PressureSignals p;
    if (where.empty()) return p;
    char buf[1024];
    if (read_small(where + "/memory.events", buf, sizeof buf)) {
        p.readable = true;
        p.high = stat_field(where + "/memory.events", "high");
        p.max = stat_field(where + "/memory.events", "max");
        p.oom = stat_field(where + "/memory.events", "oom");
        p.oom_kill = stat_field(where + "/memory.events", "oom_kill");
    }
    if (read_small(where + "/memory.pressure", buf, sizeof buf)) {
        p.readable = true;
        p.some_avg10 = psi_avg10(buf, "some ");
        p.full_avg10 = psi_avg10(buf, "full ");
    }
    return p;
}

uint64_t memory_headroom() {
    static std::atomic<uint64_t> cached_at{0}, cached_value{0};
    uint64_t now = monotonic_coarse_ns();
    uint64_t at = cached_at.load(std::memory_order_acquire);
    if (at && now - at < 5'000'000) return cached_value.load(std::memory_order_relaxed);
    uint64_t room = read_memory_figures().room();
    cached_value.store(room, std::memory_order_relaxed);
    cached_at.store(now, std::memory_order_release);
    return room;
}

} // namespace spillway
