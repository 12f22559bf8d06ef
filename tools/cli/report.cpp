// report.cpp — `spillway report FILE [-o report.html]`: sums up a recording
// made with `spillway run --record FILE` (record_summary.h) on stdout, or
// with -o writes it as one self-contained HTML page of charts (report_html.h).
//
// Invariant: the recording is only read; a file that is not a recording (no
// head line and no sample) is a failure with one line saying so; the page is
// written whole to a temporary name and renamed, so a failed write leaves no
// half page behind.
#include "cli.h"
#include "commands.h"
#include "record_summary.h"
#include "report_html.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace spillway::cli {

static const char kReportHelp[] =
    "usage: spillway report FILE [-o report.html]\n\n"
    "Sums up a recording made with 'spillway run --record FILE': the command and how\n"
    "it ended; per cgroup the peak usage against the limit and when, the peaks of\n"
    "anon/file/shmem/dirty/writeback and of pressure; per detected access phase the\n"
    "major faults and bytes read (split among a process's regions by the pages each\n"
    "faulted in); per process its rank, peak resident and reserved bytes, major\n"
    "faults and bytes read.\n\n"
    "  -o, --output PAGE  write one self-contained HTML page instead (no network, no\n"
    "                     script): cgroup memory by kind over time against the limit,\n"
    "                     each region's residency and fault rate, fallbacks and moves,\n"
    "                     and the job's exit\n";

// Writes text to path through path + ".tmp" and a rename.
static bool write_whole(const std::string &path, const std::string &text, std::string &error) {
    std::string temp = path + ".tmp";
    FILE *f = fopen(temp.c_str(), "we");
    if (!f) {
        error = "cannot write " + temp + ": " + strerror(errno) + " (choose a writable path for -o)";
        return false;
    }
    bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
    int saved = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok) saved = saved ? saved : errno;
    if (ok && rename(temp.c_str(), path.c_str()) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok) {
        unlink(temp.c_str());
        error = "cannot write " + path + ": " + strerror(saved) + " (check the disk has room and the path is writable)";
    }
    return ok;
}

int report_command(const Args &args) {
    Options o("report", args);
    std::string path, output;
    while (!o.done()) {
        if (o.flag("--help", "-h")) {
            std::cout << kReportHelp;
            return kExitOk;
        }
        if (auto v = o.value("--output", "-o")) {
            if (!o.error().empty()) return usage_error("report", o.error());
            if (v->empty()) return usage_error("report", "-o needs a file name; try: -o report.html");
            output = *v;
            continue;
        }
        if (o.at_option()) return usage_error("report", "unknown option " + o.peek());
        if (!path.empty()) return usage_error("report", "one recording at a time, got " + path + " and " + o.peek());
        path = o.take();
    }
    if (path.empty()) return usage_error("report", "no file given; try: spillway report run.jsonl");
    std::ifstream in(path);
    if (!in)
        return fail("report", "cannot read " + path + ": " + strerror(errno) +
                                  " (name a file that spillway run --record FILE wrote)");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    RecordSummary s = summarize_record(lines);
    if (s.command.empty() && s.samples == 0)
        return fail("report", path + " is not a recording (make one with: spillway run --record FILE -- COMMAND)");
    if (!output.empty()) {
        std::string html, error;
        if (!render_report_html(lines, html, error)) return fail("report", path + ": " + error);
        if (!write_whole(output, html, error)) return fail("report", error);
        return kExitOk;
    }
    for (const std::string &line : render_record_summary(s)) std::cout << line << "\n";
    return kExitOk;
}

} // namespace spillway::cli
