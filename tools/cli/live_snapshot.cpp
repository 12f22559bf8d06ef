// live_snapshot.cpp — see live_snapshot.h.
#include "live_snapshot.h"

#include "json.h"
#include "proc_figures.h"
#include "stats_format.h"
#include "text_sum.h"

#include <cstdlib>
#include <dirent.h>
#include <unistd.h>

namespace spillway::cli {

std::optional<LiveSnapshot> parse_live_snapshot(const std::string &text) {
    if (text_sum::check(text.data(), text.size()) == text_sum::Verdict::torn) return std::nullopt;
    std::optional<Json> parsed = parse_object(text);
    if (!parsed) return std::nullopt;
    const Json &v = *parsed;
    namespace key = stats_key;
    const Json *pid = member(v, key::pid);
    const Json *regions = member(v, key::regions);
    if (!pid || !pid->is_number_unsigned() || !regions || !regions->is_array()) return std::nullopt;
    LiveSnapshot s;
    s.pid = (pid_t)pid->get<uint64_t>();
    s.mono_ns = count(v, key::mono_ns);
    s.fallbacks = count(v, key::fallbacks);
    s.unlisted = count(v, key::unlisted);
    for (int b = 0; b < 3; b++) {
        if (const Json *l = member(v, key::live_bytes)) s.live_bytes[b] = count(*l, key::kBackings[b]);
        if (const Json *p = member(v, key::peak_bytes)) s.peak_bytes[b] = count(*p, key::kBackings[b]);
    }
    auto text_of = [](const Json &o, const char *key) {
        const Json *m = member(o, key);
        return m && m->is_string() ? m->get<std::string>() : std::string("?");
    };
    for (const Json &r : items(regions)) {
        if (!r.is_object()) return std::nullopt;
        LiveRegionView view;
        view.start = count(r, key::start);
        view.len = count(r, key::len);
        view.backing = text_of(r, key::backing);
        view.phase = text_of(r, key::phase);
        view.advice = text_of(r, key::advice);
        view.phase_ms = count(r, key::phase_ms);
        view.fault_pages_s = count(r, key::fault_pages_s);
        if (const Json *m = member(r, key::moving_to); m && m->is_string()) view.moving_to = m->get<std::string>();
        if (const Json *m = member(r, key::private_copy); m && m->is_boolean()) view.is_private = m->get<bool>();
        if (const Json *m = member(r, key::cached); m && m->is_number_unsigned()) {
            view.cache_known = true;
            view.cached = m->get<uint64_t>();
            view.dirty = count(r, key::dirty);
        }
        s.regions.push_back(view);
    }
    return s;
}

bool is_live_memfd_link(const std::string &target) {
    return target == std::string("/memfd:") + stats_key::kLiveMemfdName + " (deleted)";
}

pid_t innermost_pid(std::string_view status_text, pid_t pid) {
    size_t at = status_text.find("\nNSpid:");
    if (at == std::string_view::npos) return pid; // kernels before 4.1: one namespace assumed
    size_t end = status_text.find('\n', at + 1);
    std::string_view line = status_text.substr(at + 7, end == std::string_view::npos ? std::string_view::npos : end - at - 7);
    size_t last = line.find_last_not_of(" \t");
    if (last == std::string_view::npos) return pid;
    size_t first = line.find_last_of(" \t", last);
    first = first == std::string_view::npos ? 0 : first + 1;
    long v = strtol(std::string(line.substr(first, last + 1 - first)).c_str(), nullptr, 10);
    return v > 0 ? (pid_t)v : pid;
}

// A whole text (its head holds) that parses and names pid, within a few
// tries; from an older shim (no head), two identical reads that do.
static std::optional<LiveSnapshot> read_stable(const std::string &path, pid_t pid) {
    for (int attempt = 0; attempt < 8; attempt++) {
        bool ok = false;
        std::string a = read_text(path, &ok);
        if (!ok) return std::nullopt;
        text_sum::Verdict v = text_sum::check(a.data(), a.size());
        if (v == text_sum::Verdict::unsummed) {
            std::string b = read_text(path, &ok);
            if (!ok) return std::nullopt;
            if (a != b) continue;
        }
        auto s = v == text_sum::Verdict::torn ? std::nullopt : parse_live_snapshot(a);
        if (s && s->pid == pid) return s;
        if (!s) { // half a rewrite: give the writer a moment
            usleep(2000);
            continue;
        }
        return std::nullopt; // another process's (a fork child holding its parent's)
    }
    return std::nullopt;
}

std::optional<LiveSnapshot> find_live_snapshot(pid_t pid) {
    // The shim writes getpid(), its pid in its own namespace: a container's
    // process seen from the host has another.
    pid_t own = innermost_pid(read_text("/proc/" + std::to_string(pid) + "/status"), pid);
    std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR *d = opendir(fd_dir.c_str());
    if (!d) return std::nullopt;
    std::optional<LiveSnapshot> found;
    while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string link = fd_dir + "/" + e->d_name;
        char target[256];
        ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        if (!is_live_memfd_link(std::string(target, (size_t)n))) continue;
        if ((found = read_stable(link, own))) break;
    }
    closedir(d);
    return found;
}

} // namespace spillway::cli
