// control_helper.cpp — the second process of the multi-process control
// tests. It proves nothing by itself: each subcommand does one thing another
// process must do (map an exported file, prepare the spill directory, run in
// a memory cgroup, run with the shim inactive) and prints what it saw, one
// "key=value" line or one reply per command, for the test to assert on.
//
//   peer PATH SIZE         map PATH, then serve commands from stdin:
//                          expect OFF LEN SEED | fill OFF LEN SEED | release |
//                          live | free | quit
//   prepare                spillway_prepare_dir()
//   export-new SIZE        allocate SIZE on disk, export it, print the path
//   cgroup-release SIZE USAGE_FILE
//                          write SIZE bytes, release them, report USAGE_FILE
//   alloc-random SIZE      spillway_alloc(SIZE, SPILLWAY_RANDOM_ACCESS)
//   inactive               call every function (the test made the shim inactive)
//   inactive-queries       the queries the Python reference API uses, inactive too
//   write-churn ROUNDS     8 threads write whole disk regions, realloc and free
//                          them, checking every page; prints "intact=0|1
//                          regions=N writeback_thread=0|1"
//   zero-then-fill SRC_MIB a buffer of 2 x SRC_MIB zeroed, then two threads
//                          write each its half from a source of SRC_MIB, as
//                          XGBoost builds its DMatrix (tests/bench/zero_fill.c);
//                          checks every word; prints "intact=0|1
//                          wrong_words=N waited_ms=N"
#include "spillway.h"
#include "memcg.h"
#include "support.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <dirent.h>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>

using namespace control_test;

namespace {

int usage() {
    fprintf(stderr, "control_helper: unknown or incomplete command; see the opening comment of "
                    "tests/control/control_helper.cpp\n");
    return 2;
}

const char *marker() {
    const char *m = getenv("SPILLWAY_PREPARED");
    return m ? m : "(unset)";
}

int peer(const char *path, size_t size) {
    errno = 0;
    char *p = (char *)spillway_map(path, size);
    if (!p) {
        printf("error errno=%d\n", errno);
        return 1;
    }
    printf("mapped backing=%d\n", spillway_backing(p));
    fflush(stdout);
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        unsigned long long off = 0, len = 0, seed = 0;
        if (sscanf(line, "expect %llu %llu %llu", &off, &len, &seed) == 3) {
            size_t bad = first_mismatch(p, off, len, seed);
            if (bad == SIZE_MAX) printf("ok\n");
            else printf("mismatch at %zu\n", bad);
        } else if (sscanf(line, "fill %llu %llu %llu", &off, &len, &seed) == 3) {
            fill(p, off, len, seed);
            printf("done\n");
        } else if (strncmp(line, "release", 7) == 0) {
            printf("%d\n", spillway_release_page_cache(p));
        } else if (strncmp(line, "live", 4) == 0) {
            printf("%d\n", spillway_has_live_mapping(path));
        } else if (strncmp(line, "free", 4) == 0) {
            free(p);
            p = nullptr;
            printf("freed\n");
        } else if (strncmp(line, "quit", 4) == 0) {
            return 0;
        } else {
            printf("unknown command\n");
        }
        fflush(stdout);
    }
    return 0;
}

int export_new(size_t size) {
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    if (!p) {
        printf("rc=alloc-failed\n");
        return 1;
    }
    fill(p, 0, size, 7);
    char path[4096];
    int rc = spillway_export(p, path, sizeof path);
    printf("rc=%d path=%s marker=%s pid=%d\n", rc, rc == 0 ? path : "", marker(), (int)getpid());
    return 0;
}

int cgroup_release(size_t size, const std::string &usage_file) {
    uint64_t before = read_u64_file(usage_file);
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    if (!p) {
        printf("alloc-failed\n");
        return 1;
    }
    fill(p, 0, size, 11);
    long res_written = spillway_residency(p, size);
    uint64_t written = read_u64_file(usage_file);
    int rc = spillway_release_page_cache(p);
    long res_released = spillway_residency(p, size);
    uint64_t released = read_u64_file(usage_file);
    bool intact = first_mismatch(p, 0, size, 11) == SIZE_MAX;
    printf("backing=%d before=%llu written=%llu released=%llu rc=%d res_written=%ld "
           "res_released=%ld intact=%d\n",
           spillway_backing(p), (unsigned long long)before, (unsigned long long)written,
           (unsigned long long)released, rc, res_written, res_released, intact ? 1 : 0);
    return 0;
}

int alloc_random(size_t size) {
    void *p = spillway_alloc(size, SPILLWAY_RANDOM_ACCESS);
    printf("backing=%d\n", p ? spillway_backing(p) : -1);
    return 0;
}

int inactive() {
    // Small: the test's RLIMIT_AS leaves room for these but not for the arena.
    const size_t n = 8 * MiB;
    char *big = (char *)malloc(n);
    char *placed = (char *)spillway_alloc(n, SPILLWAY_PREFER_DISK);
    if (placed) fill(placed, 0, n, 3); // usable memory, whatever its home
    char path[4096] = "";
    errno = 0;
    void *mapped = spillway_map("/etc/hostname", 4096);
    int map_errno = errno;
    printf("active=%d\n", spillway_is_active());
    printf("backing=%d\n", spillway_backing(big));
    printf("disk=%d\n", spillway_is_disk_backed(big));
    printf("release=%d\n", spillway_release_page_cache(big));
    printf("spill=%d\n", spillway_spill(big));
    printf("export=%d\n", spillway_export(big, path, sizeof path));
    printf("alloc=%s\n", placed && first_mismatch(placed, 0, n, 3) == SIZE_MAX ? "usable" : "null");
    printf("alloc_backing=%d\n", placed ? spillway_backing(placed) : -1);
    printf("map=%s errno=%d\n", mapped ? "mapped" : "null", map_errno);
    free(placed);
    free(big);
    return 0;
}

int inactive_queries() {
    errno = 0;
    void *required = spillway_alloc_disk(64 * MiB, 0);
    printf("require_disk=%s errno=%d\n", required ? "buffer" : "null", errno);
    printf("threshold_is_max=%d\n", spillway_threshold() == SIZE_MAX ? 1 : 0);
    printf("can_spill=%d\n", spillway_can_spill());
    printf("memory_fits=%d\n", spillway_memory_fits(MiB));
    char *big = (char *)malloc(64 * MiB);
    printf("region=%d\n", spillway_region(big, nullptr, nullptr));
    free(big);
    return 0;
}

// Every page of [p, p+n) holds tag.
bool all_pages(const unsigned char *p, size_t n, unsigned char tag) {
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != tag) return false;
    return p[n - 1] == tag;
}

// Whole regions written, realloc'd and freed by 8 threads in a small
// cgroup: the writeback pacer unmaps and writes these regions meanwhile.
int write_churn(int rounds) {
    std::atomic<bool> intact{true};
    std::atomic<long> checked{0};
    auto worker = [&](unsigned seed) {
        std::mt19937_64 rng(seed);
        struct Slot {
            unsigned char *p = nullptr;
            size_t n = 0;
            unsigned char tag = 0;
        };
        std::vector<Slot> slots(12);
        for (int round = 0; round < rounds && intact; round++) {
            Slot &s = slots[rng() % slots.size()];
            if (s.p) {
                intact = intact && all_pages(s.p, s.n, s.tag);
                checked++;
                if (rng() % 3) {
                    free(s.p);
                    s.p = nullptr;
                    continue;
                }
                size_t n = MiB + rng() % (12 * MiB);
                unsigned char *q = (unsigned char *)realloc(s.p, n);
                if (!q) { intact = false; break; }
                intact = intact && all_pages(q, n < s.n ? n : s.n, s.tag);
                s.p = q;
                s.n = n;
            } else {
                s.n = MiB + rng() % (12 * MiB);
                s.p = (unsigned char *)malloc(s.n);
                if (!s.p) { intact = false; break; }
            }
            s.tag = (unsigned char)(1 + rng() % 250);
            memset(s.p, s.tag, s.n);
        }
        for (Slot &s : slots) {
            if (s.p) intact = intact && all_pages(s.p, s.n, s.tag);
            free(s.p);
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 8; t++) threads.emplace_back(worker, 11 + t);
    // The pacer's thread exists only where a memory limit binds (writeback.h).
    bool writeback_thread = false;
    for (auto &t : threads) t.join();
    if (DIR *d = opendir("/proc/self/task")) {
        while (struct dirent *e = readdir(d)) {
            std::string comm = "/proc/self/task/" + std::string(e->d_name) + "/comm";
            if (FILE *f = fopen(comm.c_str(), "r")) {
                char name[32] = "";
                if (fgets(name, sizeof name, f) && strncmp(name, "spillway-wb", 11) == 0) writeback_thread = true;
                fclose(f);
            }
        }
        closedir(d);
    }
    printf("intact=%d regions=%ld writeback_thread=%d\n", intact ? 1 : 0, checked.load(), writeback_thread ? 1 : 0);
    return 0;
}

// Bytes of this process's dirty pages dropped unwritten (/proc/self/io).
unsigned long long cancelled_write_bytes() {
    unsigned long long v = 0;
    if (FILE *f = fopen("/proc/self/io", "r")) {
        char line[128];
        while (fgets(line, sizeof line, f)) sscanf(line, "cancelled_write_bytes: %llu", &v);
        fclose(f);
    }
    return v;
}

// The writeback pacer leaves the zeros unwritten (tiering/zero_extents.h),
// and the two threads then store over them: no store may be lost to it, and
// each word must read back. The helper waits after zeroing (up to 5 s) until
// half of the zeros were dropped unwritten (in a cgroup that holds them, a
// pass is due before reclaim wakes the kernel's flushers, which would write
// them first): the test then knows the fill ran over zeroed units.
int zero_then_fill(size_t src_mib) {
    const size_t n = src_mib * MiB / 4; // floats in the source
    auto *src = (uint32_t *)malloc(n * 4);
    auto *dst = (uint64_t *)malloc(n * 8);
    if (!src || !dst) return 1;
    for (size_t i = 0; i < n; i++) src[i] = (uint32_t)(i * 2654435761u) | 1;
    const unsigned long long before = cancelled_write_bytes();
    memset(dst, 0, n * 8);
    int waited_ms = 0;
    while (cancelled_write_bytes() - before < n * 4 && waited_ms < 5000) {
        usleep(10000);
        waited_ms += 10;
    }
    auto half = [&](size_t from, size_t to) {
        for (size_t i = from; i < to; i++) dst[i] = (uint64_t)src[i] << 32 | (i % 64);
    };
    std::thread low(half, 0, n / 2), high(half, n / 2, n);
    low.join();
    high.join();
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += dst[i] != ((uint64_t)(uint32_t)((i * 2654435761u) | 1) << 32 | (i % 64));
    printf("intact=%d wrong_words=%zu waited_ms=%d\n", bad == 0 ? 1 : 0, bad, waited_ms);
    free(src);
    free(dst);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    std::string cmd = argv[1];
    if (cmd == "peer" && argc == 4) return peer(argv[2], strtoull(argv[3], nullptr, 10));
    if (cmd == "prepare") {
        int rc = spillway_prepare_dir();
        printf("rc=%d marker=%s pid=%d\n", rc, marker(), (int)getpid());
        return 0;
    }
    if (cmd == "export-new" && argc == 3) return export_new(strtoull(argv[2], nullptr, 10));
    if (cmd == "cgroup-release" && argc == 4)
        return cgroup_release(strtoull(argv[2], nullptr, 10), argv[3]);
    if (cmd == "alloc-random" && argc == 3) return alloc_random(strtoull(argv[2], nullptr, 10));
    if (cmd == "inactive") return inactive();
    if (cmd == "inactive-queries") return inactive_queries();
    if (cmd == "write-churn" && argc == 3) return write_churn(atoi(argv[2]));
    if (cmd == "zero-then-fill" && argc == 3) return zero_then_fill(strtoull(argv[2], nullptr, 10));
    return usage();
}
