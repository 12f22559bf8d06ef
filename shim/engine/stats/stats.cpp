// stats.cpp — see stats.h.
#include "stats/stats.h"

#include "sites/callsite.h"
#include "json_quote.h"
#include "stats_format.h"

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

void stats_on_rehome(Backing from, Backing to, size_t bytes) {
    g_stats.live_bytes[(int)from].fetch_sub(bytes, std::memory_order_relaxed);
    uint64_t live = g_stats.live_bytes[(int)to].fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = g_stats.peak_bytes[(int)to].load(std::memory_order_relaxed);
    while (live > peak && !g_stats.peak_bytes[(int)to].compare_exchange_weak(peak, live)) {
    }
}

void stats_on_move(Backing from, Backing to, size_t bytes, uint64_t move_ns, uint64_t pause_ns) {
    stats_on_rehome(from, to, bytes);
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

void stats_on_zeroed(uint64_t bytes) { g_stats.writeback_zeroed_bytes.fetch_add(bytes, std::memory_order_relaxed); }

void stats_on_writeback_pass(uint64_t dirty_bytes, uint64_t unmapped_bytes, uint64_t ns) {
    g_stats.writeback_passes.fetch_add(1, std::memory_order_relaxed);
    g_stats.writeback_bytes.fetch_add(dirty_bytes, std::memory_order_relaxed);
    g_stats.writeback_unmapped_bytes.fetch_add(unmapped_bytes, std::memory_order_relaxed);
    g_stats.writeback_ns.fetch_add(ns, std::memory_order_relaxed);
}

void stats_on_arena(bool taken) {
    if (!taken) {
        g_stats.arenas_given.fetch_add(1, std::memory_order_relaxed);
        g_stats.arenas_in_use.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    g_stats.arenas_taken.fetch_add(1, std::memory_order_relaxed);
    uint64_t now = g_stats.arenas_in_use.fetch_add(1, std::memory_order_relaxed) + 1;
    uint64_t peak = g_stats.arenas_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_stats.arenas_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

void stats_on_arena_chunk() { g_stats.arena_chunks.fetch_add(1, std::memory_order_relaxed); }

void stats_on_snapshot_spill(uint64_t copies_bytes) {
    g_stats.snapshot_spills.fetch_add(1, std::memory_order_relaxed);
    g_stats.snapshot_spill_copies_bytes.fetch_add(copies_bytes, std::memory_order_relaxed);
}

void stats_on_prefetch(uint64_t read_bytes, uint64_t dropped_bytes) {
    if (read_bytes) g_stats.prefetch_read_bytes.fetch_add(read_bytes, std::memory_order_relaxed);
    if (dropped_bytes) g_stats.prefetch_dropped_bytes.fetch_add(dropped_bytes, std::memory_order_relaxed);
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
                    &g_stats.move_ns, &g_stats.longest_pause_ns, &g_stats.tiering_cpu_ns,
                    &g_stats.failed_promotions, &g_stats.failed_demotions, &g_stats.writeback_passes,
                    &g_stats.writeback_bytes, &g_stats.writeback_unmapped_bytes, &g_stats.writeback_ns,
                    &g_stats.writeback_zeroed_bytes, &g_stats.prefetch_read_bytes, &g_stats.prefetch_dropped_bytes,
                    &g_stats.arenas_taken, &g_stats.arenas_given, &g_stats.arena_chunks, &g_stats.snapshot_spills,
                    &g_stats.snapshot_spill_copies_bytes})
        c->store(0);
    // The child inherits the parent's arenas in use (a fork copies the
    // interpreter's heap): its peak starts there, as peak_bytes does.
    g_stats.arenas_peak.store(g_stats.arenas_in_use.load());
    for (auto &r : g_stats.demote_reasons) r.store(0);
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

std::string stats_json(const std::string &run_tag) {
    namespace key = stats_key;
    // ,"name": (every member after the first)
    auto member = [](const char *name) { return std::string(",\"") + name + "\":"; };
    auto by_backing = [](std::atomic<uint64_t> *v) {
        std::string o = "{";
        for (int b = 0; b < 3; b++) // Backing 1..3: disk, memory, anon
            o += std::string(b ? ",\"" : "\"") + key::kBackings[b] + "\":" + std::to_string(v[b + 1].load());
        return o + "}";
    };
    std::string out = std::string("{\"") + key::pid + "\":" + std::to_string(getpid());
    if (!run_tag.empty()) out += member(key::run) + json_quote(run_tag);
    out += member(key::cmd) + json_quote(command_line());
    // A rank of a distributed job (torchrun's variables), so a summary can
    // name the process by it. Read at exit, on the exiting thread.
    if (const char *v = getenv("RANK")) out += member(key::rank) + json_quote(v);
    if (const char *v = getenv("LOCAL_RANK")) out += member(key::local_rank) + json_quote(v);
    out += member(key::regions) + by_backing(g_stats.regions);
    out += member(key::bytes) + by_backing(g_stats.bytes);
    out += member(key::peak_bytes) + by_backing(g_stats.peak_bytes);
    out += member(key::live_bytes_at_exit) + by_backing(g_stats.live_bytes);
    out += member(key::fallbacks) + "{";
    for (int i = 0; i < (int)Fallback::count_; i++) {
        if (i) out += ",";
        out += "\"" + std::string(fallback_name((Fallback)i)) + "\":" +
               std::to_string(g_stats.fallbacks[i].load());
    }
    out += "}" + member(key::frees) + std::to_string(g_stats.frees.load());
    out += member(key::reallocs_in_place) + std::to_string(g_stats.reallocs_in_place.load());
    out += member(key::reallocs_moved) + std::to_string(g_stats.reallocs_moved.load());
    auto n = [](const std::atomic<uint64_t> &v) { return std::to_string(v.load()); };
    out += member(key::tiering) + "{\"" + key::promotions + "\":" + n(g_stats.promotions) +
           member(key::promoted_bytes) + n(g_stats.promoted_bytes) + member(key::demotions) +
           n(g_stats.demotions) + member(key::demoted_bytes) + n(g_stats.demoted_bytes) +
           ",\"demote_reasons\":{\"near_limit\":" + n(g_stats.demote_reasons[1]) +
           ",\"growing\":" + n(g_stats.demote_reasons[2]) + ",\"kernel_pressure\":" +
           n(g_stats.demote_reasons[3]) + "},\"move_ms\":" + std::to_string(g_stats.move_ns.load() / 1000000) +
           ",\"longest_pause_us\":" + std::to_string(g_stats.longest_pause_ns.load() / 1000) +
           ",\"controller_cpu_us\":" + std::to_string(g_stats.tiering_cpu_ns.load() / 1000) +
           member(key::failed_promotions) + n(g_stats.failed_promotions) + member(key::failed_demotions) +
           n(g_stats.failed_demotions) + "}";
    out += member(key::writeback) + "{\"" + key::passes + "\":" + n(g_stats.writeback_passes) +
           member(key::written_back_bytes) + n(g_stats.writeback_bytes) + member(key::unmapped_bytes) +
           n(g_stats.writeback_unmapped_bytes) + member(key::pass_ms) +
           std::to_string(g_stats.writeback_ns.load() / 1000000) + member(key::zeroed_bytes) +
           n(g_stats.writeback_zeroed_bytes) + "}";
    out += member(key::prefetch) + "{\"" + key::read_bytes + "\":" + n(g_stats.prefetch_read_bytes) +
           member(key::dropped_bytes) + n(g_stats.prefetch_dropped_bytes) + "}";
    out += member(key::python_arenas) + "{\"" + key::taken + "\":" + n(g_stats.arenas_taken) +
           member(key::given_back) + n(g_stats.arenas_given) + member(key::peak) + n(g_stats.arenas_peak) +
           member(key::chunks) + n(g_stats.arena_chunks) + "}";
    out += member(key::fork) + "{\"" + key::snapshot_spills + "\":" + n(g_stats.snapshot_spills) +
           member(key::snapshot_spill_copies_bytes) + n(g_stats.snapshot_spill_copies_bytes) + "}";
    out += member(key::sites) + callsite_stats_json();
    out += "}";
    return out;
}

void stats_write_at_exit(const std::string &pattern, const std::string &run_tag) {
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
    std::string line = stats_json(run_tag) + "\n";
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t ignored = write(fd, line.data(), line.size());
    (void)ignored;
    close(fd);
}

} // namespace spillway
