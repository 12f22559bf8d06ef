// writeback.cpp — see writeback.h.
#include "tiering/writeback.h"

#include "access/access_detector.h" // Verdict: a region's phase

#include "os/background_thread.h"
#include "backing/backing.h"
#include "cachestat.h"
#include "clock.h"
#include "os/cgroup.h"
#include "fd_policy.h"
#include "log.h"
#include "registry/region.h"
#include "sites/callsite.h"
#include "stats/stats.h"
#include "tiering/zero_extents.h"

#include <algorithm>
#include <atomic>
#include <new>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace spillway {

namespace {
constexpr long kPeriodMs = 50;         // polls while a limit binds
constexpr long kIdlePeriodMs = 1000;   // polls without one (a limit may appear)
// Ranges per pass (one per region; the pool and dedicated files of 256 MiB
// or more each, so 256 covers 64 GiB of dedicated regions); regions past it
// are left to the kernel's flushers.
constexpr unsigned kMaxFiles = 256;
constexpr uint64_t kMinTrigger = 16ull << 20;
// Regions per pass whose page-table entries are dropped before writing (see
// unmap_before_writing); regions past it are written while mapped.
constexpr unsigned kMaxUnmapped = 512;
// Unmapped per hold of the large lock: a few ms of page-table work, so an
// allocating thread never waits long behind the pass.
constexpr size_t kUnmapStep = 64ull << 20;

// A pass looks for dirty zeros again while a round found this much, up to
// this many rounds.
constexpr uint64_t kZeroRoundMin = 8ull << 20;
constexpr int kZeroRounds = 8;

// Leaving quiet regions out (writeback_pass): every this many passes, none.
constexpr unsigned kFullPassEvery = 20;

std::atomic<bool> g_started{false};
std::atomic<uint64_t> g_passes{0}, g_polls{0};
// Regions in a random phase (writes_random_regions): when a pass last took
// them, the dirty bytes it wrote of them, and the wait before the next.
std::atomic<uint64_t> g_random_pass_ns{0}, g_random_written{0};
std::atomic<uint64_t> g_random_interval_ns{kRandomRegionsEveryNs};
// cachestat(2) answered ENOSYS once (a kernel before 6.5): the pass measures
// what it wrote from the cgroup's dirty figure instead.
std::atomic<bool> g_no_cachestat{false};

uint64_t stat_value(const std::string &path, const char *key) {
    char buf[8192];
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    size_t klen = strlen(key);
    for (char *line = buf; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') return strtoull(line + klen + 1, nullptr, 10);
        line = strchr(line, '\n');
        if (line) line++;
    }
    return 0;
}

struct FileRange {
    int fd; // a dup, shared by the ranges of one file
    bool closes; // the file's first range: closes fd after the pass
    uint64_t lo, hi;
    bool random; // its region is in a random phase
    uintptr_t start; // its region's address (the pass's debug line names it)
};

// A region by identity: an address range is reused (born tells them apart),
// and a region moved to memory and back has new file pages (file, file_off).
struct RegionKey {
    uintptr_t start;
    size_t len;
    uint64_t born;
    const SpillFile *file;
    uint64_t file_off;
    bool operator<(const RegionKey &o) const { return start < o.start; }
    bool operator==(const RegionKey &o) const {
        return start == o.start && len == o.len && born == o.born && file == o.file && file_off == o.file_off;
    }
};

RegionKey key_of(const Region *r) { return {r->start, r->map_len, r->born_ns, r->file, r->file_off}; }

struct MappedRange {
    const Region *r; // compared only, never dereferenced without the large lock
    uintptr_t start;
    size_t len;
    RegionKey key;
    int fd; // its range's dup
};

// A region a pass may unmap and write: live, disk-backed, mapped shared, ours.
bool writable_shared_disk(const Region *r) {
    return r->backing == Backing::disk && r->file && !r->file->foreign && !r->is_private && !r->freed.load();
}

// Whether r is written at random (writes_random_regions): its phase now,
// or its call site's access. A dense scatter's phase flips: once a pass has
// unmapped the region, its refaults fill whole runs within a tick and read
// as a stream (measured: a 114 MiB scatter target of the scipy job's tocsr
// was "sequential" at 81 ticks, "random" at 12); a site learned random stays
// random (sampler.cpp, teach_site), and a rule's word is the user's.
bool written_at_random(const Region *r) {
    if (r->phase.load(std::memory_order_relaxed) == (uint8_t)Verdict::random) return true;
    const CallSite *site = r->site;
    if (!site) return false;
    if (site->rule && site->rule->access != Access::unknown) return site->rule->access == Access::random;
    return site->access.load(std::memory_order_relaxed) == (int)Access::random;
}

// The leave_quiet passes' own state (they run on one thread at a time: the
// pacer's, or a test's with the pacer not started): the regions the last
// such pass unmapped whole or left out, sorted by start, and the regions
// the present pass leaves out.
std::mutex g_quiet_lock; // held through a leave_quiet pass
RegionKey g_written[kMaxUnmapped], g_quiet[kMaxUnmapped];
unsigned g_n_written = 0, g_n_quiet = 0, g_quiet_passes = 0;
int g_pagemap = -1;

bool in(const RegionKey *keys, unsigned n, const RegionKey &k) {
    const RegionKey *at = std::lower_bound(keys, keys + n, k);
    return at != keys + n && *at == k;
}

// Whether the process maps any page of [start, start+len): -1 unknown.
int any_mapped(uintptr_t start, size_t len) {
    if (g_pagemap < 0) g_pagemap = move_high(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    PageRun run;
    bool more = false;
    long n = read_presence(g_pagemap, start, len / 4096, &run, 1, &more);
    return n < 0 ? -1 : n > 0;
}

// Which of the regions the last pass wrote have no page mapped now: into
// g_quiet. The list is copied under the large lock; pagemap is read without it.
void find_quiet() {
    g_n_quiet = 0;
    if (!g_n_written || ++g_quiet_passes % kFullPassEvery == 0) return;
    RegionKey live[kMaxUnmapped];
    unsigned n = 0;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r && n < kMaxUnmapped; r = r->next)
            if (writable_shared_disk(r) && in(g_written, g_n_written, key_of(r))) live[n++] = key_of(r);
    }
    // A region freed meanwhile and its range given to another disk region
    // has another born: not in g_written, so never left out.
    for (unsigned i = 0; i < n; i++)
        if (any_mapped(live[i].start, live[i].len) == 0) g_quiet[g_n_quiet++] = live[i];
    std::sort(g_quiet, g_quiet + g_n_quiet);
}

// Copies the disk-backed file ranges of live regions, one range per region
// (the ranges of one file share one dup of its descriptor), and the address
// ranges of up to kMaxUnmapped of those regions (for unmap_before_writing).
// Regions in a random phase only when with_random; *took_random says whether
// one was taken. With leave_quiet, the regions find_quiet found are left
// out. Holds the large lock only for the copy.
unsigned snapshot(FileRange *out, unsigned cap, MappedRange *mapped, unsigned *n_mapped, bool with_random,
                  bool *took_random, bool leave_quiet) {
    const SpillFile *files[kMaxFiles];
    int fds[kMaxFiles];
    unsigned n = 0, n_files = 0;
    *n_mapped = 0;
    *took_random = false;
    std::lock_guard<std::mutex> guard(large_lock());
    for (Region *r = registry_first(); r && n < cap; r = r->next) {
        SpillFile *f = r->file;
        if (!writable_shared_disk(r)) continue;
        bool random = written_at_random(r);
        if (random && !with_random) continue;
        if (leave_quiet && in(g_quiet, g_n_quiet, key_of(r))) continue;
        unsigned i = 0;
        while (i < n_files && files[i] != f) i++;
        bool first = i == n_files;
        if (first) {
            int fd = move_high(fcntl(f->fd, F_DUPFD_CLOEXEC, 0));
            if (fd < 0) continue;
            files[n_files] = f;
            fds[n_files++] = fd;
        }
        if (*n_mapped < kMaxUnmapped) mapped[(*n_mapped)++] = {r, r->start, r->map_len, key_of(r), fds[i]};
        *took_random |= random;
        out[n++] = {fds[i], first, r->file_off, r->file_off + r->map_len, random, r->start};
    }
    return n;
}

// The dirty bytes of a file range in the page cache, or false when the
// kernel cannot tell (cachestat(2) needs Linux 6.5).
bool dirty_bytes(int fd, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (g_no_cachestat.load(std::memory_order_relaxed)) return false;
    if (hi <= lo) return true; // nothing (len 0 would mean "to the end of the file")
    Cachestat cs{};
    if (cachestat(fd, CachestatRange{lo, hi - lo}, cs) != 0) {
        if (errno == ENOSYS) g_no_cachestat.store(true, std::memory_order_relaxed);
        return false;
    }
    static const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *out = cs.nr_dirty * page;
    return true;
}

// The regions whose ranges a pass found dirtiest, for its debug line: which
// regions the pacer keeps cleaning (a page cleaned and dirtied again before
// reclaim takes it was written for nothing) is not in the exit stats.
constexpr int kDirtiestNamed = 3;
struct DirtyRegion {
    uintptr_t start = 0;
    uint64_t dirty = 0;
    bool random = false;
};

// Writeback write-protects every dirty page it cleans that is still mapped
// (folio_mkclean): one TLB shootdown per folio, to every CPU running the
// job. At read_ahead_kb 128 a fill's folios are 4 KiB, and a 1 GiB fill in a
// 256 MiB cgroup took 11.8 s with the pacer against 3.8 s without it
// (perf: flush_tlb_mm_range under mpage_map_and_submit_buffers). Reclaim
// avoids that by unmapping first, in batches; so does the pacer:
// MADV_DONTNEED on a shared file mapping drops only page-table entries (a
// dirty bit moves to its page-cache page, the bytes stay in the file's
// pages), with one flush per batch, and writeback then finds no mapping to
// clean. A page used again maps back with a minor fault (a written page
// took a write fault after writeback anyway). Only live, shared, disk
// mappings, checked under the large lock around each step: on a private
// or anonymous mapping MADV_DONTNEED would discard data, and under the lock
// no region can be freed, created or remapped private at that address (a
// move maps files MAP_SHARED over it: harmless too).
//
// Step by step: each kUnmapStep of a region is unmapped and then asked to
// write at once, not the whole region unmapped first and written after.
// Why: writeback walks a range's dirty pages to its end, and takes pages
// dirtied while it walks. A program filling a 4 GiB region kept mapping
// pages behind a whole-region unmap, and one pass then chased its writes to
// the region's end: one pass of 6.2 s for the whole fill, each page it
// cleaned still mapped (17% of the run's CPU samples in TLB shootdowns), the
// disk writing 300-700 MB/s of its 1,400, and 850-900 MiB of the 1 GiB
// cgroup dirty when the fill ended, written under the next phase's reads
// (tests/bench/phases.sh). A step is written right after its unmap, and no
// further than its end.
struct PassTotals {
    uint64_t unmapped = 0;     // bytes of address range whose page-table entries it dropped
    uint64_t dirty = 0;        // dirty bytes of the ranges as asked (cachestat)
    uint64_t random_dirty = 0; // of those, in ranges of regions written at random
    bool dirty_unknown = false; // cachestat missing: measured by the cgroup instead
    DirtyRegion dirtiest[kDirtiestNamed]; // largest first

    void note_region(const FileRange &range, uint64_t region_dirty) {
        if (region_dirty == 0) return;
        int at = kDirtiestNamed;
        while (at > 0 && dirtiest[at - 1].dirty < region_dirty) at--;
        if (at == kDirtiestNamed) return;
        for (int i = kDirtiestNamed - 1; i > at; i--) dirtiest[i] = dirtiest[i - 1];
        dirtiest[at] = {range.start, region_dirty, range.random};
    }
};

// Asks the kernel to write [lo, hi) of fd, adding its dirty bytes to t.
void write_range(int fd, uint64_t lo, uint64_t hi, bool random, unsigned flags, PassTotals *t) {
    if (hi <= lo) return;
    uint64_t dirty = 0;
    if (!t->dirty_unknown) t->dirty_unknown = !dirty_bytes(fd, lo, hi, &dirty);
    t->dirty += dirty;
    if (random) t->random_dirty += dirty;
    // Errors (EIO, a file shrunk under us) are the kernel's to report at
    // the next fsync or fault; the flushers will try again anyway.
    sync_file_range(fd, (off64_t)lo, (off64_t)(hi - lo), flags);
}

// Unmaps and writes one region's range step by step (see above); what a
// step cannot unmap (the region freed or remapped meanwhile) is written as
// it is. Returns whether every step was unmapped.
bool unmap_and_write(const MappedRange &m, const FileRange &range, unsigned flags, PassTotals *t) {
    size_t off = 0;
    bool whole = true;
    for (; off < m.len; off += kUnmapStep) {
        size_t step = m.len - off < kUnmapStep ? m.len - off : kUnmapStep;
        {
            std::lock_guard<std::mutex> guard(large_lock());
            const Region *live = registry_first();
            while (live && live != m.r) live = live->next;
            if (!live || live->start != m.start || live->map_len != m.len || !writable_shared_disk(live))
                break;
            if (madvise((void *)(m.start + off), step, MADV_DONTNEED) == 0) // EINVAL if mlocked: left mapped
                t->unmapped += step;
            else
                whole = false;
        }
        write_range(range.fd, range.lo + off, range.lo + off + step, range.random, flags, t);
    }
    if (off < m.len) {
        whole = false;
        write_range(range.fd, range.lo + off, range.hi, range.random, flags, t);
    }
    return whole;
}

// The regions' dirty all-zero units become unwritten extents (zero_extents.h).
uint64_t zero_dirty_zeros(const MappedRange *mapped, unsigned n) {
    ZeroCandidate c[kMaxUnmapped];
    for (unsigned i = 0; i < n; i++)
        c[i] = {const_cast<Region *>(mapped[i].r), mapped[i].start, mapped[i].len, mapped[i].fd, mapped[i].key.file_off};
    return zero_dirty_units(c, n);
}

// One debug line per pass that asked the kernel to write: what it wrote,
// and the regions it found dirtiest (a region written at random that
// heads pass after pass is being cleaned only to be dirtied again).
void log_pass(unsigned ranges, uint64_t written, const PassTotals &t, bool took_random, bool by_cgroup,
              uint64_t ns) {
    if (!log_enabled(LogLevel::debug)) return;
    char named[kDirtiestNamed * 48] = ""; // ", 0x7f0123456789 123456 MiB (random)": 36 each
    size_t used = 0;
    for (const DirtyRegion &d : t.dirtiest) {
        if (!d.dirty || used >= sizeof named) break;
        int w = snprintf(named + used, sizeof named - used, "%s%p %llu MiB%s", used ? ", " : "", (void *)d.start,
                         (unsigned long long)(d.dirty >> 20), d.random ? " (random)" : "");
        if (w > 0) used += (size_t)w;
    }
    SPW_LOG(debug, "writeback: pass over %u ranges wrote %llu MiB%s (%llu MiB of regions written at random%s), "
                   "unmapped %llu MiB, in %.1f ms; dirtiest: %s",
            ranges, (unsigned long long)(written >> 20), by_cgroup ? " by the cgroup's count" : "",
            (unsigned long long)(t.random_dirty >> 20), took_random ? "" : ", none in this pass",
            (unsigned long long)(t.unmapped >> 20), ns / 1e6, used ? named : "none");
}

long period_ms(const DirtyFigures &f) { return f.limited ? kPeriodMs : kIdlePeriodMs; }

void *writeback_main(void *) {
    struct sched_param sp = {}; // its wake-ups never preempt the application
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    for (;;) {
        DirtyFigures f = read_dirty_figures();
        g_polls.fetch_add(1, std::memory_order_relaxed);
        if (writeback_due(f)) writeback_pass(false, true);
        exit_if_only_ours_left();
        long ms = period_ms(f);
        timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        nanosleep(&ts, nullptr);
    }
    return nullptr;
}
} // namespace

DirtyFigures read_dirty_figures() {
    DirtyFigures d;
    MemoryFigures m = read_memory_figures();
    if (!m.limited) return d;
    d.limited = true;
    d.limit = m.limit;
    d.usage = m.usage;
    std::string stat = m.where + "/memory.stat";
    // v1 names its hierarchical totals total_*; v2's figures are hierarchical.
    bool v1 = m.where.rfind("/sys/fs/cgroup/memory", 0) == 0;
    d.dirty = stat_value(stat, v1 ? "total_dirty" : "file_dirty");
    d.writeback = stat_value(stat, v1 ? "total_writeback" : "file_writeback");
    return d;
}

uint64_t writeback_trigger_bytes(uint64_t limit) {
    uint64_t t = limit / 16;
    return t > kMinTrigger ? t : kMinTrigger;
}

bool writeback_due(const DirtyFigures &f) {
    if (!f.limited || f.dirty <= writeback_trigger_bytes(f.limit)) return false;
    uint64_t room = f.limit > f.usage ? f.limit - f.usage : 0;
    return room < 2 * f.dirty;
}

bool writes_random_regions(uint64_t now_ns, uint64_t last_ns, uint64_t interval_ns) {
    return last_ns == 0 || now_ns - last_ns >= interval_ns;
}

uint64_t next_random_interval(uint64_t interval_ns, uint64_t written_last, uint64_t dirty_now) {
    if (written_last == 0 || dirty_now < written_last / 2) return kRandomRegionsEveryNs;
    return interval_ns >= kRandomRegionsMaxNs / 2 ? kRandomRegionsMaxNs : interval_ns * 2;
}

uint64_t writeback_random_interval_ns() { return g_random_interval_ns.load(); }

unsigned writeback_pass(bool wait, bool leave_quiet) {
    std::unique_lock<std::mutex> quiet_guard(g_quiet_lock, std::defer_lock);
    if (leave_quiet) {
        quiet_guard.lock();
        find_quiet();
    }
    const uint64_t t0 = monotonic_ns();
    FileRange ranges[kMaxFiles];
    MappedRange mapped[kMaxUnmapped];
    RegionKey whole[kMaxUnmapped];
    unsigned n_mapped = 0, n_whole = 0;
    bool took_random = false;
    unsigned n = snapshot(ranges, kMaxFiles, mapped, &n_mapped,
                          writes_random_regions(t0, g_random_pass_ns.load(), g_random_interval_ns.load()),
                          &took_random, leave_quiet);
    // Dirty zeros first: what zero_dirty_units makes unwritten leaves the
    // page cache, so it is neither unmapped nor written below.
    // Zeros written while a round ran are looked for again: the writes
    // below would otherwise take them (a program zeroing a buffer writes
    // faster than a round zeroes; zero_fill.c: 1.5 GB/s against 0.8).
    uint64_t zeroed = 0;
    for (int round = 0; round < kZeroRounds; round++) {
        uint64_t z = zero_dirty_zeros(mapped, n_mapped);
        zeroed += z;
        if (z < kZeroRoundMin) break;
    }
    if (zeroed)
        SPW_LOG(debug, "writeback: %llu MiB of dirty zeros left unwritten in %.1f ms",
                (unsigned long long)(zeroed >> 20), (monotonic_ns() - t0) / 1e6);
    unsigned flags = SYNC_FILE_RANGE_WRITE;
    if (wait) flags |= SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER;
    // What the pass writes: the ranges' dirty bytes, measured just before
    // each is written (after its unmap). Without cachestat, the cgroup's
    // dirty bytes before and after: other files' pages move it too.
    PassTotals t;
    uint64_t probe = 0;
    bool have_cachestat = n && dirty_bytes(ranges[0].fd, ranges[0].lo, ranges[0].lo + 4096, &probe);
    uint64_t cgroup_dirty = n && !have_cachestat ? read_dirty_figures().dirty : 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t dirty_before = t.dirty;
        if (i < n_mapped) { // mapped[i] is ranges[i]'s region (snapshot)
            if (unmap_and_write(mapped[i], ranges[i], flags, &t)) whole[n_whole++] = mapped[i].key;
        } else {
            write_range(ranges[i].fd, ranges[i].lo, ranges[i].hi, ranges[i].random, flags, &t);
        }
        t.note_region(ranges[i], t.dirty - dirty_before);
    }
    uint64_t unmapped = t.unmapped, written = t.dirty;
    bool by_cgroup = t.dirty_unknown;
    if (took_random) {
        // Without cachestat the interval stays at its start: nothing tells
        // whether the last write was undone.
        uint64_t last = by_cgroup ? 0 : g_random_written.load();
        g_random_interval_ns.store(next_random_interval(g_random_interval_ns.load(), last, t.random_dirty));
        g_random_written.store(by_cgroup ? 0 : t.random_dirty);
        g_random_pass_ns.store(t0);
    }
    for (unsigned i = 0; i < n; i++)
        if (ranges[i].closes) close(ranges[i].fd);
    if (n && by_cgroup) {
        uint64_t after = read_dirty_figures().dirty;
        written = cgroup_dirty > after ? cgroup_dirty - after : 0;
    }
    if (n) {
        g_passes.fetch_add(1, std::memory_order_relaxed);
        stats_on_writeback_pass(written, unmapped, monotonic_ns() - t0);
        log_pass(n, written, t, took_random, by_cgroup, monotonic_ns() - t0);
    }
    if (leave_quiet) { // what the next pass may leave out: unmapped and written now, or left out now
        g_n_written = 0;
        for (unsigned i = 0; i < n_whole; i++) g_written[g_n_written++] = whole[i];
        for (unsigned i = 0; i < g_n_quiet && g_n_written < kMaxUnmapped; i++) g_written[g_n_written++] = g_quiet[i];
        std::sort(g_written, g_written + g_n_written);
    }
    return n;
}

void writeback_notice() {
    if (g_started.load(std::memory_order_relaxed)) return;
    // Without a memory limit the kernel's flushers suffice: no thread (the
    // next disk region asks again; headroom is cached for a few ms).
    if (memory_headroom() == UINT64_MAX || g_started.exchange(true)) return;
    // 256 KiB, as the engine's other threads: a pass's arrays (ranges,
    // regions, zero candidates: about 84 KiB) and a zeroing run's calls
    // below them (a FIEMAP buffer of 7 KiB, the log's formatting) came
    // within reach of 128.
    start_background_thread(writeback_main, "spillway-wb", 256 * 1024);
}

void writeback_after_fork_child() {
    // The thread did not survive fork; the inherited files are the parent's.
    g_started.store(false);
    // The inherited pagemap descriptor reads the PARENT's page tables, and
    // the pass it may have been in holds the lock for nobody here.
    if (g_pagemap >= 0) close(g_pagemap);
    g_pagemap = -1;
    new (&g_quiet_lock) std::mutex();
    g_n_written = g_n_quiet = g_quiet_passes = 0;
    zero_extents_after_fork_child();
}

uint64_t writeback_passes() { return g_passes.load(); }
uint64_t writeback_polls() { return g_polls.load(); }

} // namespace spillway
