// reaper.h — a background thread that retires freed regions.
//
// Why: unmapping a large dirty mapping and dropping its file can take from
// milliseconds to (measured) 107 s when ext4 discards a fragmented file; the
// caller of free() must not wait for that. free() only queues the region.
//
// Invariants: submit() never blocks on the retiring work (it takes a short
// queue lock) while fewer than a few regions are pending, and retires inline
// beyond that, so freed memory cannot pile up; the thread is created lazily outside every lock of the large
// path, with all signals blocked; if it cannot be created the work is done
// inline, so nothing is ever leaked for want of a thread.
#pragma once

namespace spillway {

struct Region;
using RetireFn = void (*)(Region *);

void reaper_init(RetireFn retire);
void reaper_submit(Region *r);
// Waits until every region submitted so far is retired (tests, exit stats).
void reaper_drain();
// Fork (fork_safety.h). prepare takes the queue lock unless this thread
// holds it (false then). The child has no reaper thread: it retires what
// was queued, inline, if the queue can be trusted.
bool reaper_fork_prepare();
void reaper_fork_parent();
void reaper_after_fork_child(bool retire_pending);

} // namespace spillway
