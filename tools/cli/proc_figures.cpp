// proc_figures.cpp — see proc_figures.h.
#include "proc_figures.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace spillway::cli {

std::string read_text(const std::string &path, bool *ok) {
    std::string out;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ok) *ok = fd >= 0;
    if (fd < 0) return out;
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && ok) *ok = false;
        if (n <= 0) break;
        out.append(buf, (size_t)n);
    }
    close(fd);
    return out;
}

bool maps_mention_shim(std::string_view maps_text) {
    for (size_t at = maps_text.find("/libspillway.so"); at != std::string_view::npos;
         at = maps_text.find("/libspillway.so", at + 1)) {
        size_t end = at + 15; // the name, then end of line, a version suffix, or " (deleted)" (replaced on disk)
        if (end == maps_text.size() || maps_text[end] == '\n' || maps_text[end] == '.' ||
            maps_text.substr(end, 10) == " (deleted)")
            return true;
    }
    return false;
}

static std::vector<pid_t> all_pids() {
    std::vector<pid_t> out;
    DIR *d = opendir("/proc");
    if (!d) return out;
    while (struct dirent *e = readdir(d))
        if (isdigit((unsigned char)e->d_name[0])) out.push_back((pid_t)atoi(e->d_name));
    closedir(d);
    return out;
}

std::map<pid_t, uint64_t> job_processes(const std::map<pid_t, uint64_t> &members) {
    std::map<pid_t, std::vector<pid_t>> children;
    std::map<pid_t, uint64_t> started;
    for (pid_t pid : all_pids()) {
        ProcCounters c;
        if (!parse_stat(read_text("/proc/" + std::to_string(pid) + "/stat"), c)) continue;
        children[c.ppid].push_back(pid);
        started[pid] = c.start_ticks;
    }
    std::map<pid_t, uint64_t> job;
    std::vector<pid_t> todo;
    for (auto [pid, start] : members) {
        auto it = started.find(pid);
        if (it != started.end() && (start == 0 || start == it->second)) todo.push_back(pid); // else: gone, pid reused
    }
    while (!todo.empty()) {
        pid_t p = todo.back();
        todo.pop_back();
        if (!job.emplace(p, started[p]).second) continue;
        for (pid_t c : children[p]) todo.push_back(c);
    }
    return job;
}

std::vector<pid_t> shim_processes(const std::set<pid_t> *among) {
    std::vector<pid_t> out;
    pid_t self = getpid();
    std::vector<pid_t> candidates = among ? std::vector<pid_t>(among->begin(), among->end()) : all_pids();
    for (pid_t pid : candidates) {
        if (pid == self) continue;
        bool ok = false;
        std::string maps = read_text("/proc/" + std::to_string(pid) + "/maps", &ok);
        if (ok && maps_mention_shim(maps)) out.push_back(pid);
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool parse_stat(std::string_view text, ProcCounters &out) {
    size_t close_paren = text.rfind(')'); // comm may itself hold ')' or spaces
    if (close_paren == std::string_view::npos) return false;
    std::vector<std::string_view> fields; // fields[0] is field 3 (state)
    size_t at = close_paren + 1;
    while (at < text.size() && fields.size() < 20) {
        while (at < text.size() && text[at] == ' ') at++;
        size_t end = text.find(' ', at);
        if (end == std::string_view::npos) end = text.size();
        if (end > at) fields.push_back(text.substr(at, end - at));
        at = end;
    }
    if (fields.size() < 10) return false;
    auto num = [](std::string_view s) { return strtoull(std::string(s).c_str(), nullptr, 10); };
    out.state = fields[0][0];
    out.ppid = (pid_t)num(fields[1]);
    out.flags = num(fields[6]);
    out.start_ticks = fields.size() >= 20 ? num(fields[19]) : 0;
    out.minflt = num(fields[7]);
    out.majflt = num(fields[9]);
    return true;
}

bool parse_io(std::string_view text, uint64_t &read_bytes) {
    size_t at = text.find("\nread_bytes:");
    if (at == std::string_view::npos) return false;
    read_bytes = strtoull(std::string(text.substr(at + 12, 32)).c_str(), nullptr, 10);
    return true;
}

bool read_counters(pid_t pid, ProcCounters &out) {
    std::string base = "/proc/" + std::to_string(pid);
    bool ok = false;
    std::string stat = read_text(base + "/stat", &ok);
    if (!ok || !parse_stat(stat, out)) return false;
    std::string io = read_text(base + "/io", &ok);
    out.io_known = ok && parse_io(io, out.read_bytes);
    return true;
}

std::vector<Vma> parse_smaps(std::string_view text) {
    std::vector<Vma> out;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string line(text.substr(at, end - at));
        at = end + 1;
        unsigned long long a, b, kb;
        char perms[8] = "";
        int path_at = -1;
        if (line.rfind("Rss:", 0) == 0) {
            if (!out.empty() && sscanf(line.c_str() + 4, "%llu", &kb) == 1) out.back().rss = kb * 1024;
        } else if (line.rfind("Anonymous:", 0) == 0) {
            if (!out.empty() && sscanf(line.c_str() + 10, "%llu", &kb) == 1) out.back().anonymous = kb * 1024;
        } else if (!line.empty() && isxdigit((unsigned char)line[0]) &&
                   sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %*s %n", &a, &b, perms, &path_at) >= 3 &&
                   line.find('-') < line.find(' ')) {
            Vma v{a, b, 0, 0, perms[0] == 'r' || perms[1] == 'w', ""};
            if (path_at > 0 && (size_t)path_at < line.size()) v.path = line.substr((size_t)path_at);
            out.push_back(std::move(v));
        }
    }
    return out;
}

std::vector<Vma> read_smaps(pid_t pid) { return parse_smaps(read_text("/proc/" + std::to_string(pid) + "/smaps")); }

// The sum of a per-mapping figure over [start, start+len), a mapping that
// straddles the range counting in proportion to its overlap.
static uint64_t prorated(const std::vector<Vma> &vmas, uint64_t start, uint64_t len, uint64_t Vma::*figure) {
    uint64_t end = start + len, sum = 0;
    for (const Vma &v : vmas) {
        uint64_t lo = std::max(v.start, start), hi = std::min(v.end, end);
        if (lo >= hi || v.end <= v.start) continue;
        uint64_t f = v.*figure;
        sum += (hi - lo == v.end - v.start) ? f : (uint64_t)((double)f * (double)(hi - lo) / (double)(v.end - v.start));
    }
    return sum;
}

uint64_t resident_in(const std::vector<Vma> &vmas, uint64_t start, uint64_t len) {
    return prorated(vmas, start, len, &Vma::rss);
}

uint64_t anonymous_in(const std::vector<Vma> &vmas, uint64_t start, uint64_t len) {
    return prorated(vmas, start, len, &Vma::anonymous);
}

// Whether a mapping maps what a region of that backing maps.
static bool maps_backing(const Vma &v, std::string_view backing) {
    bool memfd = v.path.rfind("/memfd:", 0) == 0, file = !v.path.empty() && v.path[0] == '/' && !memfd;
    if (backing == "disk") return file;
    if (backing == "memory") return memfd;
    if (backing == "anon") return v.path.empty();
    return true;
}

bool is_mapped(const std::vector<Vma> &vmas, uint64_t start, uint64_t len, std::string_view backing,
               std::string_view moving_to) {
    uint64_t covered = 0, end = start + len;
    for (const Vma &v : vmas) {
        uint64_t lo = std::max(v.start, start), hi = std::min(v.end, end);
        if (lo >= hi) continue;
        if (!v.accessible) return false;
        if (!maps_backing(v, backing) && (moving_to.empty() || !maps_backing(v, moving_to))) return false;
        covered += hi - lo;
    }
    return len > 0 && covered == len;
}

std::map<std::string, std::string> parse_environ(std::string_view text, const std::vector<std::string> &names) {
    std::map<std::string, std::string> out;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\0', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view entry = text.substr(at, end - at);
        at = end + 1;
        size_t eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        for (const std::string &n : names)
            if (entry.substr(0, eq) == n) out[n] = std::string(entry.substr(eq + 1));
    }
    return out;
}

std::map<std::string, std::string> read_environ(pid_t pid, const std::vector<std::string> &names) {
    return parse_environ(read_text("/proc/" + std::to_string(pid) + "/environ"), names);
}

std::string read_comm(pid_t pid) {
    std::string s = read_text("/proc/" + std::to_string(pid) + "/comm");
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s.empty() ? "?" : s;
}

} // namespace spillway::cli
