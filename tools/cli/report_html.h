// report_html.h — `spillway report FILE -o report.html`: a recording
// (recorder.h) as one self-contained HTML page of inline SVG charts:
//   - per cgroup, memory by kind over time (usage, anon, file, shmem,
//     dirty, writeback) with the limit as a dashed line;
//   - per process, each region's resident bytes over time (its reserved
//     length dashed), and each region's fault rate with the process's major
//     faults per second;
//   - markers for fallbacks (a process's fallback count went up) and moves
//     (a region, known by pid and start, changed backing between samples),
//     and the job's exit (time and status), on every chart.
//
// Invariant: pure (lines in, HTML out) and self-contained: no script, no
// link, no reference to any URL; every tag is closed so the page parses as
// XML too. Chart coordinates are a fixed linear map (chart_x/chart_y) so a
// test can find each sample's point in the polyline.
#pragma once

#include <string>
#include <vector>

namespace spillway::cli {

// Plot area of every chart, in SVG user units (pixels).
struct ChartFrame {
    static constexpr double left = 70, top = 30, width = 720, height = 220;
};

// Where time t (s) and value v land, given the axis maxima the chart chose.
double chart_x(double t, double t_max);
double chart_y(double v, double v_max);

// The axis maximum for values up to `peak`: a 1, 2 or 5 times a power of
// ten multiple of a tick step, with 5 or fewer ticks (peak 0 gives 1).
double nice_axis_max(double peak, double &step);

// The page; false and a one-line reason when the lines hold no sample.
bool render_report_html(const std::vector<std::string> &lines, std::string &html, std::string &error);

} // namespace spillway::cli
