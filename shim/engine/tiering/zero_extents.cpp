// zero_extents.cpp — see zero_extents.h.
#include "tiering/zero_extents.h"

#include "cachestat.h"
#include "log.h"
#include "os/uffd.h"
#include "os/zero_range.h"
#include "registry/region.h"
#include "stats/stats.h"
#include "tiering/move_tracked.h"
#include "tiering/rehome.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

namespace {

constexpr uint64_t kPage = 4096;

std::mutex g_lock; // one zeroing pass at a time: they share the scratch buffer and the lists below
unsigned char *g_scratch = nullptr;
std::atomic<bool> g_no_uffd{false};
// Devices whose filesystem answered EOPNOTSUPP.
constexpr unsigned kMaxDevices = 8;
dev_t g_unsupported[kMaxDevices];
unsigned g_n_unsupported = 0;

bool device_unsupported(dev_t d) {
    for (unsigned i = 0; i < g_n_unsupported; i++)
        if (g_unsupported[i] == d) return true;
    return false;
}

// A unit worth checking: a dirty page (written since it was last written
// back: zeros already on disk cost nothing more to leave).
bool dirty(int fd, uint64_t off, size_t len) {
    Cachestat cs{};
    return cachestat(fd, CachestatRange{off, len}, cs) == 0 && cs.nr_dirty > 0;
}

void unsupported(dev_t dev, int err) {
    SPW_LOG(debug, "writeback: the spill directory's filesystem cannot zero a range in place keeping its blocks "
                   "(%s; only ext4 can); its zeros are written back",
            strerror(-err));
    if (g_n_unsupported < kMaxDevices) g_unsupported[g_n_unsupported++] = dev;
}

bool not_on_disk(const Region *live, Backing) { return live->backing != Backing::disk || !live->file; }

// Zeroes one run of candidate units of c, [rel, rel+len) of its range.
// Returns the bytes zeroed; -EOPNOTSUPP and the like are remembered.
uint64_t zero_run(TrackedMover &mover, const ZeroCandidate &c, size_t rel, size_t len, dev_t dev) {
    size_t zeroed = 0;
    int rc = hold_region_for(c.r, c.start, Backing::disk, not_on_disk, [&](Region *held) {
        // The snapshot's fd is a dup of the region's file, and file_off its
        // offset, as long as the region is still the one snapshotted.
        if (held->map_len != c.len || held->file_off != c.file_off) return -ESTALE;
        if (read_in_flight(c.start + rel, len, true)) return -EBUSY;
        int e = mover.zero_units(c.start + rel, len, kZeroUnit, c.fd, c.file_off + rel, g_scratch, &zeroed,
                                 nullptr);
        // The file mapped back has default advice: the run takes the
        // region's again (a fault there would read ahead megabytes).
        if (int advice = held->advice.load(std::memory_order_relaxed))
            madvise((void *)(c.start + rel), len, advice);
        return e;
    });
    if (rc == -EOPNOTSUPP || rc == -EINVAL || rc == -ENOSYS) unsupported(dev, rc);
    return zeroed;
}

} // namespace

uint64_t zero_dirty_units(const ZeroCandidate *regions, unsigned n) {
    if (g_no_uffd.load(std::memory_order_relaxed) || n == 0) return 0;
    std::lock_guard<std::mutex> guard(g_lock);
    if (!g_scratch) {
        void *m = mmap(nullptr, kZeroScratch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return 0;
        g_scratch = (unsigned char *)m;
    }
    TrackedMover mover; // begun at the first run: a context and a helper thread
    bool begun = false;
    uint64_t zeroed = 0;
    for (unsigned i = 0; i < n; i++) {
        const ZeroCandidate &c = regions[i];
        struct stat st;
        if (fstat(c.fd, &st) != 0 || device_unsupported(st.st_dev)) continue;
        if (!zero_range_keeps_reservation(c.fd)) {
            unsupported(st.st_dev, -EOPNOTSUPP);
            continue;
        }
        Cachestat whole{};
        if (cachestat(c.fd, CachestatRange{c.file_off, c.len}, whole) != 0 || whole.nr_dirty == 0) continue;
        size_t run_at = 0, run_len = 0;
        // After a run found all zero, the next dirty units join a run
        // unread: the run checks them anyway, and a buffer being zeroed
        // is zero unit after unit (the first read cost XGBoost's DMatrix
        // phase a third of the zeroing's time).
        bool streak = false;
        for (size_t rel = 0;; rel += kZeroUnit) {
            const bool end = rel >= c.len;
            size_t len = end ? 0 : (c.len - rel < kZeroUnit ? c.len - rel : kZeroUnit);
            bool candidate = false;
            if (!end && dirty(c.fd, c.file_off + rel, len)) {
                int zero = streak ? 1 : cached_zero(c.fd, c.file_off + rel, len, g_scratch);
                if (zero < 0) {
                    unsupported(st.st_dev, zero);
                    break;
                }
                candidate = zero == 1;
            }
            if (candidate && run_len + len <= kZeroMaxRun) {
                if (!run_len) run_at = rel;
                run_len += len;
                continue;
            }
            if (run_len) { // the run ends here: zero it
                if (!begun) {
                    begun = true;
                    if (mover.begin() != uffd::Level::full) {
                        g_no_uffd.store(true, std::memory_order_relaxed);
                        SPW_LOG(debug, "writeback: no userfaultfd for kernel faults here; dirty zeros are written "
                                       "back like any page");
                        return zeroed;
                    }
                }
                uint64_t z = zero_run(mover, c, run_at, run_len, st.st_dev);
                // Counted as it happens, not at the pass's end: a process
                // can exit (and write its stats) while the pass that zeroed
                // is still writing other ranges.
                if (z) stats_on_zeroed(z);
                zeroed += z;
                streak = z == run_len;
                if (device_unsupported(st.st_dev)) break;
            }
            if (end) break;
            run_at = rel;
            run_len = candidate ? len : 0;
        }
    }
    return zeroed;
}

void zero_extents_after_fork_child() {
    // The pass the forking thread's pacer was in holds the lock for nobody here.
    new (&g_lock) std::mutex();
}

void zero_extents_forget() {
    std::lock_guard<std::mutex> guard(g_lock);
    g_no_uffd.store(false);
    g_n_unsupported = 0;
}

} // namespace spillway
