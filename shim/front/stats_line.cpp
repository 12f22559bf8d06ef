// stats_line.cpp — see stats_line.h.
#include "stats_line.h"

#include "json_text.h"
#include "stats_format.h"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

namespace {

// A JSON line assembled into a fixed buffer: never overrun; once a piece
// does not fit, the line is cut and nothing more is added.
struct Out {
    char *buf;
    size_t cap;
    size_t used = 0;
    bool cut = false;
    void add(const char *text) {
        size_t n = strlen(text);
        if (cut || n >= cap - used) {
            cut = true;
            return;
        }
        memcpy(buf + used, text, n);
        used += n;
    }
    void member(const char *name) { // ,"name":
        add(",\"");
        add(name);
        add("\":");
    }
    void quoted(const char *text, size_t len) {
        if (cut) return;
        size_t n = json_quote_into(buf + used, cap - used, text, len);
        if (n >= cap - used) cut = true;
        else used += n;
    }
};

// The command line, arguments joined by spaces, as the engine reads it
// from /proc/self/cmdline: copied from the argv glibc hands the front's
// constructor (keep_command_line), before main. Why not the file at exit:
// its open, read and close were 1.5% of /bin/true's start-up under
// `spillway run` (docs/benchmarks.md). Why a copy: getopt permutes argv in
// place ("ls f -l" becomes "ls -l f"), the file does not.
char g_command[512];
size_t g_command_len = 0;

// A decimal number without snprintf (its first call in a process that
// never printed faults in and binds stdio's formatting).
const char *decimal(char *buf, size_t cap, long value) {
    char *end = buf + cap - 1, *p = end;
    *p = 0;
    unsigned long u = value < 0 ? 0ul - (unsigned long)value : (unsigned long)value;
    do *--p = (char)('0' + u % 10);
    while ((u /= 10) && p > buf + 1);
    if (value < 0) *--p = '-';
    return p;
}

} // namespace

void keep_command_line(const char *const *argv) {
    size_t n = 0, cap = sizeof g_command;
    for (int i = 0; argv && argv[i] && n + 1 < cap; i++) {
        if (i) g_command[n++] = ' ';
        for (const char *c = argv[i]; *c && n + 1 < cap; c++) g_command[n++] = *c;
    }
    g_command[n] = 0;
    g_command_len = n;
}

namespace {

constexpr int kStatsOpenFlags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
constexpr size_t kPathCap = 4096;

// The pattern with each %p replaced by the pid, opened. Apart and not
// inlined, and only for a pattern that needs it: its 4 KiB buffer in the
// destructor's frame put the calls below it (the lazy binding of write,
// whose saved register state is large) on a stack page start-up had not
// touched, one fault more at every exit.
__attribute__((noinline)) int open_expanded(const char *pattern, const char *pid) {
    char path[kPathCap];
    size_t n = 0;
    for (const char *c = pattern; *c && n + 24 < sizeof path; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            for (const char *d = pid; *d; d++) path[n++] = *d;
            c++;
        } else {
            path[n++] = *c;
        }
    }
    path[n] = 0;
    return open(path, kStatsOpenFlags, 0600);
}

// getenv's answer at exit, without getenv: start-up no longer calls it, so
// its first call here bound it lazily (see open_expanded for what that
// costs). The first of a name counts, as for getenv.
const char *env_value(const char *name) {
    for (char **e = environ; e && *e; e++) {
        const char *n = name, *entry = *e;
        while (*n && *n == *entry) n++, entry++;
        if (!*n && *entry == '=') return entry + 1;
    }
    return nullptr;
}

} // namespace

void write_empty_stats_line(const char *pattern, const char *run) {
    namespace key = stats_key;
    if (!pattern || !*pattern) return;
    char num[24];
    const char *pid = decimal(num, sizeof num, (long)getpid());
    bool expand = false; // the pattern names the pid, or is too long to be copied whole
    size_t len = 0;
    for (; pattern[len]; len++)
        if (pattern[len] == '%' && pattern[len + 1] == 'p') expand = true;
    expand = expand || len + 24 >= kPathCap;

    char line[2048];
    Out o{line, sizeof line - 1};
    o.add("{\"");
    o.add(key::pid);
    o.add("\":");
    o.add(pid);
    if (run && *run) { // right after the pid, as the engine writes it
        o.member(key::run);
        o.quoted(run, strlen(run));
    }
    o.member(key::cmd);
    o.quoted(g_command, g_command_len);
    if (const char *v = env_value("RANK")) {
        o.member(key::rank);
        o.quoted(v, strlen(v));
    }
    if (const char *v = env_value("LOCAL_RANK")) {
        o.member(key::local_rank);
        o.quoted(v, strlen(v));
    }
    static const char *const by_backing[] = {key::regions, key::bytes, key::peak_bytes, key::live_bytes_at_exit};
    static const char *const counts[] = {key::frees, key::reallocs_in_place, key::reallocs_moved};
    static const char *const moved[] = {key::promoted_bytes, key::demotions, key::demoted_bytes};
    for (const char *name : by_backing) {
        o.member(name);
        for (int b = 0; b < 3; b++) {
            o.add(b ? ",\"" : "{\"");
            o.add(key::kBackings[b]);
            o.add("\":0");
        }
        o.add("}");
    }
    o.member(key::fallbacks);
    int i = 0;
    for (const char *name : key::kFallbackNames) {
        o.add(i++ ? ",\"" : "{\"");
        o.add(name);
        o.add("\":0");
    }
    o.add("}");
    for (const char *name : counts) {
        o.member(name);
        o.add("0");
    }
    o.member(key::tiering);
    o.add("{\"");
    o.add(key::promotions);
    o.add("\":0");
    for (const char *name : moved) {
        o.member(name);
        o.add("0");
    }
    o.add(",\"demote_reasons\":{\"near_limit\":0,\"growing\":0,\"kernel_pressure\":0},\"move_ms\":0,"
          "\"longest_pause_us\":0,\"controller_cpu_us\":0}");
    o.member(key::sites);
    o.add("[]}\n");
    if (o.cut) return; // no half line

    int out = expand ? open_expanded(pattern, pid) : open(pattern, kStatsOpenFlags, 0600);
    if (out < 0) return;
    ssize_t ignored = write(out, line, o.used);
    (void)ignored;
    close(out);
}

} // namespace spillway
