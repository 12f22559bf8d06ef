// live_snapshot.cpp — see live_snapshot.h.
#include "live_snapshot.h"

#include "json.h"
#include "proc_figures.h"
#include "stats_format.h"

#include <dirent.h>
#include <unistd.h>

namespace spillway::cli {

std::optional<LiveSnapshot> parse_live_snapshot(const std::string &text) {
    JsonValue v;
    std::string error;
    if (!parse_json(text, v, error) || v.kind != JsonValue::Kind::object) return std::nullopt;
    namespace key = stats_key;
    const JsonValue *pid = v.get(key::pid);
    const JsonValue *regions = v.get(key::regions);
    if (!pid || !pid->is_integer || !regions || regions->kind != JsonValue::Kind::array) return std::nullopt;
    LiveSnapshot s;
    s.pid = (pid_t)pid->integer;
    s.mono_ns = v.count(key::mono_ns);
    s.fallbacks = v.count(key::fallbacks);
    s.unlisted = v.count(key::unlisted);
    for (int b = 0; b < 3; b++) {
        if (const JsonValue *l = v.get(key::live_bytes)) s.live_bytes[b] = l->count(key::kBackings[b]);
        if (const JsonValue *p = v.get(key::peak_bytes)) s.peak_bytes[b] = p->count(key::kBackings[b]);
    }
    auto text_of = [](const JsonValue &o, const char *key) {
        const JsonValue *m = o.get(key);
        return m && m->kind == JsonValue::Kind::string ? m->text : std::string("?");
    };
    for (const JsonValue &r : regions->items) {
        if (r.kind != JsonValue::Kind::object) return std::nullopt;
        LiveRegionView view;
        view.start = r.count(key::start);
        view.len = r.count(key::len);
        view.backing = text_of(r, key::backing);
        view.phase = text_of(r, key::phase);
        view.advice = text_of(r, key::advice);
        view.phase_ms = r.count(key::phase_ms);
        view.fault_pages_s = r.count(key::fault_pages_s);
        if (const JsonValue *m = r.get(key::moving_to); m && m->kind == JsonValue::Kind::string)
            view.moving_to = m->text;
        s.regions.push_back(view);
    }
    return s;
}

bool is_live_memfd_link(const std::string &target) {
    return target == std::string("/memfd:") + stats_key::kLiveMemfdName + " (deleted)";
}

// Two identical reads that parse and name pid, within a few tries.
static std::optional<LiveSnapshot> read_stable(const std::string &path, pid_t pid) {
    for (int attempt = 0; attempt < 4; attempt++) {
        bool ok1 = false, ok2 = false;
        std::string a = read_text(path, &ok1);
        std::string b = read_text(path, &ok2);
        if (!ok1 || !ok2) return std::nullopt;
        if (a != b) continue;
        auto s = parse_live_snapshot(a);
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
        if ((found = read_stable(link, pid))) break;
    }
    closedir(d);
    return found;
}

} // namespace spillway::cli
