// move_tracked.h — moving one chunk of a live region to its new file while
// every thread, and the kernel on its behalf (read(2), recv(2) into the
// buffer), keeps using it: a system call into the chunk completes in full,
// against the old home or the new one, never with EFAULT or a short count,
// and no write is lost. rehome.cpp moves a region chunk by chunk and asks
// this file first; where it cannot, the chunk moves the read-only way.
//
// Three ways, by the old home (uffd.h says what the kernel provides):
//
//  block (old home in memory: anonymous, or a memfd). The chunk is put
//    under asynchronous write protection (no access ever waits for it) and
//    copied; PAGEMAP_SCAN then lists the pages written meanwhile, CPU and
//    kernel stores alike, and write-protects them again in the same step;
//    they are copied again, for a few passes. The last step is the only
//    time an access waits: the range's page-table entries are moved away
//    whole (mremap MREMAP_DONTUNMAP; their write-protect bits travel with
//    them), so any access to the range now waits in userfaultfd (a missing
//    or minor fault) instead of failing; the moved entries say which pages
//    were written since the last pass; those are copied; dest is mapped
//    over the range (mmap MAP_FIXED); the waiters are woken and retry
//    against dest.
//    Why nothing is lost: a store either happened before the entries moved
//    (its page is marked written on them, because every page was
//    write-protected at the last pass and a store to a protected page
//    clears the bit first) and is copied, or it comes after, finds no entry
//    and waits until dest is mapped. A store cannot land in the old pages
//    after the swap: they are mapped only at the moved address, which the
//    mover alone reads.
//
//  pull (old home a file, dest a memfd: a promotion). A file mapping can be
//    write-protected asynchronously, but nothing can make an access to it
//    wait, so the swap comes first: dest is mapped at a spare address,
//    registered for minor faults, and moved over the range in one mremap.
//    From then the old file is mapped nowhere, so its bytes cannot change;
//    every access to the range waits for its page. The chunk is copied in
//    small batches, the ones someone waits in first, and each batch copied
//    leaves the context (uffd::unregister_range wakes its waiters, also a
//    fault the kernel's own wake misses, and their faults then map dest's
//    pages as any fault would).
//
//  file to file (exporting a region of the disk pool): pulled into a memfd
//    of the chunk's size, then blocked from it into dest.
//
// Where userfaultfd takes only faults of user code (uffd.h Level::user_only),
// the caller copies with track_and_copy (no waiting) and then, with the
// chunk read-only, copies only what copy_written finds: the read-only
// window shrinks from a chunk's copy to the last written pages.
//
// Invariant: each function returns 0 with [at, at+len) mapping dest at off,
// or an error with the chunk in its old home exactly as it was (the caller
// may then move it the read-only way); one TrackedMover per move, on the
// moving thread, which never touches the range while accesses to it wait.
#pragma once

#include "os/uffd.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <pthread.h>
#include <vector>

namespace spillway {

struct TrackedPause {
    uint64_t longest_ns = 0; // the longest an access to the chunk could have waited
    uint64_t total_ns = 0;   // time during which an access would have waited
    size_t recopied = 0;     // bytes copied again because they were written meanwhile
};

class TrackedMover {
  public:
    // Copies the chunk, read through the range, into dest (the first copy:
    // it may skip what is known to be zero). Empty: every byte is copied.
    using FirstCopy = std::function<int()>;
    // Copies the old file's bytes of chunk offsets [rel, rel+n) into to_fd
    // at to_off + rel (to_off: dest_off, where the chunk starts in dest).
    using FileCopy = std::function<int(int to_fd, uint64_t to_off, size_t rel, size_t n)>;

    TrackedMover() = default;
    ~TrackedMover() { end(); }
    TrackedMover(const TrackedMover &) = delete;
    TrackedMover &operator=(const TrackedMover &) = delete;

    // For one move: what uffd::level() allows, at most `most`, or
    // Level::none (nothing here) when the context cannot be made. At most
    // Level::user_only: writes are tracked (the kernel's stores too, where
    // level() is full) and nothing can wait; the caller may mremap a
    // tracked range itself (no remap event, no second thread).
    uffd::Level begin(uffd::Level most = uffd::Level::full);
    void end();

    // Each moves the chunk [at, at+len) to dest_fd's [dest_off, dest_off+len).
    // Level::full, the old home in memory (shmem: a memfd).
    // tracking_started: start_tracking(at, len) was called for this chunk
    // (and its first copy may have begun since): it is not protected again.
    int block(uintptr_t at, size_t len, bool shmem, int dest_fd, uint64_t dest_off, const FirstCopy &first,
              TrackedPause *pause, bool tracking_started = false);
    // Level::full, the old home old_fd at old_off, dest a memfd (shmem: a
    // range of it can wait in minor and missing faults).
    int pull(uintptr_t at, size_t len, int old_fd, uint64_t old_off, int dest_fd, uint64_t dest_off,
             const FileCopy &copy, TrackedPause *pause);
    // Level::full, file to file.
    int pull_then_block(uintptr_t at, size_t len, int old_fd, uint64_t old_off, int dest_fd, uint64_t dest_off,
                        const FileCopy &copy, TrackedPause *pause);

    // Level::full: the units of [at, at+len) (unit bytes each, the last
    // one shorter) that are wholly in page cache, hold only zeros and have
    // no data on disk (os/extents.h) become unwritten extents of old_fd
    // again (os/zero_range.h), old_fd being mapped at
    // old_off. They are checked and zeroed while old_fd's chunk is mapped
    // nowhere: an empty anonymous range registered for missing faults is
    // moved over it (the swap of a pull), so a store into the range, the
    // CPU's or the kernel's, waits instead of landing in a page the zeroing
    // drops; then old_fd is mapped back and the waiters retry against it.
    // scratch: kZeroScratch bytes (zero_range.h). *zeroed: the bytes made
    // unwritten. 0, or -errno; the range maps old_fd at old_off again in
    // every case, its bytes unchanged.
    int zero_units(uintptr_t at, size_t len, size_t unit, int old_fd, uint64_t old_off, unsigned char *scratch,
                   size_t *zeroed, TrackedPause *pause);

    // Level::user_only (or full): from now every store into [at, at+len),
    // the CPU's or the kernel's, marks its page written; nothing waits. A
    // demotion starts the next chunk's tracking early, then its first copy
    // (a queued write, direct_write.h), while this chunk finishes: the copy
    // must come after the protection, or a store between the two is lost.
    // On an error the chunk is as it was (not tracked).
    int start_tracking(uintptr_t at, size_t len);
    // The same, for a private file mapping (a fork snapshot's re-share):
    // appends the runs of the process's own copies, listed in the step that
    // starts the tracking (uffd::protect_listing_copies), so the first copy
    // writes exactly those. From then on, this mover's scans report only
    // pages with an entry. Pass tracking_started to block or track_and_copy.
    int start_tracking_listing(uintptr_t at, size_t len, std::vector<uffd::Range> &copies);
    // Level::user_only (or full): the writes-tracked copies, nothing waits.
    // tracking_started: as block's; protecting the chunk again would forget
    // the stores made since start_tracking (their pages would look unwritten).
    int track_and_copy(uintptr_t at, size_t len, int dest_fd, uint64_t dest_off, const FirstCopy &first,
                       TrackedPause *pause, bool tracking_started = false);
    // ...then, with the chunk read-only: what was written since the last pass.
    int copy_written(uintptr_t at, size_t len, int dest_fd, uint64_t dest_off, TrackedPause *pause);
    // ...or, when the read-only step failed: the chunk leaves the context.
    void forget(uintptr_t at, size_t len);

    // Called before the step that takes the old pages out of the range (the
    // last step of a block, the swap of a pull): a device may still write
    // pages that direct I/O pinned, wherever they are mapped by then, so
    // the caller waits for the reads it can see (rehome.h read_in_flight).
    std::function<void(uintptr_t at, size_t len)> before_swap;

  private:
    struct Helper; // the second thread: makes the mremaps, reads the messages (see the .cpp)

    int copy_ranges(uintptr_t base, int dest_fd, uint64_t dest_off, size_t *bytes);
    // The swap of a pull (and of zero_units): staged, registered with
    // modes, is moved over [at, at+len) in one mremap, so an access to the
    // range waits from then; *t0: when accesses may have begun to wait.
    // 0, or -errno with staged unmapped and the range as it was.
    int stage_over(void *staged, uintptr_t at, size_t len, uint64_t modes, uint64_t *t0);
    int last_step(uintptr_t at, size_t len, bool shmem, int dest_fd, uint64_t dest_off, TrackedPause *pause);
    void put_back_pulled(uintptr_t at, size_t len, int old_fd, uint64_t old_off, int dest_fd, uint64_t dest_off,
                         const std::vector<bool> &done, size_t batch);

    uffd::Level level_ = uffd::Level::none;
    bool entries_only_ = false; // start_tracking_listing: scans skip pages with no entry
    int uffd_ = -1, pagemap_ = -1;
    Helper *helper_ = nullptr;
    std::vector<uffd::Range> written_;
};

} // namespace spillway
