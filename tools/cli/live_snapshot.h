// live_snapshot.h — reads the shim's live snapshot of a running process
// (shim/stats_live.h: spillway-live-<pid>.json in its spill directory):
// each region's range, backing, phase, advice and fault rate.
//
// Where: the shim holds its spill directory open, so the file is looked for
// through every directory the process has open (/proc/PID/fd/N/NAME, which
// also works across mount namespaces), then in the directories given.
//
// Invariant: a snapshot is believed only when it parses and names the pid
// asked for; a missing one is reported as missing (the process has no disk
// region yet, so its sampler does not run, or it is not ours to read).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

struct LiveRegionView {
    uint64_t start = 0, len = 0;
    std::string backing, phase, advice;
    uint64_t phase_ms = 0;
    uint64_t fault_pages_s = 0;
};

struct LiveSnapshot {
    pid_t pid = 0;
    uint64_t mono_ns = 0;
    uint64_t live_bytes[3] = {}, peak_bytes[3] = {}; // disk, memory, anon
    uint64_t fallbacks = 0;
    uint64_t unlisted = 0;
    std::vector<LiveRegionView> regions;
};

std::optional<LiveSnapshot> parse_live_snapshot(const std::string &text);
std::optional<LiveSnapshot> find_live_snapshot(pid_t pid, const std::vector<std::string> &extra_dirs = {});

} // namespace spillway::cli
