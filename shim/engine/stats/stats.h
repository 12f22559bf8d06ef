// stats.h — counters of what the large path did, written at exit.
//
// Invariant: counters are relaxed atomics bumped only on the large path
// (never on the small one); the exit writer appends one JSON object per
// process as a single O_APPEND write, so a process tree can share one file
// ("%p" in the name gives each process its own). A fork child starts its
// counts at zero, so the lines of a tree add up.
#pragma once

#include "backing/backing.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace spillway {

struct Stats {
    std::atomic<uint64_t> regions[4];       // by Backing, cumulative
    std::atomic<uint64_t> bytes[4];         // by Backing, cumulative
    std::atomic<uint64_t> live_bytes[4];
    std::atomic<uint64_t> peak_bytes[4];
    std::atomic<uint64_t> fallbacks[(int)Fallback::count_];
    std::atomic<uint64_t> frees;
    std::atomic<uint64_t> reallocs_in_place;
    std::atomic<uint64_t> reallocs_moved;
    // Tiering (tiering_loop.cpp): moves in place, and why.
    std::atomic<uint64_t> promotions, promoted_bytes;
    std::atomic<uint64_t> demotions, demoted_bytes;
    std::atomic<uint64_t> demote_reasons[4]; // by DemoteReason
    std::atomic<uint64_t> move_ns;           // all moves together
    std::atomic<uint64_t> longest_pause_ns;  // the longest one chunk kept writers waiting
    std::atomic<uint64_t> tiering_cpu_ns;    // the controller thread's CPU time
    // Moves that failed: the new home could not be made, or the move was
    // undone (a region busy or freed meanwhile is no failure).
    std::atomic<uint64_t> failed_promotions, failed_demotions;
    // Paced writeback (writeback.cpp): passes that asked the kernel to write
    // spill files; the dirty bytes those ranges held when asked; the bytes
    // of spill mappings whose page-table entries were dropped first; the
    // passes' wall time; the bytes of dirty zeros they left unwritten
    // instead (zero_extents.h).
    std::atomic<uint64_t> writeback_passes, writeback_bytes, writeback_unmapped_bytes, writeback_ns;
    std::atomic<uint64_t> writeback_zeroed_bytes;
    // The prefetch worker (access/prefetch_worker.h): bytes its preads
    // returned (from the disk or the page cache), and bytes it paged out
    // behind readers. Why in the line: a job's major faults do not say who
    // read a stream. graph_scatter's count phase, 18,384 major faults for
    // 2,043 MiB read, was taken for a stream read by 128 KiB faults; the
    // faults were its table's first touches of spill-file holes (no read),
    // and the worker had read 2,038 of 2,048 MiB (tests/bench/JOBS.md,
    // 2026-12-05).
    std::atomic<uint64_t> prefetch_read_bytes, prefetch_dropped_bytes;
    // CPython's object arenas in the block zone (large/block_zone.h):
    // blocks handed out, given back, the most in use at once, and the
    // chunk regions made for them (also counted as regions above).
    std::atomic<uint64_t> arenas_taken, arenas_given, arenas_in_use, arenas_peak, arena_chunks;
    // Fork snapshots moved to a file of their own (rehome_spill_snapshot),
    // and the bytes of the parent's copies that pressed when they did.
    std::atomic<uint64_t> snapshot_spills, snapshot_spill_copies_bytes;
};

extern Stats g_stats;

void stats_on_alloc(Backing b, size_t bytes);
void stats_on_grow(Backing b, size_t bytes); // realloc in place: bytes, not a region
void stats_on_free(Backing b, size_t bytes);
void stats_on_fallback(Fallback why);
void stats_on_arena(bool taken); // a block of the zone handed out (true) or given back
void stats_on_arena_chunk();
void stats_on_snapshot_spill(uint64_t copies_bytes);
// A live region changed backing in place (not a new region, not a free):
// its bytes leave one backing's live count for the other's. stats_on_move
// is a tiering move (a promotion or a demotion, counted as one);
// stats_on_rehome is any other (spillway_spill, spillway_export).
void stats_on_move(Backing from, Backing to, size_t bytes, uint64_t move_ns, uint64_t pause_ns);
void stats_on_rehome(Backing from, Backing to, size_t bytes);
// One writeback pass (writeback.h) that asked the kernel to write.
void stats_on_writeback_pass(uint64_t dirty_bytes, uint64_t unmapped_bytes, uint64_t ns);
// A writeback pass left bytes of dirty zeros unwritten (zero_extents.h).
void stats_on_zeroed(uint64_t bytes);
// The prefetch worker read bytes of a stream's file ahead of its reader, or
// paged out bytes the reader had passed (either may be 0).
void stats_on_prefetch(uint64_t read_bytes, uint64_t dropped_bytes);
// Fork child: start counting afresh (regions it inherited stay live), so the
// lines of a process tree add up instead of repeating the parent's counts.
void stats_after_fork_child();

// JSON object for this process (the per-site part comes from callsite.h),
// with "run" when a run tag is given (stats_run.h), "rank" and
// "local_rank" when RANK / LOCAL_RANK are set.
std::string stats_json(const std::string &run_tag = "");
// Appends stats_json(run_tag) to the configured file; no-op without one.
void stats_write_at_exit(const std::string &file_pattern, const std::string &run_tag);

} // namespace spillway
