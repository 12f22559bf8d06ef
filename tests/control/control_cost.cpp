// control_cost.cpp — prints what each spillway_* call costs on a 1 GiB and a
// 16 GiB region. Not a test (it asserts nothing and is not registered):
// run it by hand, on a quiet machine, with a spill directory on a disk with
// room for about 20 GiB:
//
//   SPILLWAY_DIR=/var/tmp/spillway-cost SPILLWAY_THRESHOLD=1MiB (continued:)
//     build/tests/control/control_cost [GiB ...]      (default: 1 16)
//
// The 1 GiB region is written in full; a larger one is written sparsely (one
// page in 16, with MADV_RANDOM), so its dirty page cache stays near 1 GiB
// whatever its size. Each figure is one call, timed with CLOCK_MONOTONIC;
// "residency (mincore)" is measured over the region plus one page, which
// forces the mincore path instead of cachestat. Set SPILLWAY_POLICY=anon to
// also time the spill of anonymous memory.
#include "spillway.h"
#include "support.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace control_test;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

template <typename F> double time_ms(F &&f) {
    auto t = Clock::now();
    f();
    return ms_since(t);
}

void row(const char *what, double ms, const std::string &note = "") {
    printf("  %-46s %11.3f ms  %s\n", what, ms, note.c_str());
}

std::string mib(long bytes) { return bytes < 0 ? "error " + std::to_string(bytes) : std::to_string(bytes >> 20) + " MiB resident"; }
std::string rc_of(long rc) { return "rc " + std::to_string(rc); }

void touch(char *p, size_t size, size_t stride, uint8_t value) {
    for (size_t off = 0; off < size; off += stride) memset(p + off, value, page_size());
}

// Every figure is taken first and printed after, so a note never shows the
// result of an earlier call.
void measure(size_t gib) {
    const size_t size = gib * GiB;
    const bool full = gib <= 1;
    const size_t stride = full ? page_size() : 16 * page_size();
    // A sparse writer gets MADV_RANDOM (RANDOM_ACCESS): without it every
    // write fault reads the disk's readahead window around it, and one page
    // in 16 written makes the whole file resident.
    const unsigned flags = SPILLWAY_PREFER_DISK | (full ? 0 : SPILLWAY_RANDOM_ACCESS);
    printf("\n%zu GiB disk region, %s\n", gib,
           full ? "written in full" : "one page in 16 written (MADV_RANDOM)");
    long rc = 0;
    double t;
    char *p = nullptr;
    t = time_ms([&] { p = (char *)spillway_alloc(size, flags); });
    row("spillway_alloc", t, p ? "" : "FAILED");
    if (!p) return;
    t = time_ms([&] { touch(p, size, stride, 1); });
    row("(writing it, for scale)", t);
    t = time_ms([&] { rc = spillway_is_active(); });
    row("spillway_is_active", t);
    t = time_ms([&] { rc = spillway_backing(p + size / 2); });
    row("spillway_backing (interior pointer)", t, "-> " + std::to_string(rc));
    t = time_ms([&] { rc = spillway_is_disk_backed(p + size - 1); });
    row("spillway_is_disk_backed", t, "-> " + std::to_string(rc));
    t = time_ms([&] { rc = spillway_residency(p, size); });
    row("spillway_residency (cachestat)", t, mib(rc));
    t = time_ms([&] { rc = spillway_residency(p, size + page_size()); });
    row("spillway_residency (mincore)", t, mib(rc));
    t = time_ms([&] { rc = spillway_release_page_cache(p); });
    row("spillway_release_page_cache (all dirty)", t, rc_of(rc));
    t = time_ms([&] { rc = spillway_residency(p, size); });
    row("spillway_residency after release", t, mib(rc));
    touch(p, size, stride * 16, 2);
    t = time_ms([&] { rc = spillway_release_page_cache(p); });
    row("spillway_release_page_cache (1/16 re-dirtied)", t, rc_of(rc));
    t = time_ms([&] { rc = spillway_release_page_cache(p); });
    row("spillway_release_page_cache (clean, cold)", t, rc_of(rc));
    t = time_ms([&] { rc = spillway_spill(p); });
    row("spillway_spill (already on disk)", t, rc_of(rc));
    char path[4096] = "";
    t = time_ms([&] { rc = spillway_export(p, path, sizeof path); });
    row("spillway_export (dedicated file: a link)", t, rc_of(rc));
    t = time_ms([&] { rc = spillway_has_live_mapping(path); });
    row("spillway_has_live_mapping", t, "-> " + std::to_string(rc));
    char *m = nullptr;
    t = time_ms([&] { m = (char *)spillway_map(path, size); });
    row("spillway_map", t, m ? "" : "FAILED");
    if (m) {
        t = time_ms([&] { rc = spillway_release_page_cache(m); });
        row("spillway_release_page_cache (the map, clean)", t, rc_of(rc));
        t = time_ms([&] { free(m); });
        row("free (a mapped region: queued to the reaper)", t);
    }
    free(p);
    eventually([&] { return spillway_has_live_mapping(path) == 0; });
    t = time_ms([&] { rc = spillway_release_page_cache_by_path(path); });
    row("spillway_release_page_cache_by_path", t, rc_of(rc));
    unlink(path);

    // Moving RAM to disk: a memfd region written the same way.
    char *q = nullptr;
    t = time_ms([&] { q = (char *)spillway_alloc(size, SPILLWAY_PREFER_MEMORY); });
    row("spillway_alloc(PREFER_MEMORY)", t, q ? "" : "FAILED");
    if (q) {
        touch(q, size, stride, 3);
        t = time_ms([&] { rc = spillway_residency(q, size); });
        row("spillway_residency (memfd: mincore)", t, mib(rc));
        t = time_ms([&] { rc = spillway_spill(q); });
        row("spillway_spill (memfd -> disk)", t, rc_of(rc));
        t = time_ms([&] { rc = spillway_export(q, path, sizeof path); });
        row("spillway_export (after that spill)", t, rc_of(rc));
        free(q);
        unlink(path);
    }
    // And anonymous memory: malloc under SPILLWAY_POLICY=anon.
    if (const char *pol = getenv("SPILLWAY_POLICY"); pol && strcmp(pol, "anon") == 0) {
        char *a = (char *)malloc(size);
        if (a && spillway_backing(a) == SPILLWAY_ANON) {
            touch(a, size, stride, 4);
            t = time_ms([&] { rc = spillway_spill(a); });
            row("spillway_spill (anon -> disk)", t, rc_of(rc));
            t = time_ms([&] { rc = spillway_export(a, path, sizeof path); });
            row("spillway_export (after that spill)", t, rc_of(rc));
            unlink(path);
        }
        free(a);
    }
    unsetenv("SPILLWAY_PREPARED");
    t = time_ms([&] { rc = spillway_prepare_dir(); });
    row("spillway_prepare_dir", t, rc_of(rc));
}

} // namespace

int main(int argc, char **argv) {
    if (!spillway_is_active()) {
        fprintf(stderr, "control_cost: the shim is not active; run the program as built (it links "
                        "libspillway) with SPILLWAY_DIR on a disk with room for the regions\n");
        return 1;
    }
    printf("spillway control API: cost of one call (SPILLWAY_DIR=%s)\n", getenv("SPILLWAY_DIR"));
    if (argc < 2) {
        measure(1);
        measure(16);
    }
    for (int i = 1; i < argc; i++) measure(strtoull(argv[i], nullptr, 10));
    return 0;
}
