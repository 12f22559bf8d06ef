// thread_churn.cpp — 8 threads mixing small and large malloc, calloc,
// realloc and free for a bounded number of rounds, each verifying its own
// bytes; afterwards no descriptor, mapping or spill file is left over.
// Run with SPILLWAY_THRESHOLD=1MiB and a private SPILLWAY_DIR.
#include "check.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
#include <malloc.h>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

static size_t count_entries(const char *dir) {
    size_t n = 0;
    if (DIR *d = opendir(dir)) {
        while (struct dirent *e = readdir(d))
            if (e->d_name[0] != '.') n++;
        closedir(d);
    }
    return n;
}

static size_t count_maps() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    size_t n = 0;
    while (std::getline(maps, line)) n++;
    return n;
}

static void worker(unsigned seed, std::atomic<bool> &failed) {
    std::mt19937_64 rng(seed);
    struct Slot {
        unsigned char *p = nullptr;
        size_t n = 0;
        unsigned char tag = 0;
    };
    std::vector<Slot> slots(64);
    for (int round = 0; round < 3000 && !failed; round++) {
        Slot &s = slots[rng() % slots.size()];
        if (s.p) {
            if (s.p[0] != s.tag || s.p[s.n - 1] != s.tag || s.p[s.n / 2] != s.tag) failed = true;
            if (rng() % 3 == 0) {
                size_t n = (rng() % 2) ? 16 + rng() % 4096 : (1 << 20) + rng() % (6 << 20);
                unsigned char *q = (unsigned char *)realloc(s.p, n);
                if (!q) { failed = true; break; }
                // The tagged bytes that survive the resize must be intact.
                if (q[0] != s.tag) failed = true;
                if (n >= s.n && (q[s.n - 1] != s.tag || q[s.n / 2] != s.tag)) failed = true;
                s.p = q;
                s.n = n;
            } else {
                free(s.p);
                s.p = nullptr;
                continue;
            }
        } else {
            size_t n = (rng() % 4) ? 16 + rng() % 8192 : (1 << 20) + rng() % (8 << 20);
            bool zero = rng() % 2;
            s.p = (unsigned char *)(zero ? calloc(1, n) : malloc(n));
            if (!s.p) { failed = true; break; }
            if (zero && (s.p[0] || s.p[n - 1] || s.p[n / 2])) failed = true;
            s.n = n;
        }
        s.tag = (unsigned char)(1 + rng() % 250);
        s.p[0] = s.p[s.n - 1] = s.p[s.n / 2] = s.tag;
    }
    for (Slot &s : slots) free(s.p);
}

static void churn(std::atomic<bool> &failed, unsigned seed) {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 8; t++) threads.emplace_back(worker, seed + t, std::ref(failed));
    for (auto &t : threads) t.join();
    usleep(300000); // let the reaper retire the last frees
}

int main() {
    const char *dir = getenv("SPILLWAY_DIR");
    CHECK(dir);
    std::atomic<bool> failed{false};
    // Round one (and this warm-up) bring up everything that legitimately
    // stays: the shim's threads, pool files and the learner's pagemap
    // descriptor, glibc's cached thread stacks.
    unsigned char *warm = (unsigned char *)malloc(16 << 20);
    memset(warm, 1, 16 << 20);
    usleep(400000); // the learner samples regions older than 50 ms, every 100 ms
    free(warm);
    churn(failed, 1000);
    CHECK(!failed);
    size_t fds = count_entries("/proc/self/fd"), maps = count_maps();
    // Round two must not add anything: no descriptor, mapping or file leaks.
    churn(failed, 2000);
    CHECK(!failed);
    size_t fds_after = count_entries("/proc/self/fd"), maps_after = count_maps();
    if (fds_after != fds || maps_after > maps + 2)
        fprintf(stderr, "fds %zu -> %zu, maps %zu -> %zu\n", fds, fds_after, maps, maps_after);
    if (getenv("DUMP_MAPS")) system(("cat /proc/" + std::to_string(getpid()) + "/maps > /tmp/churn.maps").c_str());
    CHECK(fds_after == fds);
    CHECK(maps_after <= maps + 2); // a VMA split or two may remain in the arena
    CHECK(count_entries(dir) == 0); // unnamed files only
    puts("thread_churn: ok");
    return 0;
}
