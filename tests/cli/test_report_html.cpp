// test_report_html.cpp — `spillway report -o`: the page of a synthetic
// recording holds each sample as a point of its series (at the coordinates
// chart_x/chart_y give), the limit line, the fallback and move markers and
// the exit; it is self-contained (no URL, no script) and escapes the
// command; a recording without samples is refused.
#include "report_html.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

using namespace spillway::cli;

namespace {

const double MiB = 1 << 20;

std::string sample(double t, int usage_mib, int resident_mib, int fault_rate, int fallbacks, const char *backing) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"t\":%.3f,\"cgroups\":[{\"name\":\"/job\",\"version\":2,\"known\":true,\"usage\":%llu,"
             "\"limit\":536870912,\"anon\":%llu,\"file\":%llu,\"shmem\":0,\"dirty\":0,\"writeback\":0,"
             "\"majfault_s\":null,\"refault_s\":null,\"psi\":null}],"
             "\"processes\":[{\"pid\":42,\"comm\":\"python3\",\"rank\":\"1\",\"local_rank\":null,\"cgroup\":\"/job\","
             "\"majflt\":0,\"read_bytes\":0,\"majflt_s\":%s,\"bytes_per_fault\":null,\"snapshot\":true,"
             "\"fallbacks\":%d,\"regions\":[{\"start\":4096,\"len\":67108864,\"resident\":%llu,\"backing\":\"%s\","
             "\"phase\":\"random\",\"advice\":\"random\",\"fault_pages_s\":%d}],\"unlisted\":0}]}",
             t, (unsigned long long)(usage_mib * MiB), (unsigned long long)(usage_mib * MiB / 2),
             (unsigned long long)(usage_mib * MiB / 4), t == 0 ? "null" : "7.0", fallbacks,
             (unsigned long long)(resident_mib * MiB), backing, fault_rate);
    return buf;
}

std::string xy(double t, double t_max, double v, double v_max) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.1f,%.1f", chart_x(t, t_max), chart_y(v, v_max));
    return buf;
}

// The points attribute of the polyline of series `label`.
std::string points_of(const std::string &html, const std::string &label) {
    size_t at = html.find("data-series=\"" + label + "\"");
    if (at == std::string::npos) return "";
    size_t from = html.find("points=\"", at) + 8;
    return html.substr(from, html.find('"', from) - from);
}

std::vector<std::string> recording() {
    return {
        "{\"spillway_record\":1,\"interval_s\":1.000,\"command\":[\"python3\",\"<b>&\"],\"started\":\"S\"}",
        sample(0, 100, 10, 0, 0, "disk"),
        sample(1, 200, 20, 100, 0, "disk"),
        sample(2, 300, 30, 50, 2, "memory"), // 2 fallbacks and a move at 2 s
        "{\"stats\":{\"pid\":42}}",
        "{\"exit\":{\"t\":2.500,\"status\":0,\"signal\":0}}",
    };
}

} // namespace

TEST_CASE("report html: nice axis maxima") {
    double step = 0;
    CHECK(nice_axis_max(2.5, step) == Approx(2.5));
    CHECK(step == Approx(0.5));
    CHECK(nice_axis_max(512, step) == Approx(600));
    CHECK(step == Approx(200));
    CHECK(nice_axis_max(0.7, step) == Approx(0.8)); // a 0.14 step rounds up to 0.2
    CHECK(step == Approx(0.2));
    CHECK(nice_axis_max(0, step) == 1);
}

TEST_CASE("report html: every sample is a point, with the limit, markers and exit") {
    std::string html, error;
    REQUIRE(render_report_html(recording(), html, error));
    CHECK(error.empty());
    // Time axis: 2.5 s (the exit) on a 0.5 s step; memory axis: the 512 MiB
    // limit on a 200 MiB step, so up to 600 MiB.
    const double t_max = 2.5, mem_max = 600;
    CHECK(points_of(html, "usage") ==
          xy(0, t_max, 100, mem_max) + " " + xy(1, t_max, 200, mem_max) + " " + xy(2, t_max, 300, mem_max));
    CHECK(points_of(html, "anon") ==
          xy(0, t_max, 50, mem_max) + " " + xy(1, t_max, 100, mem_max) + " " + xy(2, t_max, 150, mem_max));
    CHECK(points_of(html, "file") ==
          xy(0, t_max, 25, mem_max) + " " + xy(1, t_max, 50, mem_max) + " " + xy(2, t_max, 75, mem_max));
    char limit[160];
    snprintf(limit, sizeof limit, "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"limit\" data-value=\"536870912\"",
             chart_y(512, mem_max), ChartFrame::left + ChartFrame::width, chart_y(512, mem_max));
    CHECK(html.find(limit) != std::string::npos);
    CHECK(html.find("limit 512MiB") != std::string::npos);
    // The region: resident in MiB against its 64 MiB length (axis 80 MiB on
    // a 20 MiB step); the region's backing is the last seen.
    CHECK(points_of(html, "0x1000 memory 64.0MiB resident") ==
          xy(0, t_max, 10, 80) + " " + xy(1, t_max, 20, 80) + " " + xy(2, t_max, 30, 80));
    CHECK(points_of(html, "0x1000 memory 64.0MiB reserved") ==
          xy(0, t_max, 64, 80) + " " + xy(1, t_max, 64, 80) + " " + xy(2, t_max, 64, 80));
    // Fault rate: 100 pages/s peak, axis 100 on a 20 step; the process's
    // major faults/s has no point at 0 s (unknown on the first sample).
    CHECK(points_of(html, "0x1000 memory 64.0MiB pages faulted in/s") ==
          xy(0, t_max, 0, 100) + " " + xy(1, t_max, 100, 100) + " " + xy(2, t_max, 50, 100));
    CHECK(points_of(html, "process major faults/s") == xy(1, t_max, 7, 100) + " " + xy(2, t_max, 7, 100));
    // Markers and exit.
    CHECK(html.find("class=\"fallback\"><title>2.00 s: pid 42: 2 fallback(s)</title>") != std::string::npos);
    CHECK(html.find("class=\"move\"><title>2.00 s: pid 42 region 0x1000: disk to memory</title>") != std::string::npos);
    CHECK(html.find("exit status 0 at 2.5 s") != std::string::npos);
    CHECK(html.find("Markers: 1 fallback(s), 1 move(s).") != std::string::npos);
    CHECK(html.find("time since start (s)") != std::string::npos);
    CHECK(html.find("memory (MiB)") != std::string::npos);
    // Self-contained, and the command is escaped.
    CHECK(html.find("http://") == std::string::npos);
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("python3 &lt;b&gt;&amp;") != std::string::npos);
    CHECK(html.find("<b>&") == std::string::npos);
}

TEST_CASE("report html: a killed job, a cut-short recording, no samples") {
    std::vector<std::string> lines = recording();
    lines.back() = "{\"exit\":{\"t\":2.500,\"status\":137,\"signal\":9}}";
    std::string html, error;
    REQUIRE(render_report_html(lines, html, error));
    CHECK(html.find("killed by signal 9 at 2.5 s") != std::string::npos);
    lines.pop_back();
    REQUIRE(render_report_html(lines, html, error));
    CHECK(html.find("recording cut short at 2.0 s") != std::string::npos);
    CHECK(!render_report_html({lines[0]}, html, error));
    CHECK(error.find("holds no sample") != std::string::npos);
}

TEST_CASE("report html: a region whose resident was estimated is marked ~, with a note saying why") {
    std::vector<std::string> lines = recording();
    std::string html, error;
    REQUIRE(render_report_html(lines, html, error));
    CHECK(html.find("~ estimated") == std::string::npos);
    CHECK(points_of(html, "0x1000 memory 64.0MiB resident") != "");
    lines[2].insert(lines[2].find("\"resident\":"), "\"estimated\":true,"); // as run --record writes a prorated figure
    REQUIRE(render_report_html(lines, html, error));
    CHECK(points_of(html, "0x1000 memory 64.0MiB resident ~") != "");
    CHECK(html.find("<p class=\"note\">~ estimated: 1 region(s) marked ~") != std::string::npos);
}
