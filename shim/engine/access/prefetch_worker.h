// prefetch_worker.h — a thread that reads a stream's spill file ahead of
// its reader, so the reader's faults find the pages cached, and pages out
// what the reader has passed when the cgroup is short of room.
//
// Why a thread of its own, reading with pread (measured, issue 12): fed
// from the detector's tick with MADV_WILLNEED, a re-read stream ran at a
// third of the disk's sequential bandwidth. WILLNEED builds order-0 page
// cache one 4 KiB page at a time and pays the cgroup's reclaim on the
// detector's thread, which then looks late; the reader, overtaking the
// lead, faulted page by page under MADV_RANDOM. pread of a few MiB goes
// through the kernel's own read-ahead (large folios, requests up to the
// device's maximum I/O size whatever read_ahead_kb is) and blocks this
// thread only. Behind the reader, MADV_PAGEOUT frees the pages it passed
// before the read-ahead's charges have to reclaim them (unmapping them
// page by page from the reader's page tables, with a TLB shootdown each).
// One thread: paging out on a second, two threads reading one stream and a
// file description of the worker's own were measured without a gain that
// held at both read-ahead settings (docs/benchmarks.md, "Re-reads against
// the disk's bandwidth").
//
// Invariants: the thread owns the descriptor it is handed (a dup taken
// under the large lock, so it is the stream's file even if the region is
// freed meanwhile: a read of a freed file is harmless) and closes it when
// the stream ends; it pages out on addresses only (MADV_PAGEOUT never loses
// data, whatever mapping the range holds by then); it never takes the large
// lock; a target posted while it reads is picked up at the next chunk.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// What the detector wants for one stream, in pages of the region.
struct PrefetchTarget {
    uintptr_t start = 0;  // region start; with born, the stream's identity
    uint64_t born = 0;
    uint64_t file_off = 0; // the region's offset in its file (bytes)
    uint64_t pages = 0;    // region length
    uint64_t front = 0;    // the reader's front as last seen
    uint64_t ahead_to = 0; // have read up to this page
    uint64_t drop_to = 0;  // page out what lies before this page (0: nothing;
                           // pages: the whole region, its last partial step too)
    // Where paging out starts when the worker takes the stream: the page
    // the detector saw this stream begin at (or had paged out up to
    // itself). UINT64_MAX: the front at hand-over. Why not always the front:
    // the detector hands a stream over only after it has run 8 MiB, and a
    // re-read of 64 MiB buffers then left an eighth of every buffer cached
    // behind the reader (plus the 4 MiB kept at its end), more than a 1 GiB
    // cgroup holds over 128 buffers: reclaim took the oldest pages instead,
    // the last buffers written, and all 8 GiB were read back from disk.
    uint64_t drop_from = UINT64_MAX;
    // A stream the detector expects but the reader has not begun (the next
    // buffer of a chain, sampler.cpp): read only when no begun stream has
    // anything to read, so the buffer the reader is in always comes first.
    bool speculative = false;
};

// The next piece to read for a stream read up to `done`: [from, from+count)
// with count <= chunk, or count 0 when the target is reached. Reading
// starts at the front when the reader has overtaken what was read.
struct ReadStep {
    uint64_t from = 0, count = 0;
};
ReadStep next_read(uint64_t done, uint64_t front, uint64_t ahead_to, uint64_t chunk);

// The range to page out behind a stream: [dropped, to) rounded down to
// `align` pages, or empty (to <= dropped). A drop_to at the region's end
// (pages) is not rounded: the stream left the region.
ReadStep next_drop(uint64_t dropped, uint64_t drop_to, uint64_t align, uint64_t pages = UINT64_MAX);

// Starts the thread (once; again after fork). Called with the detector's
// own start, when the first disk region is made, never later: a thread
// started when the program has used up its address space (RLIMIT_AS) can
// make glibc abort the process ("cannot allocate memory for thread-local
// data"): tests/programs/rlimit_as aborted so once, under load, while this
// thread was started at a stream's first need.
void prefetch_thread_start();
// Gives a stream to the worker: fd (owned from now on) reads the region's
// file. False when every slot is taken or the thread is not running (fd is
// then closed, and the caller keeps feeding the stream itself).
bool prefetch_start(const PrefetchTarget &t, int fd);
// Moves a stream's target; false when the worker does not hold it.
bool prefetch_update(const PrefetchTarget &t);
// Whether the worker holds the stream and has not read it to its target
// yet, a read of it in flight included (sampler.cpp: a stream has not
// stopped while the worker reads ahead of it; one 4 MiB read took a second
// on a disk busy with writes, and the reader waiting on it left no news).
bool prefetch_pending(uintptr_t start, uint64_t born);
// The stream ended (or its region is gone): the worker drops it.
void prefetch_end(uintptr_t start, uint64_t born);
// Aware code dropped the page cache of [start, start+len)
// (spillway_release_page_cache): the streams of regions starting there end,
// and a read of theirs in flight finishes before this returns. True when
// such a stream existed: the kernel's own read-ahead, started by the
// worker's last read, may still be landing (the caller drops again).
// (Measured: control/export-cross-process found 8 MiB resident right after
// a release, read by the worker.)
bool prefetch_forget(uintptr_t start, size_t len);
// A region being moved (tiering/rehome.h) is the mover's: its streams end
// (a read in flight finishes first, as in prefetch_forget), no stream
// starting in [start, start+len) is taken until prefetch_keep_off_end, and
// the detector judges nothing there (prefetch_kept_off). Why: the move's
// copy reads the region in order, the detector took it for a reader's
// stream, and the worker's reads ahead cached on-disk pages during the
// promotion (docs/flakes.md, run 14): extra reads and page-cache charge
// when memory is short, and a site taught "sequential" by the mover.
// One range at a time: moves are (the move lock).
void prefetch_keep_off(uintptr_t start, size_t len);
void prefetch_keep_off_end();
bool prefetch_kept_off(uintptr_t start);
void prefetch_after_fork_child();

// Bytes the worker read, and paged out (kept in stats.h's counters, so the
// exit line's "prefetch" object shows them; a fork child counts from zero).
uint64_t prefetch_read_bytes();
uint64_t prefetch_dropped_bytes();

} // namespace spillway
