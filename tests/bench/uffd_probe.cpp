// uffd_probe.cpp — proves, on the running kernel, the mechanisms a move of a
// live region without read-only windows rests on
// (shim/engine/tiering/move_tracked.h), each under a thread that pread(2)s
// 1 MiB into the region over and over (the kernel's stores, which a
// read-only page fails with EFAULT):
//
//  wp      asynchronous write protection (UFFD_FEATURE_WP_ASYNC) and
//          PAGEMAP_SCAN find every page written meanwhile, CPU and kernel
//          stores alike, on private anonymous, MAP_SHARED memfd and
//          MAP_SHARED file (the spill directory's filesystem) mappings; no
//          pread fails or comes back short.
//  block   the last step of a move off anonymous memory or a memfd: the old
//          pages leave the range (mremap MREMAP_DONTUNMAP, their
//          write-protect bits kept by UFFD_FEATURE_EVENT_REMAP), so every
//          access to it waits in userfaultfd (missing or minor fault) instead
//          of failing; the pages written since the last scan are found on
//          the moved pages, copied, the new file is mapped over the range,
//          and the waiters are woken: they finish against the new mapping.
//  pull    a move off a file into a memfd (promotion): the memfd, already
//          registered for minor faults, is moved over the range in one
//          mremap; the file, no longer mapped, cannot change; each page is
//          copied and then mapped (UFFDIO_CONTINUE), accesses waiting for
//          their page meanwhile.
//  legacy  today's scheme (the chunk read-only while it is copied), for the
//          numbers beside: EFAULTs and short counts.
//
// Every mode checks every byte at the end (a pread's bytes and a CPU
// writer's counters: nothing lost) and prints: preads, EFAULTs, short counts,
// the longest time a writer could have waited, and the move's MiB/s.
//
//   uffd_probe DIR [rounds]      DIR: a directory on the spill filesystem
//
// Needs userfaultfd that handles kernel faults (root, CAP_SYS_PTRACE or
// vm.unprivileged_userfaultfd=1); `uffd_probe DIR 1 user` asks for
// UFFD_USER_MODE_ONLY instead, to show what an unprivileged process gets.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/userfaultfd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
struct page_region {
    uint64_t start, end, categories;
};
struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
        category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN_IOCTL _IOWR('f', 16, struct pm_scan_arg)
constexpr uint64_t kIsWritten = 1 << 1, kIsPresent = 1 << 3, kIsSwapped = 1 << 4;
constexpr uint64_t kWpMatching = 1 << 0, kCheckWpAsync = 1 << 1;

namespace {

constexpr size_t MiB = size_t(1) << 20, kPage = 4096;
bool g_user_only = false;
int g_pagemap = -1;

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

[[noreturn]] void die(const char *what) {
    fprintf(stderr, "uffd_probe: %s: %s\n", what, strerror(errno));
    exit(1);
}

int uffd_open(uint64_t features) {
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | (g_user_only ? UFFD_USER_MODE_ONLY : 0));
    if (fd < 0) die("userfaultfd");
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = features;
    if (ioctl(fd, UFFDIO_API, &api) != 0) die("UFFDIO_API");
    return fd;
}

uint64_t supported_features() {
    int fd = uffd_open(0);
    uffdio_api api{};
    api.api = UFFD_API;
    close(fd);
    fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | (g_user_only ? UFFD_USER_MODE_ONLY : 0));
    if (ioctl(fd, UFFDIO_API, &api) != 0) die("UFFDIO_API");
    close(fd);
    return api.features;
}

int uffd_register(int fd, void *a, size_t n, uint64_t modes) {
    uffdio_register r{};
    r.range.start = (uint64_t)a;
    r.range.len = n;
    r.mode = modes;
    return ioctl(fd, UFFDIO_REGISTER, &r) == 0 ? 0 : -errno;
}

void uffd_protect(int fd, void *a, size_t n, bool on) {
    uffdio_writeprotect w{};
    w.range.start = (uint64_t)a;
    w.range.len = n;
    w.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
    if (ioctl(fd, UFFDIO_WRITEPROTECT, &w) != 0) die("UFFDIO_WRITEPROTECT");
}

void uffd_wake(int fd, void *a, size_t n) {
    uffdio_range r{(uint64_t)a, n};
    if (ioctl(fd, UFFDIO_WAKE, &r) != 0) die("UFFDIO_WAKE");
}

// Page ranges of [a, a+n) matching: written (reprotecting them when
// reprotect), or (none) neither present nor swapped.
std::vector<page_region> scan(void *a, size_t n, uint64_t flags, uint64_t mask, uint64_t inverted) {
    std::vector<page_region> out, vec(512);
    uintptr_t at = (uintptr_t)a, end = at + n;
    while (at < end) {
        pm_scan_arg arg{};
        arg.size = sizeof arg;
        arg.flags = flags;
        arg.start = at;
        arg.end = end;
        arg.vec = (uint64_t)vec.data();
        arg.vec_len = vec.size();
        arg.category_mask = mask;
        arg.category_inverted = inverted;
        arg.return_mask = mask;
        long got = ioctl(g_pagemap, PAGEMAP_SCAN_IOCTL, &arg);
        if (got < 0) die("PAGEMAP_SCAN");
        out.insert(out.end(), vec.begin(), vec.begin() + got);
        if (arg.walk_end <= at) break;
        at = arg.walk_end;
    }
    return out;
}
size_t pages_of(const std::vector<page_region> &v) {
    size_t n = 0;
    for (auto &r : v) n += (r.end - r.start) / kPage;
    return n;
}

enum class Kind { anon, memfd, file };
const char *kind_name(Kind k) { return k == Kind::anon ? "anon" : k == Kind::memfd ? "memfd" : "file"; }

std::string g_dir;

int new_file(Kind k, size_t n) {
    int fd = k == Kind::memfd ? memfd_create("uffd_probe", MFD_CLOEXEC)
                              : open(g_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) die("memfd_create/O_TMPFILE");
    if (fallocate(fd, 0, 0, (off_t)n) != 0) die("fallocate");
    return fd;
}

void *map_kind(Kind k, size_t n, int *fd_out, void *at = nullptr) {
    int flags = at ? MAP_FIXED : 0;
    void *p;
    if (k == Kind::anon) {
        *fd_out = -1;
        p = mmap(at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    } else {
        *fd_out = new_file(k, n);
        p = mmap(at, n, PROT_READ | PROT_WRITE, MAP_SHARED | flags, *fd_out, 0);
    }
    if (p == MAP_FAILED) die("mmap");
    return p;
}

uint64_t pattern(size_t word, uint64_t seed) { return (word * 0x9E3779B97F4A7C15ull) ^ seed; }

void fill(void *p, size_t n, uint64_t seed) {
    uint64_t *w = (uint64_t *)p;
    for (size_t i = 0; i < n / 8; i++) w[i] = pattern(i, seed);
}

// The I/O thread: pread 1 MiB from src into [dst, dst + 1 MiB) until stop.
struct Io {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> calls{0}, efault{0}, shorts{0}, other{0};
    std::thread th;
    void start(int src, char *dst) {
        th = std::thread([this, src, dst] {
            while (!stop.load(std::memory_order_relaxed)) {
                ssize_t got = pread(src, dst, MiB, 0);
                if (got < 0 && errno == EFAULT) efault++;
                else if (got < 0) other++;
                else if (got != (ssize_t)MiB) shorts++;
                calls++;
            }
            if (pread(src, dst, MiB, 0) != (ssize_t)MiB) other++; // the last one is after the move
        });
    }
    void finish() {
        stop = true;
        th.join();
    }
};

// A CPU writer: stores k+1 into word k % words of [p, p+n), so the final
// value of every word is known from the count (nothing lost).
struct Writer {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> count{0};
    std::thread th;
    uint64_t *w;
    size_t words;
    void start(void *p, size_t n) {
        w = (uint64_t *)p;
        words = n / 8;
        th = std::thread([this] {
            uint64_t k = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int b = 0; b < 1024; b++, k++) __atomic_store_n(&w[(k * 4099) % words], k + 1, __ATOMIC_RELAXED);
                count.store(k, std::memory_order_relaxed);
            }
        });
    }
    void finish() {
        stop = true;
        th.join();
    }
    bool intact() const {
        uint64_t c = count.load();
        std::vector<uint64_t> want(words, 0);
        for (uint64_t k = 0; k < c; k++) want[(k * 4099) % words] = k + 1;
        for (size_t i = 0; i < words; i++)
            if (want[i] && w[i] != want[i]) return false;
        return true;
    }
};

int source_file() {
    int fd = open(g_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) die("O_TMPFILE");
    std::vector<char> b(MiB);
    fill(b.data(), MiB, 7);
    if (pwrite(fd, b.data(), MiB, 0) != (ssize_t)MiB) die("pwrite");
    return fd;
}

void copy_out(int dest, const char *from, size_t off, size_t n) {
    while (n) {
        ssize_t w = pwrite(dest, from + off, n, (off_t)off);
        if (w <= 0) die("pwrite dest");
        off += (size_t)w;
        n -= (size_t)w;
    }
}

struct Figures {
    uint64_t calls = 0, efault = 0, shorts = 0, other = 0, lost = 0;
    uint64_t longest_ns = 0, move_ns = 0;
    size_t bytes = 0, recopied = 0;
    void add(const Figures &f) {
        calls += f.calls, efault += f.efault, shorts += f.shorts, other += f.other, lost += f.lost;
        longest_ns = f.longest_ns > longest_ns ? f.longest_ns : longest_ns;
        move_ns += f.move_ns, bytes += f.bytes, recopied += f.recopied;
    }
    void print(const char *what) const {
        printf("%-34s preads %6" PRIu64 "  EFAULT %6" PRIu64 "  short %4" PRIu64 "  other %" PRIu64
               "  lost %" PRIu64 "  pause max %7.3f ms  %6.0f MiB/s  recopied %zu KiB\n",
               what, calls, efault, shorts, other, lost, longest_ns / 1e6,
               move_ns ? (double)bytes / MiB / (move_ns / 1e9) : 0.0, recopied / 1024);
    }
};

// Checks what a move left at p (n bytes): the writer's words in the first
// half and the pread's bytes in the last MiB.
uint64_t lost_bytes(const Writer &w, const char *p, size_t n) {
    std::vector<char> b(MiB);
    fill(b.data(), MiB, 7);
    uint64_t lost = w.intact() ? 0 : 1;
    if (memcmp(p + n - MiB, b.data(), MiB) != 0) lost++;
    return lost;
}

// Scan-and-copy passes while writers run: copies everything, then what was
// written meanwhile, until little is left. Returns bytes re-copied.
size_t precopy(int uffd, char *p, size_t n, int dest) {
    uffd_protect(uffd, p, n, true);
    copy_out(dest, p, 0, n);
    size_t recopied = 0;
    for (int pass = 0; pass < 4; pass++) {
        auto dirty = scan(p, n, kWpMatching | kCheckWpAsync, kIsWritten, 0);
        for (auto &r : dirty) copy_out(dest, p, r.start - (uintptr_t)p, r.end - r.start);
        recopied += pages_of(dirty) * kPage;
        if (pages_of(dirty) <= 16) break;
    }
    return recopied;
}

// Reads (and throws away) the userfaultfd's messages while the last step
// runs: a REMAP event makes mremap wait until someone has read it.
struct Drain {
    std::atomic<bool> stop{false};
    std::thread th;
    void start(int uffd) {
        th = std::thread([this, uffd] {
            uffd_msg m[16];
            while (!stop.load()) {
                pollfd pfd{uffd, POLLIN, 0};
                poll(&pfd, 1, 1);
                while (read(uffd, m, sizeof m) > 0) {
                }
            }
        });
    }
    void finish() {
        stop = true;
        th.join();
    }
};

// wp: is every write found (CPU and kernel), and does no pread fail?
Figures probe_wp(Kind k, size_t n) {
    Figures f;
    int fd;
    char *p = (char *)map_kind(k, n, &fd);
    fill(p, n, 1);
    int uffd = uffd_open(UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED);
    if (int rc = uffd_register(uffd, p, n, UFFDIO_REGISTER_MODE_WP)) {
        errno = -rc;
        die("UFFDIO_REGISTER (WP)");
    }
    // Exactness first, without threads: pages 3 and 10 by CPU, 20-21 by pread.
    uffd_protect(uffd, p, n, true);
    p[3 * kPage] = 1;
    p[10 * kPage + 5] = 1;
    int src = source_file();
    if (pread(src, p + 20 * kPage, 2 * kPage, 0) != (ssize_t)(2 * kPage)) die("pread");
    auto w = scan(p, n, kWpMatching | kCheckWpAsync, kIsWritten, 0);
    std::string got;
    for (auto &r : w) got += std::to_string((r.start - (uintptr_t)p) / kPage) + "-" + std::to_string((r.end - (uintptr_t)p) / kPage - 1) + " ";
    auto again = scan(p, n, kWpMatching | kCheckWpAsync, kIsWritten, 0);
    printf("wp %-5s: written pages found: %s(want 3-3 10-10 20-21); a second scan finds %zu\n", kind_name(k),
           got.c_str(), pages_of(again));
    // Then under a pread loop and a CPU writer: passes until the copy equals the region.
    int dest = new_file(Kind::memfd, n);
    Io io;
    io.start(src, p + n - MiB);
    Writer wr;
    wr.start(p, n / 2);
    while (io.calls.load() < 50) std::this_thread::yield();
    uint64_t t0 = now_ns();
    f.recopied = precopy(uffd, p, n, dest);
    f.move_ns = now_ns() - t0;
    f.bytes = n;
    wr.finish();
    io.finish();
    // Stopped: one last pass, then the copy must equal the region exactly.
    auto last = scan(p, n, kWpMatching | kCheckWpAsync, kIsWritten, 0);
    for (auto &r : last) copy_out(dest, p, r.start - (uintptr_t)p, r.end - r.start);
    char *copy = (char *)mmap(nullptr, n, PROT_READ, MAP_SHARED, dest, 0);
    f.lost = memcmp(copy, p, n) != 0;
    f.lost += lost_bytes(wr, p, n);
    f.calls = io.calls, f.efault = io.efault, f.shorts = io.shorts, f.other = io.other;
    munmap(copy, n);
    munmap(p, n);
    close(uffd), close(dest), close(src);
    if (fd >= 0) close(fd);
    return f;
}

// block: the whole move of an anon or memfd region to a file, last step included.
Figures probe_block(Kind k, size_t n, bool zap) {
    Figures f;
    int fd;
    char *p = (char *)map_kind(k, n, &fd);
    fill(p, n, 1);
    uint64_t features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED;
    uint64_t modes = UFFDIO_REGISTER_MODE_WP | UFFDIO_REGISTER_MODE_MISSING;
    if (k == Kind::memfd) {
        features |= UFFD_FEATURE_MINOR_SHMEM | UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
        modes |= UFFDIO_REGISTER_MODE_MINOR;
    }
    if (!zap) features |= UFFD_FEATURE_EVENT_REMAP;
    int uffd = uffd_open(features);
    if (int rc = uffd_register(uffd, p, n, modes)) {
        errno = -rc;
        die("UFFDIO_REGISTER (WP|MISSING[|MINOR])");
    }
    int src = source_file();
    int dest = new_file(Kind::file, n);
    Io io;
    io.start(src, p + n - MiB);
    Writer wr;
    wr.start(p, n / 2);
    while (io.calls.load() < 50) std::this_thread::yield();
    uint64_t t0 = now_ns();
    f.recopied = precopy(uffd, p, n, dest);
    // The last step: from here every access to [p, p+n) waits.
    uint64_t b0 = now_ns();
    std::vector<page_region> late;
    void *moved = nullptr;
    Drain drain;
    if (zap) {
        // memfd: drop the page-table entries; a write since the last scan
        // left its entry without the write-protect bit, so it is now none,
        // while the others became uffd-wp markers.
        if (madvise(p, n, MADV_DONTNEED) != 0) die("MADV_DONTNEED");
        late = scan(p, n, 0, kIsPresent | kIsSwapped, kIsPresent | kIsSwapped);
        // Read through the file, not the range (that would wait on itself).
        std::vector<char> b(kPage * 16);
        for (auto &r : late)
            for (uintptr_t a = r.start; a < r.end; a += kPage) {
                if (pread(fd, b.data(), kPage, (off_t)(a - (uintptr_t)p)) != (ssize_t)kPage) die("pread old");
                if (pwrite(dest, b.data(), kPage, (off_t)(a - (uintptr_t)p)) != (ssize_t)kPage) die("pwrite late");
            }
    } else {
        drain.start(uffd);
        void *scratch = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        moved = mremap(p, n, n, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, scratch);
        if (moved == MAP_FAILED) die("mremap DONTUNMAP");
        drain.finish();
        late = scan(moved, n, 0, kIsWritten, 0);
        for (auto &r : late) copy_out(dest, (char *)moved, r.start - (uintptr_t)moved, r.end - r.start);
        // (late holds addresses of the moved copy; offsets are what count)
    }
    if (mmap(p, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, dest, 0) == MAP_FAILED) die("mmap new");
    uffd_wake(uffd, p, n);
    uint64_t b1 = now_ns();
    f.longest_ns = b1 - b0;
    f.move_ns = b1 - t0;
    f.bytes = n;
    f.recopied += pages_of(late) * kPage;
    if (moved) munmap(moved, n);
    wr.finish();
    io.finish();
    f.lost = lost_bytes(wr, p, n);
    f.calls = io.calls, f.efault = io.efault, f.shorts = io.shorts, f.other = io.other;
    munmap(p, n);
    close(uffd), close(dest), close(src);
    if (fd >= 0) close(fd);
    return f;
}

// pull: a file region into a memfd, the memfd moved over it first.
Figures probe_pull(size_t n) {
    Figures f;
    int old_fd;
    char *p = (char *)map_kind(Kind::file, n, &old_fd);
    fill(p, n, 1);
    int dest = new_file(Kind::memfd, n);
    void *staged = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, dest, 0);
    int uffd = uffd_open(UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_MINOR_SHMEM | UFFD_FEATURE_MISSING_SHMEM);
    if (int rc = uffd_register(uffd, staged, n, UFFDIO_REGISTER_MODE_MINOR | UFFDIO_REGISTER_MODE_MISSING)) {
        errno = -rc;
        die("UFFDIO_REGISTER (MINOR|MISSING) on the memfd");
    }
    int src = source_file();
    Io io;
    io.start(src, p + n - MiB);
    Writer wr;
    wr.start(p, n / 2);
    while (io.calls.load() < 50) std::this_thread::yield();
    uint64_t t0 = now_ns();
    Drain drain;
    drain.start(uffd);
    if (mremap(staged, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, p) != p) die("mremap memfd over the file");
    uint64_t longest = 0, last = now_ns();
    // The file is mapped nowhere now: copy it page batch by page batch, and map each batch.
    constexpr size_t kBatch = 64 * 1024;
    std::vector<char> b(kBatch);
    for (size_t off = 0; off < n; off += kBatch) {
        if (pread(old_fd, b.data(), kBatch, (off_t)off) != (ssize_t)kBatch) die("pread old file");
        if (pwrite(dest, b.data(), kBatch, (off_t)off) != (ssize_t)kBatch) die("pwrite memfd");
        uffdio_continue c{};
        c.range.start = (uint64_t)p + off;
        c.range.len = kBatch;
        if (ioctl(uffd, UFFDIO_CONTINUE, &c) != 0 && errno != EEXIST) die("UFFDIO_CONTINUE");
        uint64_t t = now_ns();
        longest = t - last > longest ? t - last : longest;
        last = t;
    }
    uint64_t t1 = now_ns();
    drain.finish();
    // A writer that touched an unmapped page waited at most until its batch
    // was mapped: the whole sweep bounds it; the batch gap is what a page
    // that is first in line waits.
    f.longest_ns = longest;
    f.move_ns = t1 - t0;
    f.bytes = n;
    uffdio_range ur{(uint64_t)p, n};
    ioctl(uffd, UFFDIO_UNREGISTER, &ur);
    wr.finish();
    io.finish();
    f.lost = lost_bytes(wr, p, n);
    f.calls = io.calls, f.efault = io.efault, f.shorts = io.shorts, f.other = io.other;
    munmap(p, n);
    close(uffd), close(dest), close(src), close(old_fd);
    return f;
}

// legacy: read-only chunk while copying (today's rehome), 16 MiB chunks.
Figures probe_legacy(Kind k, size_t n) {
    Figures f;
    int fd;
    char *p = (char *)map_kind(k, n, &fd);
    fill(p, n, 1);
    int src = source_file();
    int dest = new_file(Kind::file, n);
    Io io;
    io.start(src, p + n - MiB);
    while (io.calls.load() < 50) std::this_thread::yield();
    uint64_t t0 = now_ns();
    const size_t chunk = 16 * MiB;
    for (size_t off = 0; off < n; off += chunk) {
        copy_out(dest, p, off, chunk);
        uint64_t c0 = now_ns();
        mprotect(p + off, chunk, PROT_READ);
        copy_out(dest, p, off, chunk);
        if (mmap(p + off, chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, dest, (off_t)off) == MAP_FAILED)
            die("mmap");
        uint64_t c = now_ns() - c0;
        f.longest_ns = c > f.longest_ns ? c : f.longest_ns;
    }
    f.move_ns = now_ns() - t0;
    f.bytes = n;
    io.finish();
    Writer none;
    none.words = 0;
    f.lost = lost_bytes(none, p, n);
    f.calls = io.calls, f.efault = io.efault, f.shorts = io.shorts, f.other = io.other;
    munmap(p, n);
    close(dest), close(src);
    if (fd >= 0) close(fd);
    return f;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: uffd_probe DIR [rounds] [user]\n");
        return 2;
    }
    g_dir = argv[1];
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    g_user_only = argc > 3 && !strcmp(argv[3], "user");
    g_pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (g_pagemap < 0) die("/proc/self/pagemap");
    uint64_t have = supported_features();
    printf("kernel features: WP_ASYNC %d WP_UNPOPULATED %d WP_HUGETLBFS_SHMEM %d MINOR_SHMEM %d MISSING_SHMEM %d "
           "EVENT_REMAP %d; userfaultfd %s\n",
           !!(have & UFFD_FEATURE_WP_ASYNC), !!(have & UFFD_FEATURE_WP_UNPOPULATED),
           !!(have & UFFD_FEATURE_WP_HUGETLBFS_SHMEM), !!(have & UFFD_FEATURE_MINOR_SHMEM),
           !!(have & UFFD_FEATURE_MISSING_SHMEM), !!(have & UFFD_FEATURE_EVENT_REMAP),
           g_user_only ? "user-mode only" : "kernel faults too");
    {
        // What a file mapping accepts besides asynchronous write protection.
        int fd;
        char *p = (char *)map_kind(Kind::file, 4 * MiB, &fd);
        int u = uffd_open(UFFD_FEATURE_WP_ASYNC);
        int wp_minor = uffd_register(u, p, 4 * MiB, UFFDIO_REGISTER_MODE_WP | UFFDIO_REGISTER_MODE_MINOR);
        close(u);
        u = uffd_open(0);
        int sync_wp = uffd_register(u, p, 4 * MiB, UFFDIO_REGISTER_MODE_WP);
        close(u);
        printf("file mapping: WP|MINOR register %s; synchronous WP register %s\n", strerror(-wp_minor),
               strerror(-sync_wp));
        munmap(p, 4 * MiB);
        close(fd);
    }
    const size_t n = 64 * MiB;
    for (Kind k : {Kind::anon, Kind::memfd, Kind::file}) {
        Figures all;
        for (int r = 0; r < rounds; r++) all.add(probe_wp(k, n));
        all.print((std::string("wp+scan passes, ") + kind_name(k)).c_str());
    }
    struct {
        const char *name;
        Kind k;
        bool zap;
    } blocks[] = {{"move anon->file (dontunmap)", Kind::anon, false},
                  {"move memfd->file (dontunmap)", Kind::memfd, false},
                  {"move memfd->file (zap+minor)", Kind::memfd, true}};
    for (auto &b : blocks) {
        Figures all;
        for (int r = 0; r < rounds; r++) all.add(probe_block(b.k, n, b.zap));
        all.print(b.name);
    }
    {
        Figures all;
        for (int r = 0; r < rounds; r++) all.add(probe_pull(n));
        all.print("move file->memfd (pull)");
    }
    for (Kind k : {Kind::anon, Kind::memfd}) {
        Figures all;
        for (int r = 0; r < rounds; r++) all.add(probe_legacy(k, n));
        all.print((std::string("legacy read-only chunks, ") + kind_name(k)).c_str());
    }
    return 0;
}
