// live_snapshot.h — reads the shim's live snapshot of a running process
// (shim/engine/stats/stats_live.h: a memfd named "spillway-live" that the process keeps
// open): each region's range, backing, phase, advice and fault rate.
//
// Where: the descriptor of /proc/PID/fd whose link reads
// "/memfd:spillway-live (deleted)", opened through /proc/PID/fd/N (which
// also works across mount namespaces, into containers).
//
// Invariant: a snapshot is believed only when it is whole, parses and
// names the pid asked for (a fork child may still hold its parent's memfd;
// the writer may be halfway through a rewrite). Whole: the length and hash
// its head gives hold (shim/common/text_sum.h: a torn read is told for
// sure); a shim older than that head writes none, and its text is believed
// when two reads in a row give the same text. A missing one is reported as
// missing (the process has no disk region yet, so its sampler does not
// run, or it is not ours to read).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

struct LiveRegionView {
    uint64_t start = 0, len = 0;
    std::string backing, phase, advice;
    std::string moving_to; // while a move is under way: where to ("" otherwise; backing is where from)
    bool is_private = false; // a fork child's copy-on-write view of a region it inherited
    // A disk region's page cache as the shim measured it (cachestat) when
    // it wrote the snapshot; unknown before Linux 6.5 and from older shims.
    bool cache_known = false;
    uint64_t cached = 0, dirty = 0;
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

// nullopt for text that does not parse, or whose text_sum head does not
// hold (a torn read).
std::optional<LiveSnapshot> parse_live_snapshot(const std::string &text);
std::optional<LiveSnapshot> find_live_snapshot(pid_t pid);
// Whether a /proc/PID/fd link target is the shim's live memfd.
bool is_live_memfd_link(const std::string &target);
// pid as the process itself sees it (the last NSpid of /proc/PID/status:
// its own PID namespace's, a container's), or pid when the line is missing.
pid_t innermost_pid(std::string_view status_text, pid_t pid);

} // namespace spillway::cli
