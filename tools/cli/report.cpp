// report.cpp — `spillway report FILE`: sums up a recording made with
// `spillway run --record FILE` (record_summary.h) on stdout.
//
// Invariant: the file is only read; a file that is not a recording (no
// head line and no sample) is a failure with one line saying so.
#include "cli.h"
#include "commands.h"
#include "record_summary.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

namespace spillway::cli {

static const char kReportHelp[] =
    "usage: spillway report FILE\n\n"
    "Sums up a recording made with 'spillway run --record FILE': the command and how\n"
    "it ended; per cgroup the peak usage against the limit and when, the peaks of\n"
    "anon/file/shmem/dirty/writeback and of pressure; per detected access phase the\n"
    "major faults and bytes read (split among a process's regions by the pages each\n"
    "faulted in); per process its rank, peak resident and reserved bytes, major\n"
    "faults and bytes read.\n";

int report_command(const Args &args) {
    Options o("report", args);
    std::string path;
    while (!o.done()) {
        if (o.flag("--help", "-h")) {
            std::cout << kReportHelp;
            return kExitOk;
        }
        if (o.at_option()) return usage_error("report", "unknown option " + o.peek());
        if (!path.empty()) return usage_error("report", "one recording at a time, got " + path + " and " + o.peek());
        path = o.take();
    }
    if (path.empty()) return usage_error("report", "no file given; try: spillway report run.jsonl");
    std::ifstream in(path);
    if (!in) return fail("report", "cannot read " + path + ": " + strerror(errno));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    RecordSummary s = summarize_record(lines);
    if (s.command.empty() && s.samples == 0)
        return fail("report", path + " is not a recording (make one with: spillway run --record FILE -- COMMAND)");
    for (const std::string &line : render_record_summary(s)) std::cout << line << "\n";
    return kExitOk;
}

} // namespace spillway::cli
