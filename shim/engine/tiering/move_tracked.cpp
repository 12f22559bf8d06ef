// move_tracked.cpp — see move_tracked.h.
#include "tiering/move_tracked.h"

#include "clock.h"
#include "fd_policy.h"
#include "log.h"
#include "os/kernel_ordered.h"
#include "os/extents.h"
#include "os/zero_range.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

namespace spillway {

namespace {

// Passes of "copy what was written meanwhile" before the last step; fewer
// when a pass finds little (the last step copies what the last pass left).
constexpr int kPasses = 4;
constexpr size_t kSettled = size_t(256) << 10;
// A pull copies and releases this much at a time: an access to a page not
// yet released waits for the batch being copied, then its own.
constexpr size_t kPullBatch = size_t(256) << 10;

int write_all(int fd, const char *src, size_t n, uint64_t off) {
    KernelOrdered quiet; // src is a region being written meanwhile (kernel_ordered.h)
    while (n) {
        ssize_t w = pwrite(fd, src, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? -errno : -EIO;
        src += w;
        off += (uint64_t)w;
        n -= (size_t)w;
    }
    return 0;
}

// Copies [from_off, from_off+n) of one file into another at to_off, through
// a buffer (the two may be on different filesystems).
int copy_file(int from, uint64_t from_off, int to, uint64_t to_off, size_t n) {
    constexpr size_t kBuf = size_t(1) << 20;
    void *b = mmap(nullptr, kBuf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) return -errno;
    int rc = 0;
    for (size_t done = 0; done < n && rc == 0;) {
        size_t k = n - done < kBuf ? n - done : kBuf;
        ssize_t got = pread(from, b, k, (off_t)(from_off + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            rc = got < 0 ? -errno : -EIO;
            break;
        }
        rc = write_all(to, (const char *)b, (size_t)got, to_off + done);
        done += (size_t)got;
    }
    munmap(b, kBuf);
    return rc;
}

[[noreturn]] void lost(uintptr_t at, const char *what, int err) {
    SPW_LOG(error, "moving the region bytes at %p failed and putting them back failed too (%s: %s); they "
                   "would be lost, aborting rather than run on with wrong data: set tiering.enabled = false to "
                   "avoid tiering's moves, and report it with this log",
            (void *)at, what, strerror(-err));
    abort();
}

} // namespace

// The move's second thread. An mremap of a registered range sends a remap
// event and does not return until someone has read it, so the mover cannot
// make that call itself and go on. The helper makes it (remap), while the
// mover, already running, spins reading the context until the event comes:
// the moment the pages have moved, the mover is on them.
// The other way round (the mover calling mremap, the helper reading) a
// waiting access would also wait for two wake-ups, milliseconds each on a
// loaded machine. Between jobs the helper reads the context's messages:
// page-fault addresses are kept for a pull (which serves them first), the
// rest only acknowledged.
struct TrackedMover::Helper {
    int uffd = -1, kick_fd = -1;
    pthread_t tid{};
    bool running = false;
    std::atomic<bool> stopping{false};
    std::atomic<bool> gone{false}; // main returned: no job posted from now on runs
    // The job: register [from, from+len) with modes (unless 0), then
    // mremap(from, len, len, flags, to); result 0 or -errno.
    std::atomic<bool> posted{false}, done{true};
    uintptr_t from = 0, to = 0;
    size_t len = 0;
    uint64_t modes = 0;
    int flags = 0, result = 0;
    std::atomic<uint64_t> started_ns{0};
    std::mutex lock;
    std::vector<uintptr_t> faults;

    void keep(const std::vector<uintptr_t> &got) {
        if (got.empty()) return;
        std::lock_guard<std::mutex> g(lock);
        faults.insert(faults.end(), got.begin(), got.end());
    }

    static void *main(void *arg) {
        auto *self = (Helper *)arg;
        std::vector<uintptr_t> got;
        while (!self->stopping.load()) {
            if (self->posted.exchange(false)) {
                self->started_ns.store(monotonic_ns());
                self->result = self->modes ? uffd::register_range(self->uffd, self->from, self->len, self->modes) : 0;
                if (self->result == 0) {
                    void *m = mremap((void *)self->from, self->len, self->len, self->flags, (void *)self->to);
                    self->result = m == MAP_FAILED ? -errno : 0;
                }
                self->done.store(true);
                continue;
            }
            pollfd fds[2] = {{self->uffd, POLLIN, 0}, {self->kick_fd, POLLIN, 0}};
            if (poll(fds, 2, -1) < 0 && errno != EINTR) break; // remap() then fails instead of waiting
            if (fds[1].revents) {
                uint64_t v;
                ssize_t ignored = read(self->kick_fd, &v, sizeof v);
                (void)ignored;
            }
            got.clear();
            uffd::read_messages(self->uffd, &got);
            self->keep(got);
        }
        self->gone.store(true);
        return nullptr;
    }

    void kick() {
        uint64_t one = 1;
        ssize_t ignored = write(kick_fd, &one, sizeof one);
        (void)ignored;
    }

    bool start(int fd) {
        uffd = fd;
        kick_fd = move_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (kick_fd < 0) return false;
        // No signal handler of the program may run here (as background_thread.h).
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 << 10);
        running = pthread_create(&tid, &attr, main, this) == 0;
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        if (running) pthread_setname_np(tid, "spillway-move");
        return running;
    }

    void stop() {
        if (running) {
            stopping.store(true);
            kick();
            pthread_join(tid, nullptr);
            running = false;
        }
        if (kick_fd >= 0) close(kick_fd);
        kick_fd = -1;
    }

    // On the helper: register [src, src+n) with reg_modes (unless 0), then
    // mremap(src, n, n, how, dst). Returns once the range has moved (0: its
    // remap event was read here) or a call failed (-errno). *began_ns: when
    // the helper began (accesses may wait from then).
    int remap(uintptr_t src, size_t n, int how, uintptr_t dst, uint64_t reg_modes, uint64_t *began_ns) {
        from = src, len = n, flags = how, to = dst, modes = reg_modes, result = 0;
        done.store(false);
        started_ns.store(0);
        posted.store(true);
        kick();
        std::vector<uintptr_t> got;
        unsigned remaps = 0;
        int rc = 0;
        for (;;) {
            got.clear();
            int read = uffd::read_messages(uffd, &got, &remaps);
            keep(got);
            if (remaps) break;
            if (done.load()) { // failed, or moved a range no event is sent for
                rc = result;
                break;
            }
            if (gone.load() && posted.exchange(false)) { // never taken: nothing moved
                done.store(true);
                rc = -EIO;
                break;
            }
            // Until the helper runs, nothing waits: leave it the processor.
            // Once it is in mremap, waiting accesses count on this thread
            // being on one when the event comes.
            if (read <= 0 && !started_ns.load()) sched_yield();
        }
        if (began_ns) *began_ns = started_ns.load();
        return rc;
    }

    // The job's mremap has returned (its event read): its result.
    int finish() {
        while (!done.load()) sched_yield();
        return result;
    }

    void take(std::vector<uintptr_t> &out) {
        std::lock_guard<std::mutex> g(lock);
        out.swap(faults);
        faults.clear();
    }
};

uffd::Level TrackedMover::begin(uffd::Level most) {
    end();
    const uffd::Level can = uffd::level();
    if (can == uffd::Level::none || most == uffd::Level::none) return level_ = uffd::Level::none;
    uffd::Level want = can == uffd::Level::full && most == uffd::Level::full ? can : uffd::Level::user_only;
    const bool full = want == uffd::Level::full;
    uint64_t features = uffd::kFeatureWpAsync | uffd::kFeatureWpUnpopulated | uffd::kFeatureWpShmem;
    if (full) features |= uffd::kFeatureEventRemap | uffd::kFeatureMinorShmem | uffd::kFeatureMissingShmem;
    uffd_ = uffd::open_context(features, can != uffd::Level::full);
    pagemap_ = uffd::open_pagemap();
    if (uffd_ >= 0 && pagemap_ >= 0 && full) {
        helper_ = new Helper();
        if (!helper_->start(uffd_)) want = uffd::Level::user_only; // no remap events without the helper
    }
    if (uffd_ < 0 || pagemap_ < 0) {
        SPW_LOG(debug, "move: no userfaultfd context (%s); moving the read-only way",
                strerror(uffd_ < 0 ? -uffd_ : -pagemap_));
        end();
        return uffd::Level::none;
    }
    return level_ = want;
}

void TrackedMover::end() {
    if (helper_) {
        helper_->stop();
        delete helper_;
        helper_ = nullptr;
    }
    // Closing the context unregisters whatever is left and wakes its waiters.
    if (uffd_ >= 0) close(uffd_);
    if (pagemap_ >= 0) close(pagemap_);
    uffd_ = pagemap_ = -1;
    level_ = uffd::Level::none;
    entries_only_ = false;
}

int TrackedMover::copy_ranges(uintptr_t base, int dest_fd, uint64_t dest_off, size_t *bytes) {
    size_t total = 0;
    for (const uffd::Range &r : written_) {
        if (int rc = write_all(dest_fd, (const char *)r.start, r.end - r.start, dest_off + (r.start - base)))
            return rc;
        total += r.end - r.start;
    }
    if (bytes) *bytes = total;
    return 0;
}

void TrackedMover::forget(uintptr_t at, size_t len) {
    if (uffd_ >= 0) uffd::unregister_range(uffd_, at, len); // clears the write protection, wakes waiters
}

int TrackedMover::start_tracking(uintptr_t at, size_t len) {
    if (level_ == uffd::Level::none) return -ENOTSUP;
    if (int rc = uffd::register_range(uffd_, at, len, uffd::kModeWp)) return rc;
    int rc = uffd::write_protect(uffd_, at, len);
    if (rc != 0) forget(at, len);
    return rc;
}

int TrackedMover::start_tracking_listing(uintptr_t at, size_t len, std::vector<uffd::Range> &copies) {
    if (level_ == uffd::Level::none) return -ENOTSUP;
    if (int rc = uffd::register_range(uffd_, at, len, uffd::kModeWp)) return rc;
    entries_only_ = true;
    int rc = uffd::protect_listing_copies(pagemap_, at, len, copies);
    if (rc != 0) forget(at, len);
    return rc;
}

int TrackedMover::track_and_copy(uintptr_t at, size_t len, int dest_fd, uint64_t dest_off, const FirstCopy &first,
                                 TrackedPause *pause, bool tracking_started) {
    if (level_ == uffd::Level::none) return -ENOTSUP;
    int rc = 0;
    if (!tracking_started) {
        if (int reg = uffd::register_range(uffd_, at, len, uffd::kModeWp)) return reg;
        rc = uffd::write_protect(uffd_, at, len);
    }
    // From here every store into the chunk marks its page written; none waits.
    if (rc == 0) rc = first ? first() : write_all(dest_fd, (const char *)at, len, dest_off);
    for (int pass = 0; pass < kPasses && rc == 0; pass++) {
        written_.clear();
        size_t bytes = 0;
        rc = uffd::scan_written(pagemap_, at, len, true, written_, entries_only_);
        if (rc == 0) rc = copy_ranges(at, dest_fd, dest_off, &bytes);
        if (pause) pause->recopied += bytes;
        if (bytes <= kSettled) break;
    }
    if (rc != 0) forget(at, len);
    return rc;
}

int TrackedMover::copy_written(uintptr_t at, size_t len, int dest_fd, uint64_t dest_off, TrackedPause *pause) {
    written_.clear();
    size_t bytes = 0;
    int rc = uffd::scan_written(pagemap_, at, len, false, written_, entries_only_);
    if (rc == 0) rc = copy_ranges(at, dest_fd, dest_off, &bytes);
    if (pause) pause->recopied += bytes;
    return rc;
}

int TrackedMover::block(uintptr_t at, size_t len, bool shmem, int dest_fd, uint64_t dest_off, const FirstCopy &first,
                        TrackedPause *pause, bool tracking_started) {
    if (level_ != uffd::Level::full) return -ENOTSUP;
    if (int rc = track_and_copy(at, len, dest_fd, dest_off, first, pause, tracking_started)) return rc;
    return last_step(at, len, shmem, dest_fd, dest_off, pause);
}

// The only step an access to the chunk waits through (move_tracked.h says
// why nothing is lost).
int TrackedMover::last_step(uintptr_t at, size_t len, bool shmem, int dest_fd, uint64_t dest_off,
                            TrackedPause *pause) {
    if (before_swap) before_swap(at, len);
    void *spare = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int rc = spare == MAP_FAILED ? -errno : 0;
    uint64_t t0 = 0;
    // On the helper: the range is registered for missing faults (anonymous,
    // or a hole of the memfd) and minor ones (a memfd's page), and an access
    // that finds no page-table entry waits from there; then the old pages,
    // with their write-protect bits, go to spare, and the range keeps its
    // (now empty, registered) mapping.
    if (rc == 0)
        rc = helper_->remap(at, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, (uintptr_t)spare,
                            uffd::kModeWp | uffd::kModeMissing | (shmem ? uffd::kModeMinor : 0), &t0);
    if (rc != 0) {
        if (spare != MAP_FAILED) munmap(spare, len);
        helper_->finish();
        forget(at, len);
        return rc;
    }
    const uintptr_t old = (uintptr_t)spare;
    written_.clear();
    size_t bytes = 0;
    rc = uffd::scan_written(pagemap_, old, len, false, written_, entries_only_);
    // spare took the range's registration with the pages (missing and minor
    // faults), so a read of a page with no entry there would wait in a
    // userfaultfd fault that only this thread could answer: a hang. Such
    // pages exist: a written page whose entry was zapped (reclaim to swap,
    // MADV_PAGEOUT, MADV_DONTNEED; the kernel leaves no marker on a page that
    // is not write-protected) is reported written (uffd.h scan_written), and
    // reclaim can zap a written page between the scan and its copy. The scan
    // has said what to copy and nothing else touches spare: it leaves the
    // context, and its reads fault like any (75 us for 16 MiB here).
    if (rc == 0) rc = uffd::unregister_range(uffd_, old, len);
    if (rc == 0) rc = copy_ranges(old, dest_fd, dest_off, &bytes);
    if (rc == 0 &&
        map_region_in_place((void *)at, len, dest_fd, (off_t)dest_off) == MAP_FAILED)
        rc = -errno;
    if (rc != 0) {
        // The old pages go back where they were (the empty mapping is
        // replaced), and the waiters retry against them.
        helper_->finish();
        if (mremap(spare, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)at) == MAP_FAILED)
            lost(at, "mremap back", -errno);
        uffd::wake(uffd_, at, len);
        forget(at, len);
        return rc;
    }
    uffd::wake(uffd_, at, len); // they retry against dest
    uint64_t waited = monotonic_ns() - t0;
    helper_->finish();
    munmap(spare, len);
    std::vector<uintptr_t> seen;
    helper_->take(seen); // the waiters' messages: answered by the wake
    if (pause) {
        pause->recopied += bytes;
        pause->total_ns += waited;
        if (waited > pause->longest_ns) pause->longest_ns = waited;
    }
    return 0;
}

int TrackedMover::stage_over(void *staged, uintptr_t at, size_t len, uint64_t modes, uint64_t *t0) {
    int rc = uffd::register_range(uffd_, (uintptr_t)staged, len, modes);
    std::vector<uintptr_t> faults;
    helper_->take(faults); // older ones are answered already
    if (before_swap) before_swap(at, len);
    *t0 = monotonic_ns();
    if (rc == 0) rc = helper_->remap((uintptr_t)staged, len, MREMAP_MAYMOVE | MREMAP_FIXED, at, 0, t0);
    if (rc != 0) munmap(staged, len);
    return rc;
}

int TrackedMover::pull(uintptr_t at, size_t len, int old_fd, uint64_t old_off, int dest_fd, uint64_t dest_off,
                       const FileCopy &copy, TrackedPause *pause) {
    if (level_ != uffd::Level::full) return -ENOTSUP;
    void *staged = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, dest_fd, (off_t)dest_off);
    if (staged == MAP_FAILED) return -errno;
    uint64_t t0 = 0;
    // One step: the old file's chunk leaves the range, dest (no page mapped) takes its place.
    int rc = stage_over(staged, at, len, uffd::kModeMinor | uffd::kModeMissing, &t0);
    if (rc != 0) return rc;
    std::vector<uintptr_t> faults;
    const size_t batches = (len + kPullBatch - 1) / kPullBatch;
    std::vector<bool> done(batches, false); // in dest, and its pages fault normally
    // A batch is copied, then leaves the context: the accesses waiting in it
    // are woken and map dest's pages like any others. (Not UFFDIO_CONTINUE:
    // the kernel refuses it until the helper's mremap has returned, and
    // that return waits for the helper to be scheduled again.)
    auto serve = [&](size_t b) -> int {
        if (done[b]) return 0;
        size_t rel = b * kPullBatch, n = len - rel < kPullBatch ? len - rel : kPullBatch;
        if (int e = copy(dest_fd, dest_off, rel, n)) return e;
        done[b] = true;
        return uffd::unregister_range(uffd_, at + rel, n);
    };
    uint64_t last = monotonic_ns(), longest = 0;
    for (size_t next = 0; next < batches && rc == 0; next++) {
        helper_->take(faults);
        for (uintptr_t f : faults)
            if (rc == 0 && f >= at && f < at + len) rc = serve((f - at) / kPullBatch);
        if (rc == 0) rc = serve(next);
        uint64_t t = monotonic_ns();
        if (t - last > longest) longest = t - last;
        last = t;
    }
    if (rc == 0) rc = uffd::unregister_range(uffd_, at, len); // nothing should be left
    helper_->finish();
    if (rc != 0) {
        put_back_pulled(at, len, old_fd, old_off, dest_fd, dest_off, done, kPullBatch);
        return rc;
    }
    if (pause) {
        pause->total_ns += monotonic_ns() - t0;
        if (longest > pause->longest_ns) pause->longest_ns = longest;
    }
    return 0;
}

// A pull that failed half way: accesses wait again (the whole range in the
// context, its entries zapped: a minor fault each), the batches already in
// dest (written since, maybe) go back into the old file, and the old file
// is mapped again.
int TrackedMover::zero_units(uintptr_t at, size_t len, size_t unit, int old_fd, uint64_t old_off,
                             unsigned char *scratch, size_t *zeroed, TrackedPause *pause) {
    *zeroed = 0;
    if (level_ != uffd::Level::full) return -ENOTSUP;
    void *staged = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (staged == MAP_FAILED) return -errno;
    uint64_t t0 = 0;
    // One step: old_fd's chunk leaves the range, the empty mapping (no page
    // will ever be given it) takes its place. From then on no store can
    // reach the chunk's pages: the mremap unmapped them and flushed every
    // CPU's TLB before its event was sent.
    int rc = stage_over(staged, at, len, uffd::kModeMissing, &t0);
    if (rc != 0) return rc;
    std::vector<uintptr_t> faults;
    std::vector<Extent> on_disk;
    for (size_t rel = 0; rel < len; rel += unit) {
        size_t n = len - rel < unit ? len - rel : unit;
        int e = cached_zero(old_fd, old_off + rel, n, scratch);
        if (e == 0) continue;
        // Only over extents with no data on disk (zero_range.h): if the
        // conversion failed, the unit would still read as zeros.
        if (e == 1 && (!written_extents(old_fd, old_off + rel, n, on_disk) || !on_disk.empty())) continue;
        if (e == 1) e = zero_range(old_fd, old_off + rel, n);
        if (e != 0) {
            rc = e; // -EOPNOTSUPP and the like: the same for every unit of the file
            break;
        }
        *zeroed += n;
    }
    helper_->finish();
    // The file again, in place of the empty mapping; then the waiters retry.
    // A mapping of a range just unmapped fails only when the kernel is out
    // of memory for the mapping itself: the waiters would wait forever.
    if (map_region_in_place((void *)at, len, old_fd, (off_t)old_off) == MAP_FAILED)
        lost(at, "mapping the file again after zeroing", -errno);
    uffd::wake(uffd_, at, len);
    uint64_t waited = monotonic_ns() - t0;
    helper_->take(faults); // the waiters' messages: answered by the wake
    if (pause) {
        pause->total_ns += waited;
        if (waited > pause->longest_ns) pause->longest_ns = waited;
    }
    return rc;
}

void TrackedMover::put_back_pulled(uintptr_t at, size_t len, int old_fd, uint64_t old_off, int dest_fd,
                                   uint64_t dest_off, const std::vector<bool> &done, size_t batch) {
    if (int rc = uffd::register_range(uffd_, at, len, uffd::kModeMinor | uffd::kModeMissing))
        lost(at, "waiting again", rc);
    madvise((void *)at, len, MADV_DONTNEED);
    for (size_t b = 0; b < done.size(); b++) {
        if (!done[b]) continue;
        size_t rel = b * batch, n = len - rel < batch ? len - rel : batch;
        if (int rc = copy_file(dest_fd, dest_off + rel, old_fd, old_off + rel, n)) lost(at, "copying back", rc);
    }
    if (map_region_in_place((void *)at, len, old_fd, (off_t)old_off) == MAP_FAILED)
        lost(at, "mapping the old file again", -errno);
    uffd::wake(uffd_, at, len);
}

int TrackedMover::pull_then_block(uintptr_t at, size_t len, int old_fd, uint64_t old_off, int dest_fd,
                                  uint64_t dest_off, const FileCopy &copy, TrackedPause *pause) {
    if (level_ != uffd::Level::full) return -ENOTSUP;
    int tmp = move_high(memfd_create("spillway-move", MFD_CLOEXEC));
    if (tmp < 0) return -errno;
    // tmp holds the chunk at dest_off, as dest will (copy writes at the chunk's offset).
    int rc = ftruncate(tmp, (off_t)(dest_off + len)) == 0 ? 0 : -errno;
    if (rc == 0) rc = pull(at, len, old_fd, old_off, tmp, dest_off, copy, pause);
    if (rc == 0) {
        rc = block(at, len, true, dest_fd, dest_off, {}, pause);
        // Refused: the chunk lives in tmp, and goes back into the old file the same way.
        if (rc != 0)
            if (int undo = block(at, len, true, old_fd, old_off, {}, pause)) lost(at, "moving back", undo);
    }
    close(tmp);
    return rc;
}

} // namespace spillway
