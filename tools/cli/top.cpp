// top.cpp — `spillway top [--once] [--pid PID] [--interval SECONDS]`: a live
// view of every process running under the shim and of their cgroups.
//
// Invariants: the screen is redrawn with plain ANSI sequences (home, clear
// to end) and no curses; colour only when stdout is a terminal and NO_COLOR
// is unset or empty; the terminal is restored on every way out (q, Ctrl-C,
// SIGTERM, SIGHUP); --once prints one frame, measured over a short interval
// so the rates are real, and exits 0.
#include "cli.h"
#include "commands.h"
#include "job_sample.h"
#include "terminal.h"
#include "top_frame.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <unistd.h>

namespace spillway::cli {

static const char kTopHelp[] =
    "usage: spillway top [options]\n\n"
    "Shows, refreshed every second, every process running under the shim (found\n"
    "through /proc, with the live snapshot of its regions each one keeps in a memfd):\n"
    "major faults per second and bytes read per fault, resident against reserved\n"
    "bytes by backing (a disk region's resident is its page cache, Linux 6.5+), and\n"
    "its largest regions with the detected access phase and the advice in force;\n"
    "and for each memory cgroup (v1 or v2) usage against the limit,\n"
    "anon/file/shmem/dirty/writeback, fault and refault rates, and PSI.\n\n"
    "options:\n"
    "      --once            print one frame (rates over --interval) and exit\n"
    "      --pid PID         only PID and its descendants\n"
    "      --interval SECS   between frames (default 1; 0.1 to 60)\n"
    "  -h, --help            this text\n\n"
    "Keys: q quits (Ctrl-C too). NO_COLOR turns colour off.\n";

namespace {

std::string clock_text() {
    time_t now = time(nullptr);
    struct tm tm;
    localtime_r(&now, &tm);
    char buf[16];
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
}

bool color_wanted() {
    const char *no_color = getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

void print_frame(const JobSample &s, bool redraw) {
    FrameStyle style;
    style.color = color_wanted();
    style.clock = clock_text();
    std::string text = redraw ? "\033[H" : "";
    for (const std::string &line : render_frame(s, style)) text += line + (redraw ? "\033[K\n" : "\n");
    if (redraw) text += "\033[J";
    else text += "\n";
    std::cout << text << std::flush;
}

} // namespace

int top_command(const Args &args) {
    Options o("top", args);
    bool once = false;
    pid_t root = 0;
    double interval = 1.0;
    while (!o.done()) {
        if (o.flag("--help", "-h")) {
            std::cout << kTopHelp;
            return kExitOk;
        }
        if (o.flag("--once")) {
            once = true;
        } else if (auto v = o.value("--pid")) {
            char *end = nullptr;
            long pid = strtol(v->c_str(), &end, 10);
            if (o.error().empty() && (v->empty() || *end || pid <= 0))
                return usage_error("top", "--pid needs a process id, got \"" + *v + "\"");
            root = (pid_t)pid;
        } else if (auto v = o.value("--interval")) {
            char *end = nullptr;
            interval = strtod(v->c_str(), &end);
            if (o.error().empty() && (v->empty() || *end || !(interval >= 0.1 && interval <= 60)))
                return usage_error("top", "--interval needs seconds between 0.1 and 60, got \"" + *v + "\"");
        } else {
            return usage_error("top", "unknown argument " + o.peek());
        }
        if (!o.error().empty()) return usage_error("top", o.error());
    }
    if (root && kill(root, 0) != 0 && errno == ESRCH)
        return fail("top", "no process " + std::to_string(root) + " (check the pid with ps)");

    JobSampler sampler(root, interval);
    int interval_ms = (int)(interval * 1000);
    if (once) {
        sampler.take(); // the first look has no rates: measure over one interval
        usleep((useconds_t)interval_ms * 1000);
        print_frame(sampler.take(), false);
        return kExitOk;
    }
    bool redraw = isatty(STDOUT_FILENO);
    Terminal term;
    term.begin(redraw);
    if (redraw) std::cout << "\033[H\033[2J" << std::flush;
    sampler.take();
    for (;;) {
        int key = term.wait_key(interval_ms);
        if (key == Terminal::kStop || key == 'q' || key == 'Q') break;
        print_frame(sampler.take(), redraw);
    }
    term.restore();
    if (redraw) std::cout << "\n" << std::flush;
    return kExitOk;
}

} // namespace spillway::cli
