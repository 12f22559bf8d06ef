// top_frame.h — one frame of `spillway top` as text lines, from a sample.
//
// Layout: a head line, one block per cgroup (usage against limit, memory by
// kind, fault and refault rates, PSI), then one line per process (rank,
// faults per second, bytes read per fault, resident/reserved by backing)
// followed by its largest regions (backing, resident/reserved, for a disk
// region its dirty bytes, phase and how long it has held, advice, pages
// faulted in per second), and a note when a disk region's resident is its
// mapped pages only (no page-cache figure from the shim).
//
// Invariant: a pure function of the sample and the style (no clock, no
// terminal), so tests check exactly what a user would read; with color off
// the lines contain no escape sequence at all.
#pragma once

#include "job_sample.h"

#include <string>
#include <vector>

namespace spillway::cli {

struct FrameStyle {
    bool color = false;
    size_t regions_per_process = 6; // the largest ones; the rest are counted
    std::string clock;              // "18:42:07", shown in the head line
};

std::vector<std::string> render_frame(const JobSample &s, const FrameStyle &style);

} // namespace spillway::cli
