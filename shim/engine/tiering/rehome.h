// rehome.h — moving a live region's bytes to a new file in place: same
// address, same bytes, safe while other threads read and write it.
//
// How: the region moves one chunk (16 MiB) at a time, each copied into the
// new file and the file's chunk mapped over it (mmap MAP_FIXED, atomic for
// every other thread). Where userfaultfd allows (os/uffd.h), move_tracked.h
// moves the chunk while every thread and the kernel keep using it: writes
// are tracked and copied again, and an access waits (never fails) only in
// the last step; a system call into the region completes in full.
// Otherwise (no userfaultfd) the chunk is made read-only while it is
// copied: a thread that writes into it faults, and a SIGSEGV handler
// recognises the address as "being moved", waits for that chunk to be done
// and returns, so the write is retried against the new mapping. Chunks not
// yet moved are written in their old home and copied later; chunks already
// moved are written in the new one. Faults anywhere else
// are passed to the handler that was installed before ours (or the default
// action), unchanged.
//
// Invariant: readers never see torn data; a writer waits for at most one
// last step (tracked) or one chunk's copy; at most one move is in flight
// (moves are rare and serialised by the move lock, which fork also takes so
// a child never inherits a half-moved region); the moving thread has every
// asynchronous signal blocked, so no signal handler can fork in the middle
// of a move; an untrusted fork child (fork_safety.h) moves nothing (-EPERM);
// a region being resized or retired
// (pinned) is never moved, and one being moved is not resized or retired
// until the move is over.
//
// Without userfaultfd (seccomp, kernels before 6.7) the kernel's own stores
// into the region (read(2) or recv(2) into it) do not fault to user space;
// into the chunk being copied they fail with EFAULT, or come back short
// when they began before it. The window is one chunk's copy (milliseconds),
// and the mover does not start a chunk while a thread of
// this process is blocked in read/pread/readv/preadv/recvfrom/recvmsg with
// a buffer in it (from /proc/self/task/*/syscall); asynchronous I/O
// (io_uring, AIO) is invisible. With userfaultfd for user faults only, the
// window is the last copy of what was written during the move. os/uffd.h logs
// once which of the three this process has; docs/moves.md is the contract.
#pragma once

#include "os/extents.h"
#include "os/uffd.h"
#include "registry/placement.h" // Backing

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace spillway {

struct Region;
struct SpillFile;

// Copies r's bytes into dest (reserved, at least r->map_len long) and maps
// dest over r (becoming disk-backed). The caller has looked r up, owns
// dest, and is the region's user (spillway_spill/export). 0 or -errno.
int rehome_region(Region *r, SpillFile *dest);

struct MoveResult {
    uint64_t total_ns = 0;         // the whole move
    uint64_t longest_chunk_ns = 0; // the longest a writer could have waited
    size_t bytes = 0;
    // Where the time went (the tiering log's breakdown of a move):
    uint64_t checks_ns = 0;    // taking the move lock, checking the region, reads in flight
    uint64_t precopy_ns = 0;   // first copies, writers running (reads from the old home)
    uint64_t protected_ns = 0; // read-only copies and remaps (what writers may wait for)
    uint64_t waited_ns = 0;    // waiting for reads in flight into a chunk
    uint64_t writeback_ns = 0; // write_back: writing chunks to disk and dropping them
    uint64_t mapped_ns = 0;    // into memory: mapping every page after the last chunk
    uint64_t cpu_ns = 0;       // the mover thread's CPU time (the rest of total_ns it waited)
    size_t cached_bytes = 0;   // a disk source into memory: copied from page cache
    size_t disk_bytes = 0;     // ... and read from disk (in the read-only copies)
    uffd::Level scheme = uffd::Level::none; // how: tracked (full), narrowed (user_only), read-only chunks
    size_t recopied_bytes = 0; // copied again because they were written during the move (tracked)
};

// Runs work(r) with r held as a move holds it: the move lock, r marked
// moving to `to` (a pin, a resize or a retirement waits; the page probes
// keep off), after checking under the large lock that r is still live at
// start, not pinned, not private, its file neither a fork child's
// inherited one nor exported, and refuse(r, to) false. -EPERM (an untrusted
// fork child), -ESTALE (gone), -EBUSY (refused), or work's result.
// *checks_ns: the time taken before work began.
using RegionWork = std::function<int(Region *)>;
int hold_region_for(Region *r, uintptr_t start, Backing to, bool (*refuse)(const Region *, Backing to), const RegionWork &work,
                    uint64_t *checks_ns = nullptr);

// Maps a parent's fork snapshot (large/fork_snapshot.h) shared over its own
// file again, in place, once no child maps that file: the pages the parent
// copied since the fork (written while it was private) are written into
// the file first, chunk by chunk, so no store is lost between that write
// and the shared mapping. As a move (move_tracked.h): a memfd region's
// chunk is blocked (no access fails, the CPU's or the kernel's); a disk
// file's private mapping can only have its writes tracked, so its chunk is
// read-only while the pages written since the last pass are copied (a
// read(2) starting then fails with EFAULT); without userfaultfd, read-only
// while every copy is written (writers wait in the fault handler).
// Only if r is still live at start, private, not pinned and due(r) under
// the large lock (the caller's check that no child is left; a fork cannot
// begin meanwhile: this holds the move lock), and no thread is blocked in a
// read into it. 0, -ESTALE (gone), -EBUSY (try later), -EPERM (an
// untrusted fork child) or -errno (r stays private, as it was).
int rehome_reshare(Region *r, uintptr_t start, bool (*due)(const Region *));
// A re-share that writes back at least this many bytes of the parent's
// copies marks the region fork_written (registry/region.h).
constexpr size_t kForkWrittenMin = size_t(16) << 20;

// Moves a parent's fork snapshot to dest, a new reserved file at least
// r->map_len long, while the children still map the old one: every byte as
// the parent sees it (the old file's and the parent's copies) is written
// into dest, and dest is mapped shared over r, chunk by chunk, as
// rehome_reshare does (the same tracking, blocking and windows). The
// parent's copies, anonymous memory the cgroup cannot reclaim, become page
// cache of dest. r is shared (no longer private) afterwards, backed by
// dest; the old file stays the children's. A pool range is kept for them
// (Region::left_gen); a file of its own is released (their descriptors and
// mappings keep it). 0, -ESTALE, -EBUSY, -EPERM or -errno (r stays
// private over its old file, as it was; dest is the caller's to close).
int rehome_spill_snapshot(Region *r, uintptr_t start, SpillFile *dest, MoveResult *out);
// How a re-share or a snapshot's move went, for log lines: "blocked" (no
// access fails), "writes tracked" (a read-only window of the last pass's
// pages), "read-only chunks".
const char *rehome_scheme_name(uffd::Level l);
// Tests: the next spills fail (-EIO) at their chunk number `chunk` (16 MiB
// each), after the chunks before it moved, so the undo runs; -1: never.
void rehome_fail_spill_at_chunk_for_tests(long chunk);

// The tiering mover's entry: r comes from an earlier snapshot (start was its
// start then). Moves it to dest (a disk file or a memfd: r takes dest->kind)
// only if it is still live, not pinned, not private, and (without
// userfaultfd for kernel faults) no thread is blocked in a read into it;
// else -EBUSY (try again later) or -ESTALE (gone).
// write_back: write each copied chunk to disk and drop its page cache before
// mapping it (demotion under memory pressure: the bytes must leave RAM).
// Stats are the caller's. 0 or -errno; on error r keeps its old home and
// dest is the caller's to close.
int rehome_region_checked(Region *r, uintptr_t start, SpillFile *dest, bool write_back,
                          MoveResult *out);

// How a chunk of a disk region is copied into memory (the promotion's read
// path). A page in page cache is copied through the region's own mapping
// or, in a tracked move, a view of the old file (no system call, no disk;
// the mapping is advised MADV_RANDOM for the copy, so its faults read
// nothing ahead for later pages to be counted cached); a page only on disk — inside an extent that
// was written — is read from the file, consecutive pages in one read; any
// other page (an unwritten or unallocated extent, not cached) reads as zero
// and is skipped: a reserved destination already holds zeros there. Walking
// the file with SEEK_DATA/SEEK_HOLE and one pread per extent cost three
// system calls per page a random writer had touched.
struct CopyRun {
    size_t off = 0, len = 0; // relative to the chunk
    bool from_file = false;  // false: copy through the mapping
};
// resident[i] & 1: page i of the chunk is in page cache (mincore);
// written: the extents holding data on disk (os/extents.h), sorted, relative
// to the chunk. Appends the runs.
void plan_disk_copy(const unsigned char *resident, size_t pages, size_t page, const Extent *written,
                    size_t n_written, std::vector<CopyRun> &runs);

// A pin keeps the tiering mover off a region for its lifetime, after
// waiting out a move already under way (realloc and retire hold one).
class RegionPin {
  public:
    explicit RegionPin(Region *r);
    ~RegionPin() { release(); }
    void release(); // early, before the region can be freed
    RegionPin(const RegionPin &) = delete;
    RegionPin &operator=(const RegionPin &) = delete;

  private:
    Region *r_;
};

// The same, never released: a region about to be retired (and deleted).
void pin_region_for_good(Region *r);

// True while a move of r is under way (or being checked): its bytes may be
// in two homes, and its backing changes when the move ends. Only compares
// r; never dereferences it.
bool region_moving(const Region *r);
// Returns once no move of r is under way (at once if none is).
void wait_out_move(const Region *r);
// Where a move of r under way is taking it, or Backing::none.
Backing moving_to(const Region *r);

// True when a thread of this process is blocked in a read-like system call
// whose buffer overlaps [start, start+len); direct_only: a read(v) or
// pread(v) of a descriptor opened O_DIRECT (the device writes the pages it
// pinned, wherever they are mapped by then).
bool read_in_flight(uintptr_t start, size_t len, bool direct_only = false);

// Fork (fork_safety.h, lock 3 of its order): prepare waits for a move in
// flight unless this thread is the mover (returns false then); the child
// never waits for a move that no thread of its own will finish, and gets a
// region that was half moved by the forking thread itself back as a
// private copy of its current bytes.
bool rehome_fork_prepare();
void rehome_fork_parent();
void rehome_after_fork_child(bool trusted); // untrusted: nothing moves from now on
// When this process last forked (CLOCK_MONOTONIC ns, 0: never). A child
// maps file-backed regions born before it from the same files, privately:
// moving one would punch or drop bytes the child may still read.
uint64_t last_fork_ns();
// When this process last forked a child that maps, from this process's own
// files, a region that fork did not freeze (large/fork_snapshot.h: [fork]
// snapshot off, a fork from a signal handler, a region being resized): a
// region born before it must never move, since moving punches or drops the
// file range that child reads. A frozen region needs no such rule: it is
// private while any child maps it, and moves again once it is shared.
void note_fork_left_shared();
uint64_t last_shared_fork_ns();
// In a fork child: when it was forked (0 in a process that is no child of a
// shim process). Regions born before are inherited and never moved here.
uint64_t forked_at_ns();

} // namespace spillway
