// rehome.cpp — see rehome.h.
#include "tiering/rehome.h"
#include "clock.h"

#include "access/prefetch_worker.h"
#include "backing/backing.h"
#include "os/direct_write.h"
#include "os/extents.h"
#include "fd_policy.h"
#include "os/lock_unless_held.h"
#include "os/kernel_ordered.h"
#include "log.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "stats/stats.h"
#include "tiering/move_tracked.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <mutex>
#include <optional>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

namespace spillway {

namespace {
constexpr size_t kChunk = size_t(16) << 20;

std::mutex g_move_lock;
std::atomic<uint64_t> g_last_fork_ns{0};
std::atomic<uint64_t> g_last_shared_fork_ns{0};
uint64_t g_forked_at_ns = 0;
// An untrusted fork child (fork_safety.h): inherited regions stay as they are.
bool g_untrusted = false;
std::atomic<Region *> g_moving_region{nullptr};
std::atomic<uint8_t> g_moving_to{0}; // its destination's Backing; stored before g_moving_region
// The region being moved, and within it the chunk that is read-only now.
std::atomic<uintptr_t> g_region_start{0}, g_region_end{0};
std::atomic<uintptr_t> g_chunk_start{0}, g_chunk_end{0};
// For a fork child of the mover itself: how much already lives in dest.
std::atomic<size_t> g_moved_bytes{0};
std::atomic<int> g_dest_fd{-1};
struct sigaction g_previous;

// Blocks every asynchronous signal on this thread for the length of a move,
// so no handler can fork (or re-enter a move) with a chunk half done; the
// synchronous ones (a fault is how writers wait) stay deliverable.
struct AsyncSignalsBlocked {
    sigset_t old;
    AsyncSignalsBlocked() {
        sigset_t set;
        sigfillset(&set);
        for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&set, s);
        pthread_sigmask(SIG_BLOCK, &set, &old);
    }
    ~AsyncSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

void on_segv(int sig, siginfo_t *info, void *context) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (addr >= g_region_start.load() && addr < g_region_end.load()) {
        // A write into the region being moved: wait for its chunk, then
        // return so the write is retried (against the new mapping, or the
        // old one if its chunk had not started yet).
        while (addr >= g_chunk_start.load() && addr < g_chunk_end.load()) {
            timespec ts = {0, 50000};
            nanosleep(&ts, nullptr);
        }
        return;
    }
    if (g_previous.sa_flags & SA_SIGINFO) {
        g_previous.sa_sigaction(sig, info, context);
        return;
    }
    if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    }
    // Default action: restore it; returning re-executes the faulting access.
    signal(SIGSEGV, SIG_DFL);
}

// (Re)installs our handler unless it is already the current one: a program
// may have replaced it since the last move, and that handler then becomes
// the one we chain to.
void install_handler() {
    struct sigaction current;
    if (sigaction(SIGSEGV, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
        current.sa_sigaction == on_segv)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous);
}

int write_all(int fd, const char *src, size_t n, off_t off) {
    KernelOrdered quiet; // src may be a region being written meanwhile (kernel_ordered.h)
    while (n) {
        ssize_t w = pwrite(fd, src, n, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? -errno : -EIO;
        src += w;
        off += w;
        n -= (size_t)w;
    }
    return 0;
}

int read_all(int fd, char *dst, size_t n, off_t off) {
    while (n) {
        ssize_t got = pread(fd, dst, n, off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -errno;
        if (got == 0) { // past the end of the source: reads as zero
            memset(dst, 0, n);
            return 0;
        }
        dst += got;
        off += got;
        n -= (size_t)got;
    }
    return 0;
}

int copy_range(int from, off_t from_off, int to, off_t to_off, size_t n) {
    while (n) {
        ssize_t c = copy_file_range(from, &from_off, to, &to_off, n, 0);
        if (c < 0 && errno == EINTR) continue;
        if (c <= 0) return c < 0 ? -errno : -EIO;
        n -= (size_t)c;
    }
    return 0;
}

// What a chunk is copied from: the region's old home.
struct Source {
    uintptr_t start;
    Backing backing;
    int fd; // disk and memory
    uint64_t file_off;
    int pagemap; // anon: /proc/self/pagemap, opened per move (a fork child's must be its own)
};

// The data extents of the file's [off, off+n) (relative to the region),
// by SEEK_DATA/SEEK_HOLE.
template <class Each> int for_each_extent(const Source &s, size_t off, size_t n, Each each) {
    off_t base = (off_t)s.file_off, at = base + (off_t)off, end = at + (off_t)n;
    while (at < end) {
        off_t data = lseek(s.fd, at, SEEK_DATA);
        if (data < 0 && errno != ENXIO) data = at; // cannot tell: copy it all
        if (data < 0 || data >= end) break;
        off_t hole = lseek(s.fd, data, SEEK_HOLE);
        if (hole < 0 || hole > end) hole = end;
        if (int rc = each((size_t)(data - base), (size_t)(hole - data))) return rc;
        at = hole;
    }
    return 0;
}

// Calls each(off, n) for every extent of [off, off+n) of the region that
// may hold data (relative offsets); what is skipped is known to be zero,
// and a reserved destination already reads as zero there:
//  - disk: its data extents (SEEK_DATA/SEEK_HOLE);
//  - memory (a memfd): its pages in memory (mincore through the region's
//    mapping, which is the old home's while a chunk is copied), and in the
//    rest, the data extents: pages swapped out. SEEK_HOLE alone searches
//    to the end of the file, not of the chunk: a demotion of a full 600 MiB
//    memfd walked every page after each chunk (quadratic; 40% of the
//    mover's CPU in integration scenario 14, sampled), where this asks the
//    file only about pages not in memory (a hole: one step to its end);
//  - anon: pages present or swapped (pagemap); the rest were never touched.
template <class Each> int for_each_data(const Source &s, size_t off, size_t n, Each each) {
    if (s.backing == Backing::disk) return for_each_extent(s, off, n, each);
    if (s.backing == Backing::memory) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = n / page;
        constexpr size_t kBatch = 4096;
        unsigned char vec[kBatch];
        for (size_t first = 0; first < pages; first += kBatch) {
            const size_t count = pages - first < kBatch ? pages - first : kBatch;
            const size_t at = off + first * page;
            if (mincore((void *)(s.start + at), count * page, vec) != 0) {
                if (int rc = for_each_extent(s, at, count * page, each)) return rc; // cannot tell: ask the file
                continue;
            }
            for (size_t i = 0; i < count;) {
                const bool in = vec[i] & 1;
                size_t j = i + 1;
                while (j < count && (vec[j] & 1) == in) j++;
                int rc = in ? each(at + i * page, (j - i) * page) : for_each_extent(s, at + i * page, (j - i) * page, each);
                if (rc) return rc;
                i = j;
            }
        }
        return 0;
    }
    const int pagemap = s.pagemap;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = n / page;
    constexpr size_t kBatch = 512;
    uint64_t entries[kBatch];
    for (size_t first = 0; first < pages; first += kBatch) {
        size_t count = pages - first < kBatch ? pages - first : kBatch;
        uintptr_t at = s.start + off + first * page;
        bool known = pagemap >= 0 &&
                     pread(pagemap, entries, count * 8, (off_t)(at / page * 8)) == (ssize_t)(count * 8);
        size_t i = 0;
        while (i < count) {
            auto used = [&](size_t k) { return !known || (entries[k] >> 62) != 0; };
            if (!used(i)) {
                i++;
                continue;
            }
            size_t j = i;
            while (j < count && used(j)) j++;
            if (int rc = each(off + (first + i) * page, (j - i) * page)) return rc;
            i = j;
        }
    }
    return 0;
}

// What a disk source's chunks are read with (plan_disk_copy), kept across
// the chunks of one move.
struct DiskReader {
    int direct_fd = -1; // the source reopened O_DIRECT: pages only on disk bypass page cache
    bool usable = true; // false once mincore or FIEMAP failed: SEEK_DATA walk instead
    int ask_extents = -1; // extents_cheap_to_ask of the source, once known; 0: every page is data
    std::vector<unsigned char> resident;
    std::vector<Extent> written;
    std::vector<CopyRun> runs;
    size_t cached_bytes = 0, disk_bytes = 0; // what the read-only copies took from where
    bool first = true; // the copy under way is the first (writers running): disk reads only
    static constexpr size_t kBounce = size_t(1) << 20;
    char *bounce = nullptr; // what disk pages are read into
    ~DiskReader() {
        if (direct_fd >= 0) close(direct_fd);
        if (bounce) munmap(bounce, kBounce);
    }
};

// plan_disk_copy carried out for [off, off+n) of a disk region into the
// memfd dest_fd at off. Both ends are copied by the kernel: pwrite from the
// region's mapping (its cached pages are mapped already, by the writers that
// dirtied them), and disk pages read (O_DIRECT, no page cache) into a bounce
// buffer. No new page-table entries for the copy: mapping the destination
// cost a fault and, under a shadow-paging hypervisor, an exit per page.
// Residency is looked at before the extents: a page written back after
// mincore saw it cached is copied through the mapping anyway, and one not
// cached then was already on disk (ext4 converts an unwritten extent before
// the page leaves writeback). -ENOTSUP: not this way (no FIEMAP, mincore).
int copy_disk_chunk(const Source &s, DiskReader &rd, int dest_fd, size_t off, size_t n) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (n + page - 1) / page;
    rd.resident.resize(pages);
    if (rd.ask_extents < 0) rd.ask_extents = extents_cheap_to_ask(s.fd);
    if (!rd.usable || mincore((void *)(s.start + off), n, rd.resident.data()) != 0) {
        rd.usable = false;
        return -ENOTSUP;
    }
    if (!rd.ask_extents) {
        rd.written.assign(1, Extent{0, n}); // a page not cached is read, zeros or not
    } else if (!written_extents(s.fd, s.file_off + off, n, rd.written)) {
        rd.usable = false;
        return -ENOTSUP;
    }
    rd.runs.clear();
    plan_disk_copy(rd.resident.data(), pages, page, rd.written.data(), rd.written.size(), rd.runs);
    for (const CopyRun &run : rd.runs) {
        size_t len = run.off + run.len > n ? n - run.off : run.len;
        if (!rd.first) (run.from_file ? rd.disk_bytes : rd.cached_bytes) += len;
        off_t to = (off_t)(off + run.off);
        if (!run.from_file) {
            // The first copy is there to take disk reads out of the
            // read-only window; cached pages are copied once, in it.
            if (rd.first) continue;
            if (int rc = write_all(dest_fd, (const char *)(s.start + off + run.off), len, to)) return rc;
            continue;
        }
        if (!rd.bounce) {
            void *b = mmap(nullptr, DiskReader::kBounce, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (b == MAP_FAILED) return -errno;
            rd.bounce = (char *)b;
        }
        for (size_t done = 0; done < len;) {
            size_t k = len - done < DiskReader::kBounce ? len - done : DiskReader::kBounce;
            off_t at = (off_t)(s.file_off + off + run.off + done);
            int rc = -EINVAL;
            if (rd.direct_fd >= 0 && k % page == 0) rc = read_all(rd.direct_fd, rd.bounce, k, at);
            if (rc != 0) rc = read_all(s.fd, rd.bounce, k, at);
            if (rc == 0) rc = write_all(dest_fd, rd.bounce, k, to + (off_t)done);
            if (rc != 0) return rc;
            done += k;
        }
    }
    return 0;
}

// Copies [off, off+n) of the region from its old home into dest at off.
// dest_map is dest's [off, off+n) mapped at a private address when dest is a
// memfd (a disk source is read straight into it: one copy, no bounce).
// direct: a demotion's writer past the page cache (direct_write.h), or null.
int copy_chunk(const Source &s, const SpillFile *dest, char *dest_map, size_t off, size_t n,
               DirectWriter *direct = nullptr) {
    return for_each_data(s, off, n, [&](size_t at, size_t len) -> int {
        if (s.backing == Backing::disk) {
            if (dest_map) return read_all(s.fd, dest_map + (at - off), len, (off_t)(s.file_off + at));
            return copy_range(s.fd, (off_t)(s.file_off + at), dest->fd, (off_t)at, len);
        }
        const char *from = (const char *)s.start + at; // readable: the chunk is read-only
        KernelOrdered quiet;
        if (dest_map) {
            memcpy(dest_map + (at - off), from, len);
            return 0;
        }
        if (direct) return direct->write(from, len, (off_t)at);
        return write_all(dest->fd, from, len, (off_t)at);
    });
}

// Puts [off, off+n), now mapped from dest, back into its old home (a failed
// move is undone chunk by chunk, writes made since included).
int restore_chunk(const Source &s, size_t off, size_t n) {
    uintptr_t at = s.start + off;
    if (s.backing == Backing::anon) {
        void *tmp = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (tmp == MAP_FAILED) return -errno;
        {
            KernelOrdered quiet;
            memcpy(tmp, (const void *)at, n);
        }
        if (mremap(tmp, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)at) == MAP_FAILED) {
            int err = -errno;
            munmap(tmp, n);
            return err;
        }
        return 0;
    }
    if (int rc = write_all(s.fd, (const char *)at, n, (off_t)(s.file_off + off))) return rc;
    void *p = map_region_in_place((void *)at, n, s.fd, (off_t)(s.file_off + off));
    return p == MAP_FAILED ? -errno : 0;
}

// Waits for [off, off+n) of fd to be written, then drops it from page cache.
void settle(int fd, size_t off, size_t n) {
    sync_file_range(fd, (off_t)off, (off_t)n,
                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    posix_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_DONTNEED);
}

// What the copy reads cached pages through (a view of the old file, or the
// region's own mapping) reads no further than each page: MADV_RANDOM. Its
// faults are on pages mincore saw cached; one that meets a folio marked for
// read-ahead (PG_readahead, left by any earlier reader of the range), or a
// page evicted since, would otherwise read the device's window ahead
// (read_ahead_kb, 8 MiB on the spill disk here) into page cache, where the
// classification of the batches after it finds those pages cached: copied
// through the mapping and counted cached instead of read past page cache
// and counted disk or skipped as never written, and each window so read
// marks the next. Fault-around, which maps cached neighbours, is unchanged.
void no_read_ahead(void *at, size_t n) { madvise(at, n, MADV_RANDOM); }

// A chunk moved into a memfd has every page in RAM, but its new mapping
// has no page-table entries: the program's first touch of each page would
// be a minor fault (measured: about 120,000 of them, 0.37 s, after the
// graph job's 512 MiB table was promoted). MADV_POPULATE_READ maps them all
// in one call, fault-around included (512 MiB in 0.05 s against 0.28 s of
// faults), and a memfd's shared mapping needs no write notification, so
// the entries it makes are writable too. Linux 5.14 and later; before, the
// call fails and the pages fault in as they did.
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
void map_moved_pages(uintptr_t a, size_t n) { madvise((void *)a, n, MADV_POPULATE_READ); }

void set_chunk(uintptr_t a, uintptr_t b) {
    g_chunk_end.store(0); // never a range that mixes two chunks
    g_chunk_start.store(a);
    g_chunk_end.store(b);
}

// The tracked mover's before_swap: waits (1 s at most) for the O_DIRECT
// reads into [at, at+n) it can see (a device writes the pages it pinned,
// wherever they are mapped by then). Returns the nanoseconds waited.
uint64_t wait_out_direct_reads(uintptr_t at, size_t n) {
    const uint64_t w0 = monotonic_ns();
    for (int tries = 0; tries < 200 && read_in_flight(at, n, true); tries++) {
        timespec ts = {0, 5'000'000};
        nanosleep(&ts, nullptr);
    }
    return monotonic_ns() - w0;
}

// The chunk [done, done+n) of the region moved by the tracked mover
// (move_tracked.h, Level::full): 0, or an error with the chunk where it was.
// queued: the chunk's tracking started, and its first copy was queued
// (WriteAhead below), earlier; its first copy is waiting for that.
int move_tracked_chunk(TrackedMover &t, const Source &src, SpillFile *dest, DiskReader &reader, size_t done,
                       size_t n, TrackedPause *pause, DirectWriter *direct, bool queued) {
    const uintptr_t a = src.start + done;
    if (src.backing != Backing::disk) {
        auto first = [&] { return queued ? direct->finish(done) : copy_chunk(src, dest, nullptr, done, n, direct); };
        return t.block(a, n, src.backing == Backing::memory, dest->fd, done, first, pause, queued);
    }
    // The range maps dest from the pull's first step: the old file's chunk
    // is read through a view of its own (its cached pages) and O_DIRECT.
    void *view = mmap(nullptr, n, PROT_READ, MAP_SHARED, src.fd, (off_t)(src.file_off + done));
    if (view == MAP_FAILED) return -errno;
    no_read_ahead(view, n);
    Source old = src;
    old.start = (uintptr_t)view - done;
    auto copy = [&](int to_fd, uint64_t to_off, size_t rel, size_t len) -> int {
        if (to_off == done) {
            reader.first = false;
            int rc = copy_disk_chunk(old, reader, to_fd, done + rel, len);
            if (rc != -ENOTSUP) return rc;
        }
        return write_all(to_fd, (const char *)view + rel, len, (off_t)(to_off + rel));
    };
    int rc = dest->kind == Backing::memory
                 ? t.pull(a, n, src.fd, src.file_off + done, dest->fd, done, copy, pause)
                 : t.pull_then_block(a, n, src.fd, src.file_off + done, dest->fd, done, copy, pause);
    munmap(view, n);
    return rc;
}

// A demotion's chunks, kept on the disk back to back (direct_write.h says
// why): before the mover waits for chunk k's first copy, the copies of the
// chunks up to k + kWriteAhead are queued, each after its tracking started
// (a store from then on marks its page written, and is copied again in its
// chunk's passes, which wait for its queued copy: none is lost). The
// tracked way only (Level::full), from memory or anonymous memory, with a
// writer that queues; a chunk whose tracking cannot start here moves as
// before, from the start. Chunk k's passes, last step, punch and writeback
// then overlap the next chunk's write.
constexpr size_t kWriteAhead = 1;
struct WriteAhead {
    TrackedMover &tracked;
    const Source &src;
    DirectWriter *direct; // null: nothing is queued
    size_t len;
    size_t next = 0;      // the first chunk offset not looked at yet
    std::vector<bool> queued; // by chunk index

    WriteAhead(TrackedMover &t, const Source &s, DirectWriter *d, size_t l)
        : tracked(t), src(s), direct(d && d->queues() ? d : nullptr), len(l), queued((l + kChunk - 1) / kChunk) {}

    // Queues the chunks from `done` up to kWriteAhead past it.
    void ahead_of(size_t done) {
        if (!direct) return;
        if (next < done) next = done;
        for (; next < len && next <= done + kWriteAhead * kChunk; next += kChunk) {
            size_t n = len - next < kChunk ? len - next : kChunk;
            if (tracked.start_tracking(src.start + next, n) != 0) continue; // moves the usual way
            const size_t at0 = next;
            int rc = for_each_data(src, at0, n, [&](size_t at, size_t k) -> int {
                KernelOrdered quiet; // the program stores into the chunk meanwhile (kernel_ordered.h)
                return direct->queue((const char *)src.start + at, k, (off_t)at, at0);
            });
            if (rc != 0) { // what was queued is waited for; the chunk starts over the usual way
                direct->finish(at0);
                tracked.forget(src.start + at0, n);
                continue;
            }
            queued[at0 / kChunk] = true;
        }
    }
    bool was_queued(size_t done) const { return direct && queued[done / kChunk]; }
    // The move leaves the tracked way, or stops: no queued write may land
    // after this (a later copy of the same range would be overwritten).
    void stop() {
        if (direct) direct->drain();
        direct = nullptr;
    }
};

// The move itself; the caller holds the move lock and has published r as the
// region being moved. Chunk by chunk: where userfaultfd allows, the tracked
// move (move_tracked.h: no access fails); otherwise read-only (a writer
// waits in on_segv, a kernel store fails), copy, map dest over it.
int move_chunks(Region *r, SpillFile *dest, bool write_back, MoveResult *out) {
    install_handler();
    const Source src{r->start, r->backing, r->file ? r->file->fd : -1, r->file_off,
                     r->backing == Backing::anon ? move_high(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) : -1};
    const size_t len = r->map_len;
    const bool to_memory = dest->kind == Backing::memory;
    TrackedMover tracked;
    uffd::Level level = tracked.begin();
    tracked.before_swap = [out](uintptr_t at, size_t n) {
        uint64_t waited = wait_out_direct_reads(at, n);
        if (out) out->waited_ns += waited;
    };
    DiskReader reader;
    bool reader_fits = to_memory && src.backing == Backing::disk;
    // A demotion writes past the page cache (direct_write.h), at the disk's
    // speed: the tracked and narrow moves' full copy (writes made meanwhile
    // are re-copied through page cache); in the read-only way, one copy per
    // chunk in the window and no first copy (it would write every chunk twice).
    std::optional<DirectWriter> writer;
    if (write_back && !to_memory && src.backing != Backing::disk) writer.emplace(dest->fd);
    DirectWriter *direct = writer && writer->direct() ? &*writer : nullptr;
    if (reader_fits || (level == uffd::Level::full && src.backing == Backing::disk)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", src.fd);
        reader.direct_fd = move_high(open(path, O_RDONLY | O_DIRECT | O_CLOEXEC));
    }
    uint64_t t0 = monotonic_ns(), cpu0 = thread_cpu_ns();
    if (out) out->scheme = level;
    g_moved_bytes.store(0);
    g_dest_fd.store(dest->fd);
    g_region_start.store(src.start);
    g_region_end.store(src.start + len);
    int rc = 0;
    size_t done = 0;
    bool advised = false; // a chunk of the old mapping was advised MADV_RANDOM (below)
    // After a chunk lives in dest: the old home's RAM back, the new bytes to disk.
    auto after_chunk = [&](size_t n) {
        g_moved_bytes.store(done + n);
        if (write_back && src.backing == Backing::memory)
            // The old home's RAM goes back now, not after the last chunk (an
            // undo rewrites it from the new mapping, so nothing is lost).
            fallocate(src.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(src.file_off + done), (off_t)n);
        if (write_back) {
            uint64_t b0 = monotonic_ns();
            // The bytes must leave RAM, not stay dirty page cache that a
            // cgroup v1 limit reclaims poorly. Writing starts now; two chunks
            // later it is waited for and the clean pages dropped (a freshly
            // mapped chunk has no page-table entries to keep them), so
            // writeback overlaps the copy and never holds writers up.
            sync_file_range(dest->fd, (off_t)done, (off_t)n, SYNC_FILE_RANGE_WRITE);
            if (done >= 2 * kChunk) settle(dest->fd, done - 2 * kChunk, kChunk);
            if (out) out->writeback_ns += monotonic_ns() - b0;
        }
    };
    WriteAhead ahead(tracked, src, level == uffd::Level::full && src.backing != Backing::disk ? direct : nullptr,
                     len);
    while (done < len && rc == 0) {
        size_t n = len - done < kChunk ? len - done : kChunk;
        uintptr_t a = src.start + done;
        if (level == uffd::Level::full) {
            TrackedPause pause;
            uint64_t c0 = monotonic_ns();
            ahead.ahead_of(done);
            int t = move_tracked_chunk(tracked, src, dest, reader, done, n, &pause, direct, ahead.was_queued(done));
            if (t == 0) {
                if (out) {
                    out->precopy_ns += monotonic_ns() - c0 - pause.total_ns;
                    out->protected_ns += pause.total_ns;
                    if (pause.longest_ns > out->longest_chunk_ns) out->longest_chunk_ns = pause.longest_ns;
                    out->recopied_bytes += pause.recopied;
                }
                after_chunk(n);
                done += n;
                continue;
            }
            // The chunk is where it was: it, and the rest, move the read-only way.
            SPW_LOG(debug, "moving region %p: the tracked move of the chunk at offset %zu failed (%s); the rest "
                           "moves the read-only way",
                    (void *)src.start, done, strerror(-t));
            ahead.stop();
            tracked.end();
            level = uffd::Level::none;
            if (out) out->scheme = level;
        }
        // A thread blocked reading into this chunk would get EFAULT: let it finish.
        uint64_t w0 = monotonic_ns();
        for (int tries = 0; tries < 200 && done > 0 && read_in_flight(a, n); tries++) {
            timespec ts = {0, 5'000'000};
            nanosleep(&ts, nullptr);
        }
        uint64_t p0 = monotonic_ns();
        if (out) out->waited_ns += p0 - w0;
        char *dest_map = nullptr;
        bool by_reader = reader_fits;
        // The reader copies cached pages through the region's own mapping:
        // none of its faults reads ahead (the chunk is mapped from dest after
        // it; a chunk that stays, and the undone ones, get the region's
        // advice back below).
        if (by_reader) {
            no_read_ahead((void *)a, n);
            advised = true;
        }
        auto map_dest = [&]() -> int {
            void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, dest->fd, (off_t)done);
            if (m == MAP_FAILED) return -errno;
            dest_map = (char *)m;
            return 0;
        };
        // Level::user_only: the first copy is of everything, writes are
        // tracked meanwhile, and the read-only window copies only those.
        bool narrow = level == uffd::Level::user_only;
        if (narrow) {
            TrackedPause pause;
            auto first = [&]() -> int {
                if (by_reader) {
                    reader.first = false;
                    int c = copy_disk_chunk(src, reader, dest->fd, done, n);
                    if (c != -ENOTSUP) return c;
                    by_reader = reader_fits = false;
                }
                if (to_memory && !dest_map)
                    if (int m = map_dest()) return m;
                return copy_chunk(src, dest, dest_map, done, n, direct);
            };
            int t = tracked.track_and_copy(a, n, dest->fd, done, first, &pause);
            if (out) out->recopied_bytes += pause.recopied;
            if (t != 0) {
                narrow = false;
                SPW_LOG(debug, "moving region %p: tracking the chunk at offset %zu failed (%s); it moves in "
                               "the read-only way",
                        (void *)src.start, done, strerror(-t));
            }
        } else {
            if (by_reader) {
                // First copy; if this way is refused (no FIEMAP), the chunk is
                // copied the generic way below, from the start.
                reader.first = true;
                rc = copy_disk_chunk(src, reader, dest->fd, done, n);
                reader.first = false;
                if (rc == -ENOTSUP) {
                    by_reader = reader_fits = false;
                    rc = 0;
                }
            }
            if (to_memory && !by_reader && (rc = map_dest()) != 0) break;
            // A first copy while writers still run: it reads what is not in
            // page cache and allocates the new home's pages, so the read-only
            // window below is one memory-speed copy, not disk reads or reclaim.
            if (!by_reader && !direct && rc == 0) rc = copy_chunk(src, dest, dest_map, done, n);
        }
        uint64_t c0 = monotonic_ns(); // writers into this chunk wait from here
        if (out) out->precopy_ns += c0 - p0;
        // One read-only window per chunk, not smaller steps: a system call
        // copying into the region when a window opens comes back short, one
        // that starts in it fails with EFAULT; more, shorter windows would
        // turn failures into short counts, which programs check less.
        set_chunk(a, a + n);
        if (rc == 0 && mprotect((void *)a, n, PROT_READ) != 0) rc = -errno;
        if (rc == 0 && narrow) {
            rc = tracked.copy_written(a, n, dest->fd, done, nullptr); // only what was written since
        } else if (rc == 0 && by_reader && (rc = copy_disk_chunk(src, reader, dest->fd, done, n)) == -ENOTSUP) {
            by_reader = reader_fits = false; // refused only now: the generic copy, into a mapping
            rc = map_dest();
            if (rc == 0) rc = copy_chunk(src, dest, dest_map, done, n);
        } else if (rc == 0 && !by_reader) {
            rc = copy_chunk(src, dest, dest_map, done, n, direct);
        }
        if (dest_map) munmap(dest_map, n);
        if (rc == 0) {
            void *p = map_region_in_place((void *)a, n, dest->fd, (off_t)done);
            if (p == MAP_FAILED) rc = -errno;
        }
        if (rc != 0) {
            mprotect((void *)a, n, PROT_READ | PROT_WRITE); // this chunk keeps its old home
            if (narrow) tracked.forget(a, n);
        }
        set_chunk(0, 0);
        uint64_t chunk_ns = monotonic_ns() - c0;
        if (out && chunk_ns > out->longest_chunk_ns) out->longest_chunk_ns = chunk_ns;
        if (out) out->protected_ns += chunk_ns;
        if (rc != 0) break;
        after_chunk(n);
        done += n;
    }
    ahead.stop(); // (every queued write was finished by its chunk, unless the move stopped)
    uint64_t b1 = monotonic_ns();
    if (rc == 0 && write_back)
        for (size_t back = done > 2 * kChunk ? done - 2 * kChunk : 0; back < done; back += kChunk)
            settle(dest->fd, back, done - back < kChunk ? done - back : kChunk);
    if (out) out->writeback_ns += monotonic_ns() - b1;
    // Once the whole region is in memory, not chunk by chunk: a program
    // access to a chunk not yet moved waits for the mover, which would then
    // map pages first (measured: the graph job's 512 MiB move took 658-832
    // ms instead of 434-460 with a populate after each chunk).
    if (rc == 0 && to_memory) {
        uint64_t m0 = monotonic_ns();
        map_moved_pages(src.start, len);
        if (out) out->mapped_ns = monotonic_ns() - m0;
    }
    if (rc != 0) {
        // Undo: every chunk already on dest goes back, with what was written since.
        for (size_t back = 0; back < done; back += kChunk) {
            size_t n = done - back < kChunk ? done - back : kChunk;
            uintptr_t a = src.start + back;
            set_chunk(a, a + n);
            mprotect((void *)a, n, PROT_READ);
            if (int undo = restore_chunk(src, back, n)) {
                SPW_LOG(error, "moving region %p failed (%s) and undoing it failed too (%s); its "
                               "bytes from offset %zu are lost, aborting rather than run on with wrong "
                               "data: set tiering.enabled = false to avoid tiering's moves, and report "
                               "it with this log",
                        (void *)src.start, strerror(-rc), strerror(-undo), back);
                abort();
            }
            set_chunk(0, 0);
        }
    }
    g_region_start.store(0);
    g_region_end.store(0);
    g_dest_fd.store(-1);
    if (src.pagemap >= 0) close(src.pagemap);
    if (rc != 0 && (advised || done > 0)) {
        // The old home stays: the chunk advised for the copy, and those
        // mapped again by the undo (default advice), take the region's.
        int had = r->advice.load(std::memory_order_relaxed);
        r->advice = 0;
        advise_region(r, had ? had : initial_advice(len, false));
    }
    if (out) {
        out->total_ns = monotonic_ns() - t0;
        out->cpu_ns = thread_cpu_ns() - cpu0;
        out->cached_bytes = reader.cached_bytes;
        out->disk_bytes = reader.disk_bytes;
        out->bytes = len;
    }
    if (rc != 0) return rc;
    SpillFile *old_file;
    uint64_t old_off;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        old_file = r->file;
        old_off = r->file_off;
        if (old_file && old_file->pool) {
            // Born in the pool (only a region's birth puts it there): the
            // range is punched when the region is retired (Region::left_pool).
            r->left_pool = old_file;
            r->left_pool_off = old_off;
            r->left_pool_len = len;
            old_file = nullptr;
        }
        r->file = dest;
        r->file_off = 0;
        r->backing = dest->kind;
    }
    // Outside the large lock (readers of r->file take it, so none holds the
    // old file now), and off this thread: its last close can take seconds.
    release_left_file(old_file);
    // The new mapping starts with default advice: apply what the region had
    // (or what a fresh region of its size would get).
    int had = r->advice.load(std::memory_order_relaxed);
    int advice = had ? had : initial_advice(len, false);
    r->advice = 0;
    advise_region(r, advice);
    return 0;
}

// /proc/self/task/TID/syscall: "NR ARG1 ... ARG6 SP PC" for a blocked thread.
// Whether this process's descriptor fd was opened O_DIRECT (/proc/self/fdinfo).
bool opened_direct(unsigned long long fd) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%llu", fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return false;
    ssize_t n = read(f, buf, sizeof buf - 1);
    close(f);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *flags = strstr(buf, "flags:");
    return flags && (strtoul(flags + 6, nullptr, 8) & O_DIRECT);
}

bool syscall_reads_into(const char *path, uintptr_t start, uintptr_t end, bool direct_only) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    unsigned long long nr, a[6];
    if (sscanf(buf, "%llu %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5]) != 7)
        return false;
    // Direct I/O pins the buffer's pages and the device writes them later;
    // a socket or a buffered read copies through the address (tracked).
    if (direct_only && (nr == SYS_recvfrom || nr == SYS_recvmsg || !opened_direct(a[0]))) return false;
    auto hits = [&](uint64_t p, uint64_t len) { return len && p < end && p + len > start; };
    auto iov_hits = [&](uint64_t iov, uint64_t count) {
        if (count > 1024) count = 1024;
        struct iovec local[64];
        for (uint64_t first = 0; first < count; first += 64) {
            size_t k = count - first < 64 ? count - first : 64;
            struct iovec want = {local, k * sizeof(struct iovec)};
            struct iovec remote = {(void *)(iov + first * sizeof(struct iovec)), k * sizeof(struct iovec)};
            if (process_vm_readv(getpid(), &want, 1, &remote, 1, 0) != (ssize_t)want.iov_len) return false;
            for (size_t i = 0; i < k; i++)
                if (hits((uint64_t)local[i].iov_base, local[i].iov_len)) return true;
        }
        return false;
    };
    switch ((long)nr) {
    case SYS_read:
    case SYS_pread64:
    case SYS_recvfrom: return hits(a[1], a[2]);
    case SYS_readv:
    case SYS_preadv:
    case SYS_preadv2: return iov_hits(a[1], a[2]);
    case SYS_recvmsg: {
        struct msghdr m;
        struct iovec want = {&m, sizeof m}, remote = {(void *)a[1], sizeof m};
        if (process_vm_readv(getpid(), &want, 1, &remote, 1, 0) != (ssize_t)sizeof m) return false;
        return iov_hits((uint64_t)m.msg_iov, m.msg_iovlen);
    }
    default: return false;
    }
}
} // namespace

void plan_disk_copy(const unsigned char *resident, size_t pages, size_t page, const Extent *written,
                    size_t n_written, std::vector<CopyRun> &runs) {
    size_t e = 0; // the first extent that may overlap the page looked at (pages go forward)
    auto on_disk = [&](size_t i) {
        size_t at = i * page;
        while (e < n_written && written[e].off + written[e].len <= at) e++;
        return e < n_written && written[e].off < at + page;
    };
    for (size_t i = 0; i < pages;) {
        const bool cached = resident[i] & 1;
        if (!cached && !on_disk(i)) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < pages && (resident[j] & 1) == cached && (cached || on_disk(j))) j++;
        runs.push_back({i * page, (j - i) * page, !cached});
        i = j;
    }
}

bool read_in_flight(uintptr_t start, size_t len, bool direct_only) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return false;
    bool found = false;
    pid_t self = (pid_t)syscall(SYS_gettid);
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == self) continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%.200s/syscall", e->d_name);
        if ((found = syscall_reads_into(path, start, start + len, direct_only))) break;
    }
    closedir(d);
    return found;
}

// Both kinds of move: the copy maps the region in order, which is not a
// reader's stream, so the prefetch worker and the detector keep off the
// region while it runs (prefetch_worker.h, prefetch_keep_off).
namespace {
int move_chunks_kept_off(Region *r, SpillFile *dest, bool write_back, MoveResult *out) {
    prefetch_keep_off(r->start, r->map_len);
    int rc = move_chunks(r, dest, write_back, out);
    prefetch_keep_off_end();
    return rc;
}
} // namespace

int rehome_region(Region *r, SpillFile *dest) {
    if (g_untrusted) return -EPERM; // fork_safety.h: inherited regions stay as they are
    AsyncSignalsBlocked no_signals;
    std::lock_guard<std::mutex> move_guard(g_move_lock);
    g_moving_to.store((uint8_t)dest->kind);
    g_moving_region.store(r);
    r->moving.store(true); // seq_cst: the page probes' check sees it, or the wait below sees their hold
    wait_out_probes(r);
    Backing old = r->backing;
    size_t len = r->map_len;
    uintptr_t start = r->start;
    MoveResult res;
    int rc = move_chunks_kept_off(r, dest, false, &res);
    r->moving.store(false);
    g_moving_region.store(nullptr);
    if (rc != 0) return rc;
    SPW_LOG(debug, "moved %zu MiB at %p %s -> %s (%s) in %.1f ms; an access waited at most %.3f ms; %zu KiB "
                   "copied again (written during the move)",
            len >> 20, (void *)start, backing_name(old), backing_name(dest->kind), uffd::level_name(res.scheme),
            res.total_ns / 1e6, res.longest_chunk_ns / 1e6, res.recopied_bytes >> 10);
    stats_on_rehome(old, dest->kind, len); // the same region, elsewhere: no free, no new region
    return 0;
}

int hold_region_for(Region *r, uintptr_t start, Backing to, bool (*refuse)(const Region *, Backing to), const RegionWork &work,
                    uint64_t *checks_ns) {
    if (g_untrusted) return -EPERM;
    const uint64_t t0 = monotonic_ns();
    AsyncSignalsBlocked no_signals;
    std::lock_guard<std::mutex> move_guard(g_move_lock);
    g_moving_to.store((uint8_t)to);
    g_moving_region.store(r); // seq_cst: a pin either sees this or is seen below
    r->moving.store(true);     // seq_cst, before the checks under the large lock: page_probes.h
    int rc = 0;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        Region *live = registry_first();
        while (live && live != r) live = live->next;
        if (!live || r->start != start || r->freed.load()) rc = -ESTALE;
        else if (r->pins.load() || r->is_private || (r->file && (r->file->foreign || r->file->exported[0])) ||
                 refuse(r, to))
            rc = -EBUSY;
    }
    // A probe that checked the region before it was marked moving may be
    // unmapping its pages: the work starts after it (probe_hold.h).
    if (rc == 0) wait_out_probes(r);
    if (checks_ns) *checks_ns = monotonic_ns() - t0;
    if (rc == 0) rc = work(r);
    r->moving.store(false);
    g_moving_region.store(nullptr);
    return rc;
}

namespace {
constexpr size_t kPage = 4096;
// /proc/self/pagemap's bits (Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPmPresent = 1ull << 63, kPmSwapped = 1ull << 62, kPmFileOrShared = 1ull << 61;

// Writes into fd at off the pages of [a, a+n) that are this process's own
// copies (a private mapping's copy-on-write pages: present or swapped, not a
// file page), consecutive pages in one write. The chunk is read-only: no
// page can be copied or written meanwhile. 0 or -errno.
int write_back_copies(int pagemap_fd, uintptr_t a, size_t n, int fd, off_t off, size_t *copied) {
    constexpr size_t kBatch = 512;
    uint64_t entries[kBatch];
    const size_t pages = n / kPage;
    size_t run_start = 0, run_len = 0; // in pages
    auto flush = [&]() -> int {
        if (!run_len) return 0;
        int rc = write_all(fd, (const char *)(a + run_start * kPage), run_len * kPage, off + (off_t)(run_start * kPage));
        *copied += run_len * kPage;
        run_len = 0;
        return rc;
    };
    for (size_t i = 0; i < pages; i += kBatch) {
        size_t k = std::min(kBatch, pages - i);
        ssize_t got = pread(pagemap_fd, entries, k * sizeof(uint64_t), (off_t)((a / kPage + i) * sizeof(uint64_t)));
        if (got != (ssize_t)(k * sizeof(uint64_t))) return got < 0 ? -errno : -EIO;
        for (size_t j = 0; j < k; j++) {
            uint64_t e = entries[j];
            bool copy = ((e & kPmPresent) && !(e & kPmFileOrShared)) || (e & kPmSwapped);
            if (copy && run_len && run_start + run_len == i + j) {
                run_len++;
            } else if (copy) {
                if (int rc = flush()) return rc;
                run_start = i + j;
                run_len = 1;
            }
        }
    }
    return flush();
}

} // namespace

const char *rehome_scheme_name(uffd::Level l) {
    switch (l) {
    case uffd::Level::full: return "blocked";
    case uffd::Level::user_only: return "writes tracked";
    default: return "read-only chunks";
    }
}

namespace {

// Moves the page-table entries of [a, a+n) to a spare range and returns it
// (nullptr when the kernel refuses: the caller maps over them); [a, a+n)
// keeps its mapping, with no page mapped. For a private file mapping the
// caller has written every copy into the file: a fault then maps the file's
// page, the same bytes. MREMAP_DONTUNMAP on file mappings: Linux 5.13.
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
void *set_aside(uintptr_t a, size_t n) {
    void *spare = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (spare == MAP_FAILED) return nullptr;
    if (mremap((void *)a, n, n, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, spare) != MAP_FAILED) return spare;
    munmap(spare, n);
    return nullptr;
}

// Maps [a, a+n) over fd at off, shared or private, read-write. 0 or -errno.
int map_over(uintptr_t a, size_t n, int fd, off_t off, int share) {
    KernelOrdered quiet;
    void *q = mmap((void *)a, n, PROT_READ | PROT_WRITE, share | MAP_FIXED, fd, off);
    return q == MAP_FAILED ? -errno : 0;
}

// Puts [start, start+n), mapped shared over dest at dest_off, back to a
// private mapping of fd at off holding the same bytes (a failed spill's
// undo): writers wait in on_segv while the copy is made at a spare address,
// which then replaces the range in one mremap. 0 or -errno (the range is as
// it was).
int unspill(uintptr_t start, size_t n, int fd, off_t off, int dest_fd, off_t dest_off) {
    set_chunk(start, start + n);
    int rc = mprotect((void *)start, n, PROT_READ) == 0 ? 0 : -errno;
    void *spare = MAP_FAILED, *view = MAP_FAILED;
    if (rc == 0) spare = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, off);
    if (rc == 0 && spare != MAP_FAILED) view = mmap(nullptr, n, PROT_READ, MAP_SHARED, dest_fd, dest_off);
    if (rc == 0 && (spare == MAP_FAILED || view == MAP_FAILED)) rc = -errno;
    if (rc == 0) {
        memcpy(spare, view, n);
        if (mremap(spare, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) == MAP_FAILED) rc = -errno;
        else spare = MAP_FAILED;
    }
    if (view != MAP_FAILED) munmap(view, n);
    if (spare != MAP_FAILED) munmap(spare, n);
    if (rc != 0) mprotect((void *)start, n, PROT_READ | PROT_WRITE);
    set_chunk(0, 0);
    return rc;
}

bool always_due(const Region *) { return true; }

std::atomic<long> g_fail_spill_at_chunk{-1};

// rehome_reshare's and rehome_spill_snapshot's way. into: nullptr to share
// r's own file again (it holds every byte but the parent's copies), or a
// new file the whole region is written into (the child keeps the old one).
int reshare_into(Region *r, uintptr_t start, bool (*due)(const Region *), SpillFile *into, MoveResult *out) {
    if (g_untrusted) return -EPERM;
    AsyncSignalsBlocked no_signals;
    std::lock_guard<std::mutex> move_guard(g_move_lock); // no fork (and so no new generation) while held
    g_moving_region.store(r); // seq_cst, before the pins are read: a pin either sees this or is seen
    int fd = -1;
    off_t file_off = 0;
    size_t len = 0;
    int advice = 0;
    bool shmem = false;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        Region *live = registry_first();
        while (live && live != r) live = live->next;
        if (!live || r->start != start || r->freed.load() || !r->is_private || !r->file) {
            g_moving_region.store(nullptr);
            return -ESTALE;
        }
        if (r->pins.load() || !due(r)) {
            g_moving_region.store(nullptr);
            return -EBUSY;
        }
        g_moving_to.store((uint8_t)r->backing); // the same home
        r->moving.store(true);
        fd = r->file->fd;
        file_off = (off_t)r->file_off;
        len = r->map_len;
        advice = r->advice.load();
        shmem = r->backing == Backing::memory;
        if (into) g_moving_to.store((uint8_t)into->kind);
    }
    // Where the bytes go: the region's own file, or the new one.
    const int dest_fd = into ? into->fd : fd;
    const off_t dest_base = into ? 0 : file_off;
    auto done = [&](int rc) {
        r->moving.store(false);
        g_moving_region.store(nullptr);
        return rc;
    };
    wait_out_probes(r);
    int pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (pagemap_fd < 0) return done(-errno);
    install_handler();
    // The tracked ways (move_tracked.h): a memfd's chunk is blocked, so no
    // access to it ever fails; a disk file's private mapping can only be
    // write-tracked (userfaultfd makes nothing wait in a private mapping of
    // a regular file), so its read-only window narrows to the pages written
    // since the last pass.
    TrackedMover tracked;
    uffd::Level scheme = tracked.begin(shmem ? uffd::Level::full : uffd::Level::user_only);
    tracked.before_swap = [](uintptr_t at, size_t n) { wait_out_direct_reads(at, n); };
    g_region_start.store(start);
    g_region_end.store(start + len);
    int rc = 0;
    const uint64_t t0 = monotonic_ns();
    uint64_t longest_ns = 0; // the longest an access to a chunk could have waited (or failed, read-only)
    uint64_t protected_ns = 0;
    size_t copied = 0;       // the parent's copies (a spill: every byte) written into the file
    size_t recopied = 0;     // written again while a chunk was tracked
    size_t shared = 0; // [start, start+shared) is mapped shared again
    while (shared < len && rc == 0) {
        const uintptr_t a = start + shared;
        const size_t n = std::min(kChunk, len - shared);
        const off_t off = file_off + (off_t)shared;
        const off_t dest_off = dest_base + (off_t)shared;
        TrackedPause pause;
        // Tracking starts in the step that lists the parent's copies
        // (move_tracked.h start_tracking_listing), and the first copy writes
        // those: a store meanwhile marks its page, copied again.
        std::vector<uffd::Range> own;
        int t = scheme == uffd::Level::none ? -ENOTSUP : tracked.start_tracking_listing(a, n, own);
        // A spill writes the whole chunk as the parent sees it: the old
        // file's bytes, in the kernel (copy_file_range: the file is frozen,
        // and read in large requests), then the copies over them; a store
        // meanwhile is tracked. Through the mapping instead, a page the
        // parent never wrote faults in alone (a random-access region is
        // advised so): 13-17 s for 768 MiB under a memory limit.
        auto first = [&]() -> int {
            if (into) {
                copied += n;
                if (copy_range(fd, off, dest_fd, dest_off, n) != 0)
                    return write_all(dest_fd, (const char *)a, n, dest_off);
            }
            for (const uffd::Range &c : own) {
                if (into) {
                    if (int e = write_all(dest_fd, (const char *)c.start, c.end - c.start,
                                          dest_off + (off_t)(c.start - a)))
                        return e;
                    continue;
                }
                if (int e = write_all(fd, (const char *)c.start, c.end - c.start, off + (off_t)(c.start - a))) return e;
                copied += c.end - c.start;
            }
            return 0;
        };
        // A test's failure at this chunk (rehome_fail_spill_at_chunk_for_tests):
        // the tracked way refused, then the mapping.
        const bool injected = into && (long)(shared / kChunk) == g_fail_spill_at_chunk.load();
        if (injected && t == 0) t = -EIO;
        if (t == 0 && scheme == uffd::Level::full) {
            t = tracked.block(a, n, true, dest_fd, (uint64_t)dest_off, first, &pause, true);
            recopied += pause.recopied;
            longest_ns = std::max(longest_ns, pause.longest_ns);
            if (t == 0) { // the range maps the file shared (map_region_in_place)
                shared += n;
                continue;
            }
        } else if (t == 0) {
            t = tracked.track_and_copy(a, n, dest_fd, (uint64_t)dest_off, first, &pause, true);
            recopied += pause.recopied;
        }
        // Else the chunk is private as it was, untracked: it, and the rest,
        // go the read-only way.
        const bool narrow = t == 0;
        if (t != 0 && scheme != uffd::Level::none) {
            SPW_LOG(debug, "fork snapshot: the tracked re-share of region %p failed at offset %zu (%s); the rest "
                           "goes the read-only way",
                    (void *)start, shared, strerror(-t));
            tracked.end();
            scheme = uffd::Level::none;
        }
        // A read(2) into a read-only chunk fails (rehome.h): one blocked in
        // it now is waited out (100 ms at most; then the next tick tries;
        // a spill, which cannot start over cheaply, waits 2 s).
        for (int i = 0; read_in_flight(a, n) && rc == 0; i++) {
            if (i == (into ? 2000 : 100)) rc = -EBUSY;
            else usleep(1000);
        }
        set_chunk(a, a + n); // writers into it wait in on_segv from now on
        if (rc == 0 && mprotect((void *)a, n, PROT_READ) != 0) rc = -errno;
        const uint64_t protected_at = monotonic_ns();
        // Narrowed: only what was written since the last pass; else every copy.
        if (rc == 0 && narrow) rc = tracked.copy_written(a, n, dest_fd, (uint64_t)dest_off, &pause);
        else if (rc == 0 && into) {
            copied += n;
            size_t listed = 0; // within the chunk's n, counted already
            rc = copy_range(fd, off, dest_fd, dest_off, n) == 0
                     ? write_back_copies(pagemap_fd, a, n, dest_fd, dest_off, &listed)
                     : write_all(dest_fd, (const char *)a, n, dest_off);
        } else if (rc == 0) {
            rc = write_back_copies(pagemap_fd, a, n, fd, off, &copied);
        }
        // The file now holds every byte of the chunk: either mapping of it
        // shows the same bytes. The chunk's copies leave the range first, in
        // one step that only moves page tables (mremap MREMAP_DONTUNMAP; a
        // read meanwhile faults in the file's page, the same bytes): the
        // shared map over them would otherwise free them while the old
        // read-only mapping still takes faults, and a kernel store into the
        // range failed with EFAULT for the whole of it (0.4-6 ms per 16 MiB
        // of copies here, hundreds of failed reads in test_fork_snapshot).
        // A spill maps the new file straight over them: with the copies set
        // aside, a read would fault in the old file's page, which the
        // parent's copy had replaced.
        void *copies = rc == 0 && !into ? set_aside(a, n) : nullptr;
        // A kernel store fails from the mprotect until the map.
        if (rc == 0) rc = injected ? -EIO : map_over(a, n, dest_fd, dest_off, MAP_SHARED);
        longest_ns = std::max(longest_ns, monotonic_ns() - protected_at);
        protected_ns += monotonic_ns() - protected_at;
        if (rc != 0) {
            // Back to private, as a whole: [start, a) holds the file's
            // bytes, and this chunk's copies are still mapped (read-only)
            // unless the file got them all.
            if (copies && mremap(copies, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a) != MAP_FAILED)
                copies = nullptr;
            int err = mprotect((void *)a, n, PROT_READ | PROT_WRITE) != 0 &&
                      map_over(a, n, fd, off, MAP_PRIVATE) != 0;
            if (narrow) tracked.forget(a, n);
            // The chunks already shared: the old file holds their bytes
            // (a re-share), or the new one does (a spill: copied back).
            if (shared && into) err = unspill(start, shared, fd, file_off, dest_fd, dest_base) != 0 || err;
            else if (shared) err = map_over(start, shared, fd, file_off, MAP_PRIVATE) || err;
            if (err || copies)
                SPW_LOG(error, "fork snapshot: could not map region %p privately again after a failed re-share (%s); "
                               "its bytes may be wrong: report this with the log",
                        (void *)start, strerror(-rc));
            if (rc != -EBUSY)
                SPW_LOG(debug, "fork snapshot: region %p stays private for now (%s)", (void *)start, strerror(-rc));
        } else {
            shared += n;
        }
        set_chunk(0, 0);
        if (copies) munmap(copies, n); // the parent's copies, in the file now
    }
    tracked.end();
    g_region_start.store(0);
    g_region_end.store(0);
    close(pagemap_fd);
    if (rc == 0) {
        if (advice) madvise((void *)start, len, advice); // a new mapping starts MADV_NORMAL
        SPW_LOG(debug, "fork snapshot: %zu MiB at %p %s in %.1f ms (%s), %zu KiB %s and %zu KiB written "
                       "meanwhile; an access to a chunk %s at most %.3f ms",
                len >> 20, (void *)start, into ? "moved to a file of its own" : "shared again",
                (monotonic_ns() - t0) / 1e6, rehome_scheme_name(scheme), copied >> 10,
                into ? "written" : "of the parent's copies written back", recopied >> 10,
                scheme == uffd::Level::full ? "waited" : "was refused a kernel store for", longest_ns / 1e6);
        SpillFile *old_file = nullptr;
        {
            std::lock_guard<std::mutex> guard(large_lock());
            if (into) {
                old_file = r->file;
                if (old_file->pool) {
                    // Born in the pool: its range is punched when the region
                    // is retired, and not before the children of its
                    // generation are gone (fork_snapshot.h).
                    r->left_pool = old_file;
                    r->left_pool_off = r->file_off;
                    r->left_pool_len = len;
                    r->left_gen = r->snapshot_gen;
                    old_file = nullptr;
                }
                r->file = into;
                r->file_off = 0;
                r->backing = into->kind;
                r->snapshot_spilled = true;
            } else if (copied >= kForkWrittenMin) {
                r->fork_written = true;
            }
            r->is_private = false;
            r->snapshot_gen = 0;
        }
        // A file of its own: the children hold their own descriptors and
        // mappings of it, which keep it (and its blocks) for them.
        release_left_file(old_file);
    }
    if (out) {
        out->total_ns = monotonic_ns() - t0;
        out->longest_chunk_ns = longest_ns;
        out->protected_ns = protected_ns;
        out->bytes = copied;
        out->recopied_bytes = recopied;
        out->scheme = scheme;
    }
    return done(rc);
}
} // namespace

int rehome_reshare(Region *r, uintptr_t start, bool (*due)(const Region *)) {
    return reshare_into(r, start, due, nullptr, nullptr);
}

int rehome_spill_snapshot(Region *r, uintptr_t start, SpillFile *dest, MoveResult *out) {
    return reshare_into(r, start, always_due, dest, out);
}

void rehome_fail_spill_at_chunk_for_tests(long chunk) { g_fail_spill_at_chunk.store(chunk); }

int rehome_region_checked(Region *r, uintptr_t start, SpillFile *dest, bool write_back, MoveResult *out) {
    auto already_there = [](const Region *live, Backing to) { return live->backing == to; };
    return hold_region_for(
        r, start, dest->kind, already_there,
        [&](Region *held) {
            // A read in flight into the region would fail in a read-only window; a tracked move waits for nothing.
            if (uffd::level() != uffd::Level::full && read_in_flight(held->start, held->map_len)) return -EBUSY;
            return move_chunks_kept_off(held, dest, write_back, out);
        },
        out ? &out->checks_ns : nullptr);
}

RegionPin::RegionPin(Region *r) : r_(r) {
    // seq_cst, against the mover's publication above, the probes' hold and
    // fork's privatising (region.h): prepare either sees the pin and leaves
    // the region shared, or the pin waits until the region is private.
    for (;;) {
        r_->pins.fetch_add(1);
        if (!g_fork_privatising.load()) break;
        r_->pins.fetch_sub(1);
        while (g_fork_privatising.load()) {
            timespec ts = {0, 50000};
            nanosleep(&ts, nullptr);
        }
    }
    if (g_moving_region.load() == r_) std::lock_guard<std::mutex> wait(g_move_lock);
    wait_out_probes(r_); // a resize changes the mapping: no probe call may land on it after
}

void RegionPin::release() {
    if (r_) r_->pins.fetch_sub(1);
    r_ = nullptr;
}

void pin_region_for_good(Region *r) {
    r->pins.fetch_add(1);
    if (g_moving_region.load() == r) std::lock_guard<std::mutex> wait(g_move_lock);
    wait_out_probes(r); // the retirement unmaps it and gives its range to the next region
}

bool region_moving(const Region *r) { return g_moving_region.load() == r; }

Backing moving_to(const Region *r) {
    return g_moving_region.load() == r ? (Backing)g_moving_to.load() : Backing::none;
}

void wait_out_move(const Region *r) {
    if (g_moving_region.load() == r) std::lock_guard<std::mutex> wait(g_move_lock);
}

bool rehome_fork_prepare() { return lock_unless_held_here(g_move_lock.native_handle()); }

void rehome_fork_parent() {
    g_last_fork_ns.store(monotonic_ns());
    g_move_lock.unlock();
}

uint64_t last_fork_ns() { return g_last_fork_ns.load(); }
void note_fork_left_shared() { g_last_shared_fork_ns.store(monotonic_ns()); }
uint64_t last_shared_fork_ns() { return g_last_shared_fork_ns.load(); }
uint64_t forked_at_ns() { return g_forked_at_ns; }

void rehome_after_fork_child(bool trusted) {
    g_untrusted = !trusted;
    new (&g_move_lock) std::mutex();
    g_forked_at_ns = monotonic_ns();
    g_last_fork_ns.store(0); // this process has not forked yet
    g_last_shared_fork_ns.store(0);
    uffd::forget_level();    // its first move asks again (a child may have added a seccomp filter)
    // A move this thread was making when a signal handler forked (only a
    // synchronous signal can: the mover blocks the others). Its mover never
    // runs here: give the child a private copy of the region's current
    // bytes, the moved chunks from dest and the rest from the old home, so
    // no chunk stays read-only (a write would wait in on_segv forever) and
    // none stays shared with the parent.
    uintptr_t start = g_region_start.load(), end = g_region_end.load();
    Region *r = g_moving_region.load();
    if (start && end > start) {
        size_t done = g_moved_bytes.load();
        int dest_fd = g_dest_fd.load();
        if (done && dest_fd >= 0)
            mmap((void *)start, done, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, dest_fd, 0);
        if (r && r->file && r->start == start)
            mmap((void *)(start + done), end - start - done, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                 r->file->fd, (off_t)(r->file_off + done));
        else
            mprotect((void *)(start + done), end - start - done, PROT_READ | PROT_WRITE);
        if (r && r->file && r->start == start) r->is_private = true; // large_privatise_inherited keeps this view
    }
    g_moving_region.store(nullptr);
    g_region_start.store(0);
    g_region_end.store(0);
    set_chunk(0, 0);
    g_moved_bytes.store(0);
    g_dest_fd.store(-1);
}

} // namespace spillway
