// stats_live.h — a snapshot of this process's live regions, rewritten about
// once a second into the spill directory as spillway-live-<pid>.json, so
// `spillway top` and `spillway run --record` can watch a running job (the
// stats line of stats.h is written only at exit).
//
// What it carries is what only the shim knows: each region's address range,
// backing, the detector's phase and the advice in force, and the pages it
// faulted in per second. Residency, faults and I/O the readers take from
// /proc, which is authoritative.
//
// Invariants: only the sampler thread writes (one writer); the writer never
// allocates (fixed static buffers), holds the large lock only to copy the
// region fields, never during I/O; the file is replaced by rename, so a
// reader sees a whole snapshot or the previous one. It is removed at normal
// exit; a killed process's file is stale and the next preparation of the
// directory removes it (its pid is dead), like a dead exporter's files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace spillway {

constexpr uint64_t kLivePeriodNs = 1'000'000'000;

// The fields of one region the snapshot lists.
struct LiveRegion {
    uint64_t start = 0, len = 0; // mapped range
    uint64_t phase_since_ns = 0;
    uint32_t fault_rate = 0; // pages per second
    int advice = 0;
    uint8_t backing = 0, phase = 0;
};

// Called by the sampler thread every tick: rewrites the file when
// kLivePeriodNs have passed since the last write.
void stats_live_tick(uint64_t now_ns);
// Removes this process's file (exit).
void stats_live_remove();

// The snapshot as one JSON line into buf[cap]; lists as many of the n
// regions as fit and says how many of the process's `total` live regions
// were left out ("unlisted"). Returns the length, or 0 when not even the
// head fits.
size_t stats_live_format(char *buf, size_t cap, pid_t pid, uint64_t now_ns, const LiveRegion *regions,
                         size_t n, size_t total);

// "spillway-live-<pid>.json" into buf.
void stats_live_name(char *buf, size_t cap, pid_t pid);

} // namespace spillway
