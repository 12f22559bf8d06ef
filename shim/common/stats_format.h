// stats_format.h — the names in the JSON the shim writes and the
// `spillway` tool reads: the exit line of the stats file (stats.cpp ->
// tools/cli/stats_summary.cpp) and the live snapshot in a memfd
// (stats_live.cpp -> tools/cli/live_snapshot.cpp).
//
// Invariant: the one spelling of every key both sides use; the writer and
// the reader name them from here, never as string literals of their own.
#pragma once

namespace spillway::stats_key {

// Objects by backing, in this order: {"disk":N,"memory":N,"anon":N}.
inline constexpr const char *kBackings[3] = {"disk", "memory", "anon"};

// The exit line, one JSON object per process.
inline constexpr char pid[] = "pid";
// The run tag (stats_run.h), when the settings give one: a reader of a
// shared stats file keeps its own job's lines by it (`spillway run`).
inline constexpr char run[] = "run";
inline constexpr char cmd[] = "cmd";
inline constexpr char rank[] = "rank";             // torchrun's RANK, when set
inline constexpr char local_rank[] = "local_rank"; // and LOCAL_RANK
inline constexpr char regions[] = "regions";       // by backing, cumulative
inline constexpr char bytes[] = "bytes";           // by backing, cumulative
inline constexpr char peak_bytes[] = "peak_bytes"; // by backing
inline constexpr char live_bytes_at_exit[] = "live_bytes_at_exit";
inline constexpr char fallbacks[] = "fallbacks"; // exit line: by reason; live snapshot: the total
// The reasons, in the order of backing.h's Fallback (backing.cpp checks it).
inline constexpr const char *kFallbackNames[] = {"no_space",     "quota",          "unsupported",
                                                 "io_error",     "too_big",        "no_spill_dir",
                                                 "too_many_files", "memfd_failed", "map_failed",
                                                 "arena_full",   "other"};
inline constexpr char frees[] = "frees";
inline constexpr char reallocs_in_place[] = "reallocs_in_place";
inline constexpr char reallocs_moved[] = "reallocs_moved";
inline constexpr char tiering[] = "tiering";
inline constexpr char promotions[] = "promotions";
inline constexpr char promoted_bytes[] = "promoted_bytes";
inline constexpr char demotions[] = "demotions";
inline constexpr char demoted_bytes[] = "demoted_bytes";
inline constexpr char failed_promotions[] = "failed_promotions"; // the shim warned why
inline constexpr char failed_demotions[] = "failed_demotions";
// The writeback pacer (shim/engine/tiering/writeback.h), an object of its own.
inline constexpr char writeback[] = "writeback";
inline constexpr char passes[] = "passes";
inline constexpr char written_back_bytes[] = "written_back_bytes";
inline constexpr char unmapped_bytes[] = "unmapped_bytes";
inline constexpr char zeroed_bytes[] = "zeroed_bytes";
inline constexpr char pass_ms[] = "pass_ms";
// The prefetch worker (shim/engine/access/prefetch_worker.h), an object of its own.
inline constexpr char prefetch[] = "prefetch";
inline constexpr char read_bytes[] = "read_bytes";
inline constexpr char dropped_bytes[] = "dropped_bytes";
// CPython's object arenas in the shim's chunks (shim/engine/large/block_zone.h).
inline constexpr char python_arenas[] = "python_arenas";
inline constexpr char taken[] = "taken";
inline constexpr char given_back[] = "given_back";
inline constexpr char peak[] = "peak";
inline constexpr char chunks[] = "chunks";
// Fork snapshots moved to a file of their own under memory pressure
// (shim/engine/large/fork_snapshot.h), and the parent's copies they carried.
inline constexpr char fork[] = "fork";
inline constexpr char snapshot_spills[] = "snapshot_spills";
inline constexpr char snapshot_spill_copies_bytes[] = "snapshot_spill_copies_bytes";
inline constexpr char sites[] = "sites";

// The live snapshot (pid, peak_bytes and fallbacks as above).
inline constexpr char mono_ns[] = "mono_ns";
inline constexpr char live_bytes[] = "live_bytes"; // by backing
inline constexpr char unlisted[] = "unlisted";     // live regions left out of the list
// One entry of its "regions" list.
inline constexpr char start[] = "start";
inline constexpr char len[] = "len";
inline constexpr char backing[] = "backing";
inline constexpr char phase[] = "phase";
inline constexpr char phase_ms[] = "phase_ms";
inline constexpr char advice[] = "advice";
inline constexpr char fault_pages_s[] = "fault_pages_s";
// Only while the region is being moved (its bytes are then in two homes,
// and "backing" is the one it is leaving): where it is going.
inline constexpr char moving_to[] = "moving_to";
// Only in a fork child, for a region it inherited and remapped private:
// true. Its pages are the parent's (shared page cache or memfd) until the
// child writes them, then the child's own anonymous copies.
inline constexpr char private_copy[] = "private";
// Only for a disk region the sampler could measure with cachestat(2)
// (Linux 6.5+), absent otherwise (an older kernel, a fork child's private
// copy, a descriptor it could not take): the bytes of the region's spill
// file range in the page cache, and how many of those are dirty, when the
// snapshot was written. More than the mapped pages: pages the shim
// unmapped (writeback pacer, page probes) and read-ahead stay cached.
inline constexpr char cached[] = "cached";
inline constexpr char dirty[] = "dirty";
// The snapshot's first member: the length and hash of the rest of the
// text (text_sum.h), so a reader can tell a torn read for sure.
inline constexpr char text_sum[] = "text_sum";

// The live snapshot's memfd, as memfd_create takes it; /proc/PID/fd shows
// it as "/memfd:spillway-live (deleted)".
inline constexpr char kLiveMemfdName[] = "spillway-live";

} // namespace spillway::stats_key
