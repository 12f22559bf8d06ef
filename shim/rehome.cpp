// rehome.cpp — see rehome.h.
#include "rehome.h"

#include "fork_safety.h"

#include "backing.h"
#include "log.h"
#include "region.h"
#include "stats.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <ctime>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace spillway {

namespace {
std::mutex g_move_lock;
std::atomic<uintptr_t> g_moving_start{0};
std::atomic<uintptr_t> g_moving_end{0};
struct sigaction g_previous;

void on_segv(int sig, siginfo_t *info, void *context) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (addr >= g_moving_start.load() && addr < g_moving_end.load()) {
        // A write into the region being moved: wait, then retry the write.
        while (addr >= g_moving_start.load() && addr < g_moving_end.load()) {
            timespec ts = {0, 100000};
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

int copy_range(int from, off_t from_off, int to, off_t to_off, size_t n) {
    while (n) {
        ssize_t c = copy_file_range(from, &from_off, to, &to_off, n, 0);
        if (c < 0 && errno == EINTR) continue;
        if (c <= 0) return c < 0 ? -errno : -EIO;
        n -= (size_t)c;
    }
    return 0;
}

// Copies r's bytes into dest at offset 0, skipping what is known to be zero
// (the reserved destination already reads as zero there):
//  - disk: the source file, in the kernel (dirty mapped pages included);
//  - memory: only the memfd's data extents (SEEK_DATA/SEEK_HOLE);
//  - anon: only pages present or swapped (pagemap); the rest were never touched.
int copy_out(const Region *r, int dest) {
    uintptr_t src = r->start;
    size_t len = r->map_len;
    if (r->backing == Backing::disk)
        return copy_range(r->file->fd, (off_t)r->file_off, dest, 0, len);
    if (r->backing == Backing::memory) {
        int fd = r->file->fd;
        off_t base = (off_t)r->file_off, end = base + (off_t)len, at = base;
        while (at < end) {
            off_t data = lseek(fd, at, SEEK_DATA);
            if (data < 0 || data >= end) break;
            off_t hole = lseek(fd, data, SEEK_HOLE);
            if (hole < 0 || hole > end) hole = end;
            if (int rc = write_all(dest, (const char *)src + (data - base), (size_t)(hole - data),
                                   data - base))
                return rc;
            at = hole;
        }
        return 0;
    }
    int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = len / page;
    constexpr size_t kBatch = 4096;
    std::vector<uint64_t> entries(kBatch);
    int rc = 0;
    for (size_t first = 0; first < pages && rc == 0; first += kBatch) {
        size_t count = pages - first < kBatch ? pages - first : kBatch;
        bool known = pagemap >= 0 &&
                     pread(pagemap, entries.data(), count * 8, (off_t)((src / page + first) * 8)) ==
                         (ssize_t)(count * 8);
        size_t i = 0;
        while (i < count && rc == 0) {
            auto used = [&](size_t k) { return !known || (entries[k] >> 62) != 0; };
            if (!used(i)) {
                i++;
                continue;
            }
            size_t j = i;
            while (j < count && used(j)) j++;
            size_t off = (first + i) * page;
            rc = write_all(dest, (const char *)src + off, (j - i) * page, (off_t)off);
            i = j;
        }
    }
    if (pagemap >= 0) close(pagemap);
    return rc;
}
} // namespace

int rehome_region(Region *r, SpillFile *dest) {
    std::lock_guard<std::mutex> move_guard(g_move_lock);
    install_handler();
    uintptr_t start = r->start;
    size_t len = r->map_len;
    g_moving_start.store(start);
    g_moving_end.store(start + len);
    int rc = 0;
    if (mprotect((void *)start, len, PROT_READ) != 0) rc = -errno;
    if (rc == 0) rc = copy_out(r, dest->fd);
    if (rc == 0) {
        void *p = mmap((void *)start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, dest->fd, 0);
        if (p == MAP_FAILED) rc = -errno;
    }
    if (rc != 0) mprotect((void *)start, len, PROT_READ | PROT_WRITE); // keep the old home
    // Release waiting writers only once the new mapping is in place.
    g_moving_start.store(0);
    g_moving_end.store(0);
    if (rc != 0) return rc;
    Backing old = r->backing;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        release_backing(r); // the old pool range is punched, a dedicated file closed
        r->file = dest;
        r->file_off = 0;
        r->backing = Backing::disk;
    }
    stats_on_free(old, len);
    stats_on_alloc(Backing::disk, len);
    // The new mapping starts with default advice: apply what the region had
    // (or what a fresh disk region of its size would get).
    int had = r->advice.load(std::memory_order_relaxed);
    int advice = had ? had : initial_advice(len, false);
    r->advice = 0;
    advise_region(r, advice);
    return 0;
}

bool rehome_fork_prepare() { return lock_unless_held_here(g_move_lock.native_handle()); }
void rehome_fork_parent() { g_move_lock.unlock(); }

void rehome_after_fork_child() {
    new (&g_move_lock) std::mutex();
    // A move this thread was making when a signal handler forked: the range
    // is read-only and marked moving, and its mover never runs here. Give
    // the child its region back writable (a write would otherwise wait in
    // on_segv forever).
    uintptr_t start = g_moving_start.load(), end = g_moving_end.load();
    if (start && end > start) mprotect((void *)start, end - start, PROT_READ | PROT_WRITE);
    g_moving_start.store(0);
    g_moving_end.store(0);
}

} // namespace spillway
