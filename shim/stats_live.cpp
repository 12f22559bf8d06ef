// stats_live.cpp — see stats_live.h.
#include "stats_live.h"

#include "backing.h"
#include "fd_policy.h"
#include "region.h"
#include "spilldir.h"
#include "stats.h"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace spillway {

namespace {

constexpr size_t kMaxListed = 2048;   // regions per snapshot; the rest are counted
LiveRegion g_copy[kMaxListed];        // sampler thread only
char g_text[kMaxListed * 160 + 1024]; // sampler thread only
uint64_t g_last_write_ns = 0;
pid_t g_written_pid = 0; // whose file exists (a fork child writes its own)

const char *phase_name(uint8_t phase) {
    return phase == 1 ? "sequential" : phase == 2 ? "random" : "undecided";
}

const char *advice_name(int advice) {
    switch (advice) {
    case MADV_NORMAL: return "normal";
    case MADV_RANDOM: return "random";
    case MADV_SEQUENTIAL: return "sequential";
    case MADV_WILLNEED: return "willneed";
    default: return "other";
    }
}

// Appends printf output to buf at *len; false (and *len unchanged) when it does not fit.
template <typename... A> bool append(char *buf, size_t cap, size_t *len, const char *fmt, A... args) {
    if (*len >= cap) return false;
    int n = snprintf(buf + *len, cap - *len, fmt, args...);
    if (n < 0 || (size_t)n >= cap - *len) return false;
    *len += (size_t)n;
    return true;
}

} // namespace

void stats_live_name(char *buf, size_t cap, pid_t pid) {
    snprintf(buf, cap, "spillway-live-%d.json", (int)pid);
}

size_t stats_live_format(char *buf, size_t cap, pid_t pid, uint64_t now_ns, const LiveRegion *regions,
                         size_t n, size_t total) {
    auto by_backing = [](std::atomic<uint64_t> *v, char *out, size_t out_cap) {
        snprintf(out, out_cap, "{\"disk\":%llu,\"memory\":%llu,\"anon\":%llu}", (unsigned long long)v[1].load(),
                 (unsigned long long)v[2].load(), (unsigned long long)v[3].load());
    };
    char live[128], peak[128];
    by_backing(g_stats.live_bytes, live, sizeof live);
    by_backing(g_stats.peak_bytes, peak, sizeof peak);
    uint64_t fallbacks = 0;
    for (auto &f : g_stats.fallbacks) fallbacks += f.load(std::memory_order_relaxed);
    size_t len = 0;
    // Reserve room for the tail ("],\"unlisted\":N}\n").
    const size_t tail = 48;
    if (cap <= tail) return 0;
    size_t body_cap = cap - tail;
    if (!append(buf, body_cap, &len,
                "{\"pid\":%d,\"mono_ns\":%llu,\"live_bytes\":%s,\"peak_bytes\":%s,\"fallbacks\":%llu,"
                "\"regions\":[",
                (int)pid, (unsigned long long)now_ns, live, peak, (unsigned long long)fallbacks))
        return 0;
    size_t listed = 0;
    for (; listed < n; listed++) {
        const LiveRegion &r = regions[listed];
        uint64_t phase_ms = r.phase_since_ns && now_ns > r.phase_since_ns ? (now_ns - r.phase_since_ns) / 1000000 : 0;
        if (!append(buf, body_cap, &len,
                    "%s{\"start\":%llu,\"len\":%llu,\"backing\":\"%s\",\"phase\":\"%s\",\"phase_ms\":%llu,"
                    "\"advice\":\"%s\",\"fault_pages_s\":%u}",
                    listed ? "," : "", (unsigned long long)r.start, (unsigned long long)r.len,
                    backing_name((Backing)r.backing), phase_name(r.phase), (unsigned long long)phase_ms,
                    advice_name(r.advice), r.fault_rate))
            break;
    }
    append(buf, cap, &len, "],\"unlisted\":%llu}\n", (unsigned long long)(total > listed ? total - listed : 0));
    return len;
}

void stats_live_tick(uint64_t now_ns) {
    if (g_last_write_ns && now_ns - g_last_write_ns < kLivePeriodNs) return;
    g_last_write_ns = now_ns;
    int dir = spill_dir_fd();
    if (dir < 0) return;
    size_t n = 0, total = 0;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r; r = r->next) {
            if (r->freed.load(std::memory_order_relaxed)) continue;
            if (total++, n == kMaxListed) continue;
            LiveRegion &c = g_copy[n++];
            c.start = r->start;
            c.len = r->map_len;
            c.backing = (uint8_t)r->backing;
            c.phase = r->phase.load(std::memory_order_relaxed);
            c.phase_since_ns = r->phase_since_ns.load(std::memory_order_relaxed);
            c.fault_rate = r->fault_rate.load(std::memory_order_relaxed);
            c.advice = r->advice.load(std::memory_order_relaxed);
        }
    }
    pid_t pid = getpid();
    size_t len = stats_live_format(g_text, sizeof g_text, pid, now_ns, g_copy, n, total);
    if (!len) return;
    char tmp[64], name[64];
    snprintf(tmp, sizeof tmp, "%slive-%d", kTmpPrefix, (int)pid);
    stats_live_name(name, sizeof name, pid);
    int fd = above_stdio(openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd < 0) return;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, g_text + done, len - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    close(fd);
    if (done == len && renameat(dir, tmp, dir, name) == 0) g_written_pid = pid;
    else unlinkat(dir, tmp, 0);
}

void stats_live_remove() {
    int dir = spill_dir_fd();
    if (dir < 0 || g_written_pid != getpid()) return;
    char name[64];
    stats_live_name(name, sizeof name, g_written_pid);
    unlinkat(dir, name, 0);
}

} // namespace spillway
