// tiering_job.cpp — the jobs of the tiering tests (test_tiering_cgroup.cpp)
// and of the tiering benchmark (tests/bench/tiering.sh). Linked against
// libspillway, run in a memory cgroup; each prints "key=value" lines.
//
//   first-run DATASET_MIB SCATTER_MIB WRITES_M [until-promoted]
//       fills a DATASET region in order, then writes WRITES_M million random
//       8-byte words into a SCATTER region (both from their own call site,
//       no profile: both start on disk); prints when the scatter region
//       became memory-backed, the scatter phase's time, and whether every
//       byte is intact. until-promoted: writes on past WRITES_M until the
//       region is promoted (10 s at most), so a fast disk cannot end the
//       phase before tiering acts.
//   temporaries COUNT MIB
//       a KEPT buffer of MIB filled, then COUNT temporaries of MIB, one
//       after another, each from one call site, filled, checked and freed
//       50 ms later (numpy's temporaries in scikit-learn's PCA, small);
//       the kept one is freed after 1.2 s. Prints each one's backing at
//       allocation and whether every byte was intact.
//   growth REGION_MIB GROW_MIB RATE_MIB_S [CHECK_PAGES]
//       places a REGION in memory (SPILLWAY_RANDOM_ACCESS), fills it, then
//       grows other anonymous memory (4 KiB mallocs) by GROW at RATE; prints
//       the region's backing before and after (once a move under way has
//       finished), whether the kernel's maps agree, how long reading its
//       first 64 MiB back in order took, and whether it is intact (every
//       page, or one word in CHECK_PAGES).
//   paced-fill REGION_MIB RATE_MIB_S
//       places a REGION in memory (SPILLWAY_PREFER_MEMORY) and fills it at
//       RATE, as a slow machine fills it (integration scenario 9 on a fresh
//       VM, issue 25), then waits 500 ms (five looks of the controller);
//       prints its backing, whether the kernel's maps agree over its whole
//       range, and whether it is intact.
//   learn-pair DATASET_MIB TABLE_MIB WRITES_M
//       the pair of issue 26's learning without memory pressure: fills a
//       DATASET region in order, fills a TABLE region in order with an
//       empty marker (a hash table's initialisation: every page mapped
//       before any scatter), then writes WRITES_M million random 8-byte
//       words into the TABLE, then reads the DATASET back in order; each
//       region from its own call site. Prints each region's backing at
//       allocation, the phases' times, and whether every byte is intact.
//       With a fifth argument "promoted": after the scatter, waits up to
//       10 s for the TABLE to be memory-backed (tiering, no limit: a region
//       in a random phase is promoted) and prints its backing then.
//   learn-quick DATASET_MIB TABLE_MIB WRITES
//       python_sites' pair in C: fills a DATASET region in order, then
//       makes WRITES random 8-byte writes into a fresh TABLE region (done
//       in a few ms, before the sampler first looks at it), then idles
//       600 ms (a few ticks) and reads both back; each region from its own
//       call site. Prints each region's backing at allocation and whether
//       every byte is intact.
//   hold REGION_MIB MS
//       places a REGION in memory (SPILLWAY_PREFER_MEMORY), fills it and
//       keeps it for MS (the controller looks every tiering.interval_ms);
//       prints its backing then, and whether it is intact.
//   want-promotion REGION_MIB SECONDS [hold]
//       a disk region written at random for SECONDS, 8 words every 5 ms
//       (enough for the detector, few enough pages that the run does not
//       wait on the disk); prints whether it was promoted (two of these run
//       in one cgroup). hold: then keeps the region (and a promotion's
//       claim) until its stdin ends, so that two of them overlap to the end
//       of the later one's SECONDS whatever the load (a write that waited
//       3 s for the disk once ran one past the other's exit).
//   reread BUFFERS BUF_MIB
//       issue 26's live job, small: BUFFERS buffers of BUF_MIB (malloc,
//       disk regions) filled in order and all kept, then read back in
//       order and checked. Halfway through buffer BUFFERS/2 the reader
//       pauses 300 ms (the detector looks every 10-20 ms) and prints how
//       much of the buffers it passed is still cached (passed_resident_mib,
//       spillway_residency); just before the last buffer, how much of that
//       one is; at the end the read phase's time and whether every word is
//       intact.
//   fork-rewrite REGION_MIB PASSES
//       a parent that rewrites a large buffer while a forked child keeps
//       its snapshot (issue 26's epochs job, small): fills a REGION (malloc,
//       a disk region), forks a child that waits, then rewrites every page
//       PASSES times (each page a copy of the parent's while the child
//       lives); then the child checks that it still sees the bytes of the
//       fork, and the parent that it sees its own. Prints the region's
//       backing and truth after the passes, the passes' time, child_ok and
//       intact.
//   growth-io ... and want-promotion-io ...
//       the same, while a thread pread(2)s 1 MiB from a file into the
//       region's last MiB over and over (the kernel's stores into a region
//       being moved, docs/moves.md); also prints io_calls, io_efault,
//       io_short, io_other (other errors), io_calls_before_move (calls made
//       before the new backing was seen) and io_intact (the last MiB holds
//       what the last call read).
#include "backing_truth.h"
#include "spillway.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kIoBytes = size_t(1) << 20;
constexpr size_t MiB = size_t(1) << 20;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// "ok" when the region's bytes live where the shim says, over its whole
// range (backing_truth.h), else what differs.
std::string truth(const void *p) {
    std::string lie = control_test::backing_lie(p);
    return lie.empty() ? "ok" : lie;
}

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

// The next of a xorshift64 sequence: the random index of every scatter.
uint64_t next_random(uint64_t &x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

// A thread pread(2)ing kIoBytes from a file into `into`, over and over.
struct IoLoop {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> calls{0}, efault{0}, shorts{0}, other{0};
    std::vector<char> bytes = std::vector<char>(kIoBytes);
    int fd = -1;
    char *into = nullptr;
    std::thread th;
    void start(char *dst) {
        into = dst;
        for (size_t i = 0; i < kIoBytes; i++) bytes[i] = (char)(i * 131 + 7);
        const char *dir = getenv("SPILLWAY_DIR");
        fd = open(dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 || pwrite(fd, bytes.data(), kIoBytes, 0) != (ssize_t)kIoBytes) {
            other++;
            return;
        }
        th = std::thread([this] {
            while (!stop.load(std::memory_order_relaxed)) {
                ssize_t got = pread(fd, into, kIoBytes, 0);
                if (got < 0 && errno == EFAULT) efault++;
                else if (got < 0) other++;
                else if (got != (ssize_t)kIoBytes) shorts++;
                calls++;
            }
            if (pread(fd, into, kIoBytes, 0) != (ssize_t)kIoBytes) other++; // after every move: final bytes
        });
    }
    void finish(uint64_t before_move) {
        stop = true;
        if (th.joinable()) th.join();
        if (fd >= 0) close(fd);
        printf("io_calls=%llu\nio_efault=%llu\nio_short=%llu\nio_other=%llu\nio_calls_before_move=%llu\n"
               "io_intact=%d\n",
               (unsigned long long)calls.load(), (unsigned long long)efault.load(),
               (unsigned long long)shorts.load(), (unsigned long long)other.load(), (unsigned long long)before_move,
               memcmp(into, bytes.data(), kIoBytes) == 0);
    }
};

// Separate functions: separate call sites, as a real job's two buffers;
// each keeps its own frame (a tail call to malloc would leave only main's).
// (and a tag of its own: identical functions would be folded into one name).
uint64_t *not_a_tail_call(void *p, int tag) {
    asm volatile("" ::"r"(tag) : "memory");
    return (uint64_t *)p;
}
__attribute__((noinline)) uint64_t *alloc_dataset(size_t n) { return not_a_tail_call(malloc(n), 1); }
__attribute__((noinline)) uint64_t *alloc_scatter(size_t n) { return not_a_tail_call(malloc(n), 2); }
__attribute__((noinline)) uint64_t *alloc_pair_dataset(size_t n) { return not_a_tail_call(malloc(n), 3); }
__attribute__((noinline)) uint64_t *alloc_pair_table(size_t n) { return not_a_tail_call(malloc(n), 4); }
__attribute__((noinline)) uint64_t *alloc_quick_dataset(size_t n) { return not_a_tail_call(malloc(n), 5); }
__attribute__((noinline)) uint64_t *alloc_quick_table(size_t n) { return not_a_tail_call(malloc(n), 6); }
__attribute__((noinline)) uint64_t *alloc_temporary(size_t n) { return not_a_tail_call(malloc(n), 7); }
__attribute__((noinline)) uint64_t *alloc_kept(size_t n) { return not_a_tail_call(malloc(n), 8); }

int first_run(size_t dataset_mib, size_t scatter_mib, size_t writes_m, bool until_promoted) {
    size_t dn = dataset_mib * MiB / 8, sn = scatter_mib * MiB / 8;
    uint64_t *data = alloc_dataset(dn * 8);
    uint64_t *scatter = alloc_scatter(sn * 8);
    if (!data || !scatter) return 3;
    printf("dataset_backing=%d\nscatter_backing=%d\n", spillway_backing(data), spillway_backing(scatter));
    auto t = Clock::now();
    for (size_t i = 0; i < dn; i++) data[i] = mix(i);
    printf("fill_ms=%.0f\n", ms_since(t));
    fflush(stdout);
    // The random phase: word k%sn... at random, each word only ever holds
    // mix(index) + 1, so the end state is checkable without a copy.
    auto t0 = Clock::now();
    double promoted_ms = -1;
    size_t writes = writes_m * 1000000, promoted_at = 0;
    uint64_t x = 88172645463325252ull;
    // writes_m million writes; with until_promoted, on until the promotion
    // (10 s at most): a faster disk than this one could end the writes
    // before tiering has looked, judged and pulled the region in.
    size_t k = 0;
    for (; k < writes || (until_promoted && promoted_ms < 0 && ms_since(t0) < 10000); k++) {
        size_t i = next_random(x) % sn;
        scatter[i] = mix(i) + 1;
        // Looked at every 256 writes: on disk they take up to a millisecond each.
        if (promoted_ms < 0 && (k & 255) == 0 && spillway_backing(scatter) == SPILLWAY_MEMORY) {
            promoted_ms = ms_since(t0);
            promoted_at = k;
        }
    }
    double scatter_ms = ms_since(t0);
    printf("promoted_after_ms=%.0f\npromoted_after_writes=%zu\nscatter_ms=%.0f\nscatter_writes=%zu\n", promoted_ms,
           promoted_at, scatter_ms, k);
    printf("scatter_backing_end=%d\n", spillway_backing(scatter));
    printf("scatter_truth=%s\n", truth(scatter).c_str());
    size_t bad = 0, touched = 0;
    for (size_t i = 0; i < sn; i++) {
        if (scatter[i]) touched++;
        if (scatter[i] && scatter[i] != mix(i) + 1) bad++;
    }
    for (size_t i = 0; i < dn; i += 97)
        if (data[i] != mix(i)) bad++;
    printf("touched_words=%zu\nbad_words=%zu\nintact=%d\n", touched, bad, bad == 0 && touched > sn / 4);
    free(scatter);
    free(data);
    return 0;
}

int learn_pair(size_t dataset_mib, size_t table_mib, size_t writes_m, bool wait_promoted) {
    size_t dn = dataset_mib * MiB / 8, tn = table_mib * MiB / 8;
    uint64_t *data = alloc_pair_dataset(dn * 8);
    uint64_t *table = alloc_pair_table(tn * 8);
    if (!data || !table) return 3;
    printf("dataset_backing=%d\ntable_backing=%d\n", spillway_backing(data), spillway_backing(table));
    fflush(stdout);
    auto t = Clock::now();
    // Paced to at least 10 ms per 8 MiB (640 ms for 512 MiB): the detector
    // looks every 100 ms and learns order only from looks that find the fill
    // under way, so a machine that filled in under two looks would learn
    // nothing about the dataset (256 MiB took 87 ms on an idle VM).
    constexpr size_t kChunk = 8 * MiB / 8;
    for (size_t c = 0; c * kChunk < dn; c++) {
        for (size_t i = c * kChunk; i < dn && i < (c + 1) * kChunk; i++) data[i] = mix(i);
        double due_ms = 10.0 * (double)(c + 1);
        if (double now = ms_since(t); now < due_ms)
            std::this_thread::sleep_for(std::chrono::microseconds((long)((due_ms - now) * 1000)));
    }
    printf("fill_ms=%.0f\n", ms_since(t));
    t = Clock::now();
    constexpr uint64_t kEmpty = ~0ull;
    for (size_t i = 0; i < tn; i++) table[i] = kEmpty;
    printf("table_init_ms=%.0f\n", ms_since(t));
    t = Clock::now();
    uint64_t x = 88172645463325252ull;
    // writes_m million writes, and on for at least 500 ms (five looks) on a
    // machine fast enough to make them sooner, for the reason the fill is paced.
    size_t writes = 0;
    for (;;) {
        for (size_t k = 0; k < 1000000; k++) {
            size_t i = next_random(x) % tn;
            table[i] = mix(i) + 1;
        }
        if (++writes >= writes_m && ms_since(t) >= 500) break;
    }
    printf("scatter_ms=%.0f\nscatter_writes_m=%zu\n", ms_since(t), writes);
    if (wait_promoted) {
        t = Clock::now();
        while (spillway_backing(table) != SPILLWAY_MEMORY && ms_since(t) < 10000)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        printf("table_backing_end=%d\nwaited_ms=%.0f\n", spillway_backing(table), ms_since(t));
    }
    t = Clock::now();
    size_t bad = 0, touched = 0;
    for (size_t i = 0; i < dn; i++)
        if (data[i] != mix(i)) bad++;
    printf("read_back_ms=%.0f\n", ms_since(t));
    for (size_t i = 0; i < tn; i++) {
        if (table[i] != kEmpty) touched++;
        if (table[i] != kEmpty && table[i] != mix(i) + 1) bad++;
    }
    printf("dataset_truth=%s\ntable_truth=%s\n", truth(data).c_str(), truth(table).c_str());
    printf("touched_words=%zu\nbad_words=%zu\nintact=%d\n", touched, bad, bad == 0 && touched > tn / 4);
    free(table);
    free(data);
    return 0;
}

int learn_quick(size_t dataset_mib, size_t table_mib, size_t writes) {
    size_t dn = dataset_mib * MiB / 8, tn = table_mib * MiB / 8;
    uint64_t *data = alloc_quick_dataset(dn * 8);
    if (!data) return 3;
    for (size_t i = 0; i < dn; i++) data[i] = mix(i);
    uint64_t *table = alloc_quick_table(tn * 8);
    if (!table) return 3;
    auto t = Clock::now();
    uint64_t x = 88172645463325252ull;
    for (size_t k = 0; k < writes; k++) {
        size_t i = next_random(x) % tn;
        table[i] = mix(i) + 1;
    }
    printf("scatter_ms=%.1f\n", ms_since(t));
    printf("dataset_backing=%d\ntable_backing=%d\n", spillway_backing(data), spillway_backing(table));
    fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    size_t bad = 0, touched = 0;
    for (size_t i = 0; i < dn; i++)
        if (data[i] != mix(i)) bad++;
    for (size_t i = 0; i < tn; i++) {
        if (table[i] != 0) touched++;
        if (table[i] != 0 && table[i] != mix(i) + 1) bad++;
    }
    printf("touched_words=%zu\nbad_words=%zu\nintact=%d\n", touched, bad, bad == 0 && touched > 0);
    free(table);
    free(data);
    return 0;
}

int temporaries(size_t count, size_t mib) {
    const size_t n = mib * MiB / 8;
    uint64_t *kept = alloc_kept(n * 8);
    if (!kept) return 3;
    for (size_t i = 0; i < n; i++) kept[i] = mix(i);
    auto born = Clock::now();
    std::string backings;
    size_t bad = 0;
    for (size_t c = 0; c < count; c++) {
        uint64_t *t = alloc_temporary(n * 8);
        if (!t) return 3;
        backings += (c ? "," : "") + std::to_string(spillway_backing(t));
        for (size_t i = 0; i < n; i++) t[i] = mix(i) + c;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        for (size_t i = 0; i < n; i++) bad += t[i] != mix(i) + c;
        free(t);
    }
    printf("kept_backing=%d\ntemporary_backings=%s\n", spillway_backing(kept), backings.c_str());
    // The kept buffer lives past a second: a long-lived site's.
    std::this_thread::sleep_for(std::chrono::milliseconds(1200) - (Clock::now() - born));
    for (size_t i = 0; i < n; i++) bad += kept[i] != mix(i);
    free(kept);
    printf("intact=%d\n", bad == 0);
    return 0;
}

int growth(size_t region_mib, size_t grow_mib, size_t rate_mib_s, size_t check_pages, bool io) {
    size_t rn = region_mib * MiB / 8;
    uint64_t *region = (uint64_t *)spillway_alloc(rn * 8, SPILLWAY_RANDOM_ACCESS);
    if (!region) return 3;
    printf("placed=%d\n", spillway_backing(region));
    fflush(stdout);
    for (size_t i = 0; i < rn; i++) region[i] = mix(i);
    // The last MiB belongs to the I/O thread (checked by it, not below).
    IoLoop loop;
    if (io) {
        rn -= kIoBytes / 8;
        loop.start((char *)(region + rn));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    printf("before_growth=%d\n", spillway_backing(region));
    fflush(stdout);
    // Grow in steps of 8 MiB at the given rate, with 4 KiB blocks (the small path).
    std::vector<char *> blocks;
    blocks.reserve(grow_mib * 256);
    auto t0 = Clock::now();
    for (size_t step = 0; step < grow_mib / 8; step++) {
        for (int b = 0; b < 2048; b++) {
            char *p = (char *)malloc(4096);
            if (!p) return 4;
            memset(p, (int)(step + b), 4096);
            blocks.push_back(p);
        }
        double due = (double)(step + 1) * 8 * 1000 / (double)rate_mib_s;
        double now = ms_since(t0);
        if (due > now) std::this_thread::sleep_for(std::chrono::microseconds((long)((due - now) * 1000)));
    }
    printf("grown_mib=%zu\ngrow_ms=%.0f\n", grow_mib, ms_since(t0));
    // A demotion frees memory chunk by chunk as it goes and changes the
    // backing once the last chunk is on disk, which on a loaded disk can be
    // after the growth: wait for it (at most 60 s), and say how long.
    auto t1 = Clock::now();
    while (spillway_backing(region) != SPILLWAY_DISK && ms_since(t1) < 60000)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    printf("after_growth=%d\nwaited_for_move_ms=%.0f\n", spillway_backing(region), ms_since(t1));
    printf("truth=%s\n", truth(region).c_str());
    if (io) {
        uint64_t before = loop.calls.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(200)); // calls after the move, too
        loop.finish(before);
    }
    // Read the first 64 MiB back in order: from disk after a demotion
    // (read-ahead's figure); then the check, of every page or of one word
    // in check_pages pages (a slow disk read page by page takes minutes).
    auto t2 = Clock::now();
    size_t bad = 0, head = rn < 8 * MiB ? rn : 8 * MiB;
    for (size_t i = 0; i < head; i++)
        if (region[i] != mix(i)) bad++;
    printf("read_back_64mib_ms=%.0f\n", ms_since(t2));
    size_t step = check_pages > 1 ? check_pages * 512 : 1;
    for (size_t i = head; i < rn; i += step)
        if (region[i] != mix(i)) bad++;
    printf("checked_every_pages=%zu\nintact=%d\n", check_pages > 1 ? check_pages : 1, bad == 0);
    printf("survived=1\n");
    return 0;
}

int paced_fill(size_t region_mib, size_t rate_mib_s) {
    size_t n = region_mib * MiB / 8;
    uint64_t *region = (uint64_t *)spillway_alloc(n * 8, SPILLWAY_PREFER_MEMORY);
    if (!region) return 3;
    printf("placed=%d\n", spillway_backing(region));
    fflush(stdout);
    auto t0 = Clock::now();
    const size_t step = MiB; // words per 8 MiB
    for (size_t first = 0; first < n; first += step) {
        for (size_t i = first; i < n && i < first + step; i++) region[i] = mix(i);
        double due = (double)(first + step) * 8 / MiB * 1000 / (double)rate_mib_s;
        double now = ms_since(t0);
        if (due > now) std::this_thread::sleep_for(std::chrono::microseconds((long)((due - now) * 1000)));
    }
    printf("fill_ms=%.0f\n", ms_since(t0));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    printf("backing_end=%d\ntruth=%s\n", spillway_backing(region), truth(region).c_str());
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (region[i] != mix(i)) bad++;
    printf("intact=%d\n", bad == 0);
    free(region);
    return 0;
}

int hold(size_t region_mib, size_t hold_ms) {
    size_t n = region_mib * MiB / 8;
    uint64_t *region = (uint64_t *)spillway_alloc(n * 8, SPILLWAY_PREFER_MEMORY);
    if (!region) return 3;
    printf("placed=%d\n", spillway_backing(region));
    fflush(stdout);
    for (size_t i = 0; i < n; i++) region[i] = mix(i);
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    printf("backing_end=%d\n", spillway_backing(region));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (region[i] != mix(i)) bad++;
    printf("intact=%d\n", bad == 0);
    free(region);
    return 0;
}

int want_promotion(size_t region_mib, double seconds, bool io, bool hold) {
    size_t n = region_mib * MiB / 8;
    uint64_t *p = (uint64_t *)spillway_alloc(n * 8, SPILLWAY_PREFER_DISK);
    if (!p) return 3;
    printf("placed=%d\n", spillway_backing(p));
    fflush(stdout);
    IoLoop loop;
    uint64_t before_move = 0;
    if (io) {
        n -= kIoBytes / 8; // the last MiB belongs to the I/O thread
        loop.start((char *)(p + n));
    }
    auto t0 = Clock::now();
    uint64_t x = (uint64_t)getpid() * 2654435761u + 1;
    double promoted_ms = -1;
    while (ms_since(t0) < seconds * 1000) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        for (int k = 0; k < 8; k++) {
            size_t i = next_random(x) % n;
            p[i] = mix(i) + 1;
        }
        if (promoted_ms < 0 && spillway_backing(p) == SPILLWAY_MEMORY) {
            promoted_ms = ms_since(t0);
            before_move = loop.calls.load();
        }
    }
    if (io) loop.finish(before_move);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] && p[i] != mix(i) + 1) bad++;
    printf("promoted=%d\npromoted_after_ms=%.0f\nintact=%d\n", promoted_ms >= 0, promoted_ms, bad == 0);
    fflush(stdout);
    if (hold) {
        char byte;
        while (read(0, &byte, 1) > 0) {
        }
    }
    return 0;
}

int reread(size_t buffers, size_t buf_mib) {
    size_t words = buf_mib * MiB / 8;
    std::vector<uint64_t *> buf(buffers);
    for (size_t c = 0; c < buffers; c++) {
        buf[c] = (uint64_t *)malloc(buf_mib * MiB);
        if (!buf[c]) return 3;
        for (size_t i = 0; i < words; i++) buf[c][i] = mix(c * words + i);
    }
    auto t0 = Clock::now();
    size_t bad = 0;
    for (size_t c = 0; c < buffers; c++) {
        if (c == buffers - 1)
            printf("disk=%d\nlast_resident_mib=%.1f\n", spillway_is_disk_backed(buf[c]) == 1,
                   spillway_residency(buf[c], buf_mib * MiB) / (double)MiB);
        for (size_t i = 0; i < words; i++) {
            bad += buf[c][i] != mix(c * words + i);
            if (c == buffers / 2 && i == words / 2) {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                long passed = 0;
                for (size_t d = 0; d < c; d++) passed += spillway_residency(buf[d], buf_mib * MiB);
                printf("passed_resident_mib=%.1f\n", passed / (double)MiB);
            }
        }
    }
    printf("read_ms=%.0f\nintact=%d\n", ms_since(t0), bad == 0);
    for (uint64_t *b : buf) free(b);
    return 0;
}

int fork_rewrite(size_t region_mib, size_t passes) {
    const size_t words = region_mib * MiB / 8, page_words = 4096 / 8;
    auto *buf = (uint64_t *)malloc(region_mib * MiB);
    if (!buf) return 3;
    for (size_t i = 0; i < words; i++) buf[i] = mix(i);
    int go[2], verdict[2];
    if (pipe(go) != 0 || pipe(verdict) != 0) return 3;
    pid_t pid = fork();
    if (pid < 0) return 3;
    if (pid == 0) { // sees the bytes of the fork, whatever the parent writes
        // Only the parent writes go: if it dies (OOM-killed), the read ends
        // and so does this child, instead of holding the test's pipe open.
        close(go[1]);
        close(verdict[0]);
        char byte;
        if (read(go[0], &byte, 1) != 1) _exit(2);
        size_t bad = 0;
        for (size_t i = 0; i < words; i++) bad += buf[i] != mix(i);
        char ok = bad == 0 ? '1' : '0';
        _exit(write(verdict[1], &ok, 1) == 1 ? 0 : 2);
    }
    close(go[0]);
    close(verdict[1]);
    auto t0 = Clock::now();
    for (size_t pass = 1; pass <= passes; pass++)
        for (size_t i = 0; i < words; i += page_words) // a word per page: each page a copy
            for (size_t w = i; w < i + page_words; w++) buf[w] = mix(i) + pass;
    printf("rewrite_ms=%.0f\nbacking=%d\ntruth=%s\n", ms_since(t0), spillway_backing(buf), truth(buf).c_str());
    char ok = '0';
    bool told = write(go[1], "g", 1) == 1 && read(verdict[0], &ok, 1) == 1;
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child_ok=%d\n", told && ok == '1' && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t bad = 0;
    for (size_t i = 0; i < words; i += page_words)
        for (size_t w = i; w < i + page_words; w++) bad += buf[w] != mix(i) + passes;
    printf("intact=%d\n", bad == 0);
    free(buf);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if ((argc == 5 || (argc == 6 && strcmp(argv[5], "until-promoted") == 0)) && strcmp(argv[1], "first-run") == 0)
        return first_run(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10), argc == 6);
    if ((argc == 5 || (argc == 6 && strcmp(argv[5], "promoted") == 0)) && strcmp(argv[1], "learn-pair") == 0)
        return learn_pair(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10), argc == 6);
    if (argc == 4 && strcmp(argv[1], "temporaries") == 0)
        return temporaries(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10));
    if (argc == 5 && strcmp(argv[1], "learn-quick") == 0)
        return learn_quick(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10));
    if ((argc == 5 || argc == 6) && (strcmp(argv[1], "growth") == 0 || strcmp(argv[1], "growth-io") == 0))
        return growth(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10),
                      argc == 6 ? strtoull(argv[5], 0, 10) : 1, strcmp(argv[1], "growth-io") == 0);
    if (argc == 4 && strcmp(argv[1], "paced-fill") == 0)
        return paced_fill(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10));
    if (argc == 4 && strcmp(argv[1], "reread") == 0) return reread(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10));
    if (argc == 4 && strcmp(argv[1], "fork-rewrite") == 0)
        return fork_rewrite(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10));
    if (argc == 4 && strcmp(argv[1], "hold") == 0)
        return hold(strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10));
    if ((argc == 4 || (argc == 5 && strcmp(argv[4], "hold") == 0)) &&
        (strcmp(argv[1], "want-promotion") == 0 || strcmp(argv[1], "want-promotion-io") == 0))
        return want_promotion(strtoull(argv[2], 0, 10), strtod(argv[3], 0), strcmp(argv[1], "want-promotion-io") == 0,
                              argc == 5);
    fprintf(stderr, "tiering_job: unknown command; see the opening comment of tests/control/tiering_job.cpp\n");
    return 2;
}
