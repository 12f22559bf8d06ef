// stats.cpp — see stats.h.
#include "stats.h"

#include "callsite.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

Stats g_stats;

void stats_on_alloc(Backing b, size_t bytes) {
    g_stats.regions[(int)b].fetch_add(1, std::memory_order_relaxed);
    stats_on_grow(b, bytes);
}

void stats_on_grow(Backing b, size_t bytes) {
    int i = (int)b;
    g_stats.bytes[i].fetch_add(bytes, std::memory_order_relaxed);
    uint64_t live = g_stats.live_bytes[i].fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = g_stats.peak_bytes[i].load(std::memory_order_relaxed);
    while (live > peak && !g_stats.peak_bytes[i].compare_exchange_weak(peak, live)) {
    }
}

void stats_on_free(Backing b, size_t bytes) {
    g_stats.live_bytes[(int)b].fetch_sub(bytes, std::memory_order_relaxed);
    g_stats.frees.fetch_add(1, std::memory_order_relaxed);
}

void stats_on_fallback(Fallback why) {
    g_stats.fallbacks[(int)why].fetch_add(1, std::memory_order_relaxed);
}

void stats_on_move(Backing from, Backing to, size_t bytes, uint64_t move_ns, uint64_t pause_ns) {
    g_stats.live_bytes[(int)from].fetch_sub(bytes, std::memory_order_relaxed);
    uint64_t live = g_stats.live_bytes[(int)to].fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = g_stats.peak_bytes[(int)to].load(std::memory_order_relaxed);
    while (live > peak && !g_stats.peak_bytes[(int)to].compare_exchange_weak(peak, live)) {
    }
    if (to == Backing::disk) {
        g_stats.demotions.fetch_add(1, std::memory_order_relaxed);
        g_stats.demoted_bytes.fetch_add(bytes, std::memory_order_relaxed);
    } else {
        g_stats.promotions.fetch_add(1, std::memory_order_relaxed);
        g_stats.promoted_bytes.fetch_add(bytes, std::memory_order_relaxed);
    }
    g_stats.move_ns.fetch_add(move_ns, std::memory_order_relaxed);
    uint64_t longest = g_stats.longest_pause_ns.load(std::memory_order_relaxed);
    while (pause_ns > longest && !g_stats.longest_pause_ns.compare_exchange_weak(longest, pause_ns)) {
    }
}

void stats_after_fork_child() {
    for (int i = 0; i < 4; i++) {
        g_stats.regions[i].store(0);
        g_stats.bytes[i].store(0);
        g_stats.peak_bytes[i].store(g_stats.live_bytes[i].load());
    }
    for (auto &f : g_stats.fallbacks) f.store(0);
    g_stats.frees.store(0);
    g_stats.reallocs_in_place.store(0);
    g_stats.reallocs_moved.store(0);
    for (auto *c : {&g_stats.promotions, &g_stats.promoted_bytes, &g_stats.demotions, &g_stats.demoted_bytes,
                    &g_stats.move_ns, &g_stats.longest_pause_ns, &g_stats.tiering_cpu_ns})
        c->store(0);
    for (auto &r : g_stats.demote_reasons) r.store(0);
}

static std::string json_escape(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += (char)c;
        } else if (c < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += (char)c;
        }
    }
    return out;
}

static std::string command_line() {
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return "";
    for (ssize_t i = 0; i < n - 1; i++)
        if (buf[i] == 0) buf[i] = ' ';
    buf[n] = 0;
    return buf;
}

std::string stats_json() {
    auto by_backing = [](std::atomic<uint64_t> *v) {
        char buf[160];
        snprintf(buf, sizeof buf, "{\"disk\":%llu,\"memory\":%llu,\"anon\":%llu}",
                 (unsigned long long)v[1].load(), (unsigned long long)v[2].load(),
                 (unsigned long long)v[3].load());
        return std::string(buf);
    };
    std::string out = "{\"pid\":" + std::to_string(getpid()) + ",\"cmd\":\"" +
                      json_escape(command_line()) + "\"";
    // A rank of a distributed job (torchrun's variables), so a summary can
    // name the process by it. Read at exit, on the exiting thread.
    for (const char *var : {"RANK", "LOCAL_RANK"})
        if (const char *v = getenv(var))
            out += std::string(",\"") + (var[0] == 'R' ? "rank" : "local_rank") + "\":\"" + json_escape(v) + "\"";
    out += ",\"regions\":" + by_backing(g_stats.regions);
    out += ",\"bytes\":" + by_backing(g_stats.bytes);
    out += ",\"peak_bytes\":" + by_backing(g_stats.peak_bytes);
    out += ",\"live_bytes_at_exit\":" + by_backing(g_stats.live_bytes);
    out += ",\"fallbacks\":{";
    for (int i = 0; i < (int)Fallback::count_; i++) {
        if (i) out += ",";
        out += "\"" + std::string(fallback_name((Fallback)i)) + "\":" +
               std::to_string(g_stats.fallbacks[i].load());
    }
    out += "},\"frees\":" + std::to_string(g_stats.frees.load());
    out += ",\"reallocs_in_place\":" + std::to_string(g_stats.reallocs_in_place.load());
    out += ",\"reallocs_moved\":" + std::to_string(g_stats.reallocs_moved.load());
    auto n = [](const std::atomic<uint64_t> &v) { return std::to_string(v.load()); };
    out += ",\"tiering\":{\"promotions\":" + n(g_stats.promotions) + ",\"promoted_bytes\":" +
           n(g_stats.promoted_bytes) + ",\"demotions\":" + n(g_stats.demotions) + ",\"demoted_bytes\":" +
           n(g_stats.demoted_bytes) + ",\"demote_reasons\":{\"near_limit\":" + n(g_stats.demote_reasons[1]) +
           ",\"growing\":" + n(g_stats.demote_reasons[2]) + ",\"kernel_pressure\":" +
           n(g_stats.demote_reasons[3]) + "},\"move_ms\":" + std::to_string(g_stats.move_ns.load() / 1000000) +
           ",\"longest_pause_us\":" + std::to_string(g_stats.longest_pause_ns.load() / 1000) +
           ",\"controller_cpu_us\":" + std::to_string(g_stats.tiering_cpu_ns.load() / 1000) + "}";
    out += ",\"sites\":" + callsite_stats_json();
    out += "}";
    return out;
}

void stats_write_at_exit(const std::string &pattern) {
    if (pattern.empty()) return;
    std::string path;
    for (size_t i = 0; i < pattern.size(); i++) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
            path += std::to_string(getpid());
            i++;
        } else {
            path += pattern[i];
        }
    }
    std::string line = stats_json() + "\n";
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t ignored = write(fd, line.data(), line.size());
    (void)ignored;
    close(fd);
}

} // namespace spillway
