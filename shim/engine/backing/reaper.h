// reaper.h — a background thread that retires freed regions and closes the
// files regions have moved away from.
//
// Why: unmapping a large dirty mapping and dropping its file can take from
// milliseconds to (measured) 107 s when ext4 discards a fragmented file; the
// caller of free() must not wait for that. free() only queues the region.
// The same holds for the old file of a region a move took to memory: its
// last close discarded 256 MiB in 30-65 s (measured) while the mover held
// the large lock and the job's writers waited on it.
//
// Invariants: submit() never blocks on the retiring work (it takes a short
// queue lock) while fewer than a few regions are pending, and retires inline
// beyond that, so freed memory cannot pile up; the thread is created lazily outside every lock of the large
// path, with all signals blocked; if it cannot be created the work is done
// inline, so nothing is ever leaked for want of a thread.
//  * While the recycle cache (recycle.h) holds regions, the thread wakes
//    every kTrimTickMs and hands it the chance to give back those idle too
//    long, so a process that stops allocating does not keep them.
#pragma once

namespace spillway {

struct Region;
struct SpillFile;
using RetireFn = void (*)(Region *);
using CloseFileFn = void (*)(SpillFile *);

void reaper_init(RetireFn retire, CloseFileFn close_file);
// The recycle cache's trim (recycle.h): all=false gives back the regions
// idle too long, all=true every one (to the reaper's queue, so reaper_drain
// waits for them); returns whether any remain cached.
using TrimFn = bool (*)(bool all);
void reaper_set_trim(TrimFn trim);
// The cache now holds a region: the thread (started if need be) ages it.
void reaper_wake_for_trim();
constexpr int kTrimTickMs = 250;
// The fork snapshot's tick (large/fork_snapshot.h): ends generations whose
// children are gone and re-shares their regions; returns whether it still
// waits for some. Armed by each fork that made a snapshot, the thread
// (started if need be) calls it every kTrimTickMs while it returns true.
using SettleFn = bool (*)();
void reaper_set_settle(SettleFn settle);
void reaper_wake_for_settle();
void reaper_submit(Region *r);
// f is no region's home any more and nobody else holds it: the reaper
// closes it (inline when the thread cannot run or has too much pending).
void reaper_submit_file(SpillFile *f);
// Waits until every region submitted so far, and every region the recycle
// cache held, is retired (tests, exit stats).
void reaper_drain();
// Fork (fork_safety.h). prepare takes the queue lock unless this thread
// holds it (false then). The child has no reaper thread: it retires what
// was queued, inline, if the queue can be trusted.
bool reaper_fork_prepare();
void reaper_fork_parent();
void reaper_after_fork_child(bool retire_pending);

} // namespace spillway
