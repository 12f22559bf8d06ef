// stats_live.cpp — see stats_live.h.
#include "stats/stats_live.h"

#include "backing/backing.h"
#include "cachestat.h"
#include "fd_policy.h"
#include "registry/region.h"
#include "stats/stats.h"
#include "stats_format.h"
#include "text_sum.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

namespace {

constexpr size_t kMaxListed = 2048;   // regions per snapshot; the rest are counted
LiveRegion g_copy[kMaxListed];        // sampler thread only
// A region's entry is at most about 220 bytes (every field at its widest).
char g_text[kMaxListed * 256 + 1024]; // sampler thread only

// Where to measure a listed disk region's page cache: a dup of its spill
// file's descriptor (shared by the regions of one file) and its range.
struct CacheProbe {
    int fd = -1;
    uint64_t off = 0, len = 0;
};
CacheProbe g_probe[kMaxListed]; // sampler thread only, parallel to g_copy
// The dups of one snapshot, by file: an open-addressed table (twice the
// most files one snapshot can name), so the copy under the large lock stays
// linear in the regions. g_dup_fds lists them to close after.
constexpr size_t kDupSlots = 2 * kMaxListed;
const void *g_dup_file[kDupSlots]; // sampler thread only
int g_dup_fd[kDupSlots];
int g_dup_fds[kMaxListed];
size_t g_n_dups = 0;
// cachestat(2) answered ENOSYS (a kernel before 6.5): never asked again,
// and the snapshot carries no cache figures.
bool g_no_cachestat = false; // sampler thread only
uint64_t g_last_write_ns = 0;
int g_fd = -1;           // the memfd, once made
pid_t g_fd_pid = 0;      // the process that made it (a fork child makes its own)
dev_t g_fd_dev = 0;      // its identity, to notice a descriptor closed and reused
ino_t g_fd_ino = 0;
MovingToFn g_moving_to = nullptr; // stats_live_init

bool still_ours(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == g_fd_dev && st.st_ino == g_fd_ino;
}

// This process's memfd: made on first use, again in a fork child, and again
// if the program closed ours.
int live_fd() {
    pid_t pid = getpid();
    if (g_fd >= 0 && g_fd_pid == pid && still_ours(g_fd)) return g_fd;
    if (g_fd >= 0 && g_fd_pid != pid && still_ours(g_fd)) close(g_fd); // the parent's, inherited
    g_fd = -1;
    int fd = move_high(memfd_create(kLiveMemfdName, MFD_CLOEXEC));
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    g_fd = fd;
    g_fd_pid = pid;
    g_fd_dev = st.st_dev;
    g_fd_ino = st.st_ino;
    return fd;
}

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

size_t stats_live_format(char *buf, size_t cap, pid_t pid, uint64_t now_ns, const LiveRegion *regions,
                         size_t n, size_t total) {
    namespace key = stats_key;
    auto by_backing = [](std::atomic<uint64_t> *v, char *out, size_t out_cap) {
        snprintf(out, out_cap, "{\"%s\":%llu,\"%s\":%llu,\"%s\":%llu}", key::kBackings[0],
                 (unsigned long long)v[1].load(), key::kBackings[1], (unsigned long long)v[2].load(),
                 key::kBackings[2], (unsigned long long)v[3].load());
    };
    char live[128], peak[128];
    by_backing(g_stats.live_bytes, live, sizeof live);
    by_backing(g_stats.peak_bytes, peak, sizeof peak);
    uint64_t fallbacks = 0;
    for (auto &f : g_stats.fallbacks) fallbacks += f.load(std::memory_order_relaxed);
    // The head (text_sum.h) is filled in last, over the first kHeadLen bytes.
    size_t len = text_sum::kHeadLen;
    // Reserve room for the tail ("],\"unlisted\":N}\n").
    const size_t tail = 48;
    if (cap <= tail + len) return 0;
    size_t body_cap = cap - tail;
    if (!append(buf, body_cap, &len,
                "\"%s\":%d,\"%s\":%llu,\"%s\":%s,\"%s\":%s,\"%s\":%llu,\"%s\":[", key::pid, (int)pid,
                key::mono_ns, (unsigned long long)now_ns, key::live_bytes, live, key::peak_bytes, peak,
                key::fallbacks, (unsigned long long)fallbacks, key::regions))
        return 0;
    size_t listed = 0;
    for (; listed < n; listed++) {
        const LiveRegion &r = regions[listed];
        uint64_t phase_ms = r.phase_since_ns && now_ns > r.phase_since_ns ? (now_ns - r.phase_since_ns) / 1000000 : 0;
        char moving[64] = "";
        if (r.moving_to)
            snprintf(moving, sizeof moving, ",\"%s\":\"%s\"", key::moving_to, backing_name((Backing)r.moving_to));
        else if (r.is_private)
            snprintf(moving, sizeof moving, ",\"%s\":true", key::private_copy);
        char cache[80] = "";
        if (r.cache_known)
            snprintf(cache, sizeof cache, ",\"%s\":%llu,\"%s\":%llu", key::cached, (unsigned long long)r.cached,
                     key::dirty, (unsigned long long)r.dirty);
        if (!append(buf, body_cap, &len,
                    "%s{\"%s\":%llu,\"%s\":%llu,\"%s\":\"%s\",\"%s\":\"%s\",\"%s\":%llu,\"%s\":\"%s\","
                    "\"%s\":%u%s%s}",
                    listed ? "," : "", key::start, (unsigned long long)r.start, key::len,
                    (unsigned long long)r.len, key::backing, backing_name((Backing)r.backing), key::phase,
                    phase_name(r.phase), key::phase_ms, (unsigned long long)phase_ms, key::advice,
                    advice_name(r.advice), key::fault_pages_s, r.fault_rate, moving, cache))
            break;
    }
    append(buf, cap, &len, "],\"%s\":%llu}\n", key::unlisted,
           (unsigned long long)(total > listed ? total - listed : 0));
    text_sum::write_head(buf, len - text_sum::kHeadLen);
    return len;
}

namespace {

// Closes the dups of a snapshot and empties the table. Also at the start of
// each tick: a fork child whose parent forked while its sampler was
// measuring inherits that snapshot's table and dups (the descriptors are
// the child's own copies to close; the file pointers may name freed files).
void forget_dups() {
    for (size_t i = 0; i < g_n_dups; i++) close(g_dup_fds[i]);
    g_n_dups = 0;
    memset(g_dup_file, 0, sizeof g_dup_file);
}

// Under the large lock: a dup of f's descriptor for this snapshot, made
// once per file; -1 when it cannot be had (the descriptor limit reached:
// that region goes without a cache figure).
int dup_for(const SpillFile *f) {
    size_t h = ((uintptr_t)f >> 4) * 0x9E3779B97F4A7C15ull >> 52; // 12 bits: kDupSlots == 4096
    for (size_t i = 0; i < kDupSlots; i++, h = (h + 1) % kDupSlots) {
        if (g_dup_file[h] == f) return g_dup_fd[h];
        if (g_dup_file[h]) continue;
        int fd = move_high(fcntl(f->fd, F_DUPFD_CLOEXEC, 0));
        g_dup_file[h] = f;
        g_dup_fd[h] = fd;
        if (fd >= 0) g_dup_fds[g_n_dups++] = fd;
        return fd;
    }
    return -1;
}
static_assert(kDupSlots == 4096, "dup_for hashes to 12 bits");

// Outside the lock: each probed region's page cache, then the dups closed.
void measure_cache(size_t n) {
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i++) {
        CacheProbe &p = g_probe[i];
        if (p.fd < 0 || g_no_cachestat) continue;
        Cachestat cs{};
        if (cachestat(p.fd, CachestatRange{p.off, p.len}, cs) != 0) {
            if (errno == ENOSYS) g_no_cachestat = true;
            continue; // left out: the reader falls back to what is mapped
        }
        g_copy[i].cache_known = true;
        g_copy[i].cached = cs.nr_cache * page;
        g_copy[i].dirty = cs.nr_dirty * page;
    }
    forget_dups();
}

// Whether a reader read the snapshot since this process last wrote it: a
// read moves the memfd's atime past the mtime our write set (the kernel's
// internal shmem mount updates atime at every read; under relatime it would
// still, atime being no later than mtime then). Why ask: cachestat walks
// every page slot of a range, and tests the workingset entry each evicted
// page left: with a 4 GiB region mostly evicted (a random gather in a 1 GiB
// cgroup), 180 ms of the sampler's CPU every second, 82% of its samples
// (perf), beside a job on 2 cores. Only readers use the cache figures, and a
// reader reads again: from its second read on it finds them.
bool read_since_last_write() {
    if (g_fd < 0 || g_fd_pid != getpid()) return false;
    struct stat st;
    if (fstat(g_fd, &st) != 0 || st.st_dev != g_fd_dev || st.st_ino != g_fd_ino) return false;
    return st.st_atim.tv_sec > st.st_mtim.tv_sec ||
           (st.st_atim.tv_sec == st.st_mtim.tv_sec && st.st_atim.tv_nsec > st.st_mtim.tv_nsec);
}

} // namespace

void stats_live_init(MovingToFn moving_to) { g_moving_to = moving_to; }

void stats_live_tick(uint64_t now_ns) {
    if (g_last_write_ns && now_ns - g_last_write_ns < kLivePeriodNs) return;
    g_last_write_ns = now_ns;
    size_t n = 0, total = 0;
    const bool probe = !g_no_cachestat && read_since_last_write();
    if (g_n_dups) forget_dups();
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r; r = r->next) {
            if (r->freed.load(std::memory_order_relaxed)) continue;
            if (total++, n == kMaxListed) continue;
            g_probe[n] = CacheProbe{};
            LiveRegion &c = g_copy[n++];
            c.start = r->start;
            c.len = r->map_len;
            c.backing = (uint8_t)r->backing;
            c.phase = r->phase.load(std::memory_order_relaxed);
            c.phase_since_ns = r->phase_since_ns.load(std::memory_order_relaxed);
            c.fault_rate = r->fault_rate.load(std::memory_order_relaxed);
            c.advice = r->advice.load(std::memory_order_relaxed);
            c.moving_to = (uint8_t)(g_moving_to ? g_moving_to(r) : Backing::none);
            c.is_private = r->is_private;
            c.cache_known = false;
            c.cached = c.dirty = 0;
            // A private copy's cached pages are its parent's file's, the
            // parent's to count; only a disk or memfd region's own range is
            // measured (a memfd's pages unmapped by MADV_DONTNEED stay in it,
            // charged, as a spill file's stay in the page cache).
            // The dup is the one system call under the lock (as the
            // writeback pacer's snapshot takes them): with 2048 regions in
            // files of their own it held the lock 0.85 ms against 0.05 ms
            // without (one pool file: one dup, no change), measured.
            if (probe && (r->backing == Backing::disk || r->backing == Backing::memory) && r->file &&
                !r->is_private)
                g_probe[n - 1] = CacheProbe{dup_for(r->file), r->file_off, r->map_len};
        }
    }
    measure_cache(n);
    pid_t pid = getpid();
    size_t len = stats_live_format(g_text, sizeof g_text, pid, now_ns, g_copy, n, total);
    if (!len) return;
    int fd = live_fd();
    if (fd < 0) return;
    // Rewritten in place: the new text, then the length. A reader that
    // meets a mix of the two texts finds the head's length or hash wrong
    // (text_sum.h) and reads again.
    size_t done = 0;
    while (done < len) {
        ssize_t w = pwrite(fd, g_text + done, len - done, (off_t)done);
        if (w <= 0) return;
        done += (size_t)w;
    }
    ssize_t ignored = ftruncate(fd, (off_t)len);
    (void)ignored;
}

int stats_live_fd() { return g_fd; }

} // namespace spillway
