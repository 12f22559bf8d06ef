// fork_snapshot.h — a fork child sees the parent's large buffers as they
// were at the fork, whatever the parent writes or frees after it.
//
// Why: a child maps each inherited file-backed region privately
// (large_privatise_inherited), but the file is the parent's. Left shared,
// the parent's later stores would reach every page the child has not
// written, and a freed pool range would be punched (zeros) or reused under
// the child (tests/programs/fork_snapshot). POSIX promises a copy.
//
// How (docs/design.md, "Fork snapshots"):
//  * Prepare turns the parent's own mapping of every shared, unexported
//    region over a file of its own private (same file, same bytes), so the
//    file stays as it was: the parent's first store to a page copies it,
//    as without the shim. Done in prepare, under the locks, because the
//    parent's other threads run on between fork and the parent's handler.
//  * A generation per such fork: a pipe whose read end the parent keeps and
//    whose write end (close-on-exec) every child holds, and grandchildren
//    inherit with the mappings. End of file: no process that could map the
//    generation's files is left (an exec or an exit lets go at once).
//  * A region stays private, and a freed one keeps its file range (neither
//    punched nor reused) and its addresses, while a generation at or after
//    the one that made it private is open. Then the reaper's tick writes the
//    parent's copies back into the file and maps it shared again
//    (rehome_reshare), and releases what was freed meanwhile.
//  * While private a region has no tiering, pacing, page probes, recycling
//    or control API (EPERM), as a fork child's own regions.
//  * Under memory pressure while the children live, the parent's copies
//    (anonymous memory) would get the job OOM-killed: the region moves to
//    a new file of its own, mapped shared, and the children keep the old
//    one (snapshot_spill).
//
// Invariants: the generation table, Region::snapshot_gen and the held list
// change only under the large lock. A region with snapshot_gen g is mapped
// privately in this process and its file range is unchanged since g began.
// Exported files (a name asked for sharing) and files this process did not
// create are never made private. A fork from a signal handler that
// interrupted the shim (fork_safety.h, untrusted) makes no snapshot: the
// child privatises its view alone, as before.
#pragma once

#include <cstdint>

namespace spillway {

struct Region;

// Fork's prepare (fork_safety.cpp), trusted: the move and queue locks held,
// the large lock not yet. Opens a generation if any region must be made
// private, marks those regions (taking and dropping the large lock) and
// waits out a page probe on one of them. Returns false when no snapshot is
// made ([fork] snapshot = false, or this thread holds the large lock).
bool snapshot_fork_mark();
// Then, under the large lock: maps the marked regions (and any shared one
// born since) private.
void snapshot_fork_privatise();
// The parent's handler, after every lock is released: drops the parent's
// write end and starts the reaper's tick. attempted: prepare called
// snapshot_fork_mark and it returned true; when not, or when a region a
// child maps was left shared, the tiering loop keeps off the regions born
// before this fork (rehome.h, note_fork_left_shared).
void snapshot_fork_parent(bool attempted);
// The child's step (after the registry's): the parent's generations and
// held ranges are the parent's; this child's regions are plain inherited
// private ones. trusted: the arena space of held regions is given back.
void snapshot_fork_child(bool trusted);

// A retirement, under the large lock, after r was unmapped and unlinked:
// true when a child may still map r's file range; r is then kept (with its
// arena space) until the tick releases it through large_release_retired.
bool snapshot_hold_retired(Region *r);

// The tick (reaper.h): ends generations whose children are gone, re-shares
// the regions and releases the ranges no child maps any more. Returns
// whether there is still something to wait for.
bool snapshot_settle();
// True while some live region is a snapshot (cheap: one atomic load), so
// the control API can settle first when a child has already let go.
bool snapshot_regions_live();
// True while the live region holding p is a parent's snapshot (mapped
// private: every page the parent writes is a copy, anonymous memory, until
// the children of its generation are gone). Takes the large lock, unless
// no snapshot is live.
bool snapshot_frozen(const void *p);

// A retirement that cannot keep r's range (its addresses are lost): r no
// longer counts as a live snapshot. Large lock held.
void snapshot_count_out_retired(Region *r);

// The tiering loop's hook under memory pressure (tiering_loop.h): the
// parent's copies of snapshot pages are anonymous memory, which nothing
// can reclaim while the children live. Moves the snapshot regions with the
// most copies (16 MiB at least each) to files of their own
// (rehome_spill_snapshot) until need bytes of copies have become page
// cache; the children keep the old files. Returns the bytes of copies moved
// (at least 1 per region moved). Whatever need, a region that had to move so
// at an earlier fork (Region::snapshot_spilled) and is larger than room
// (the cgroup's limit less its unreclaimable memory) moves at once: its
// copies would press again, and moved before they grow it costs one
// sequential copy, not a reclaim storm (the tiering loop calls this with
// need 0 at every look while a limit is set; under pressure, room 0).
uint64_t snapshot_spill(uint64_t need, uint64_t room);

// True while the snapshot regions, if the parent wrote them all, would
// make more copies than room (the cgroup's limit less its unreclaimable
// memory): then the tiering loop looks every few milliseconds, not every
// tiering.interval_ms, because a parent rewriting at memory speed makes a
// gigabyte of copies a second, and the OOM killer came before a 100 ms look
// in 9 of 31 runs of the control test's fork-rewrite case. Takes the large
// lock; no page is read.
bool snapshot_could_outgrow(uint64_t room);

} // namespace spillway
