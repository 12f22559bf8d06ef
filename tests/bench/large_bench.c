/* large_bench.c — the large-allocation path, one measurement per run.
 *
 * The same binary measures every backing: run it plainly with --api mmap
 * for the reference (a private anonymous mapping, what glibc gives a large
 * malloc), or under LD_PRELOAD=libspillway.so with --api malloc and
 * SPILLWAY_POLICY=disk|memory|anon to get a spill file, a memfd or
 * anonymous memory from the shim. --api file maps a reserved O_TMPFILE in
 * --dir the way the shim does, to try mapping options (--advise) without
 * rebuilding the shim.
 *
 * usage: large_bench COMMAND [options]
 *   latency  SIZE...    call to first usable byte (malloc + write p[0]); median of --reps
 *   seqwrite SIZE       first-touch sequential write throughput; --idle S sleeps S seconds
 *                       first (the machine's free memory goes cold), else the same amount of
 *                       anonymous memory is touched and unmapped just before (warm)
 *   randwrite SIZE N    N random 8-byte writes into a fresh region, then N more (resident);
 *                       --evicted M: for spill regions, M writes after releasing the page
 *                       cache, with default advice and with MADV_RANDOM
 *   freelat SIZE        free() of a fully written region as the caller sees it, and until
 *                       the process RSS has dropped (the work done in the background)
 *   control SIZE DIRTY  spillway_residency / spillway_release_page_cache on a SIZE region
 *                       with its first DIRTY bytes written
 * options: --api malloc|mmap|file  --variant NAME  --reps N  --dir PATH
 *          --advise none|hugepage|populate|nohuge|random|sequential
 *          --prefault (seqwrite: a helper thread populates the region from its end)
 * Output: CSV rows bench,variant,param,metric,value,unit (see common.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static const char *g_api = "malloc";
static const char *g_variant = "?";
static const char *g_dir = "/var/tmp/spillway-bench";
static const char *g_advise = "none";
static int g_reps = 5;
static double g_idle = 0;
static int g_prefault = 0; /* --prefault: a helper thread populates from the far end */

/* --api file: remember the length of each mapping (one at a time is enough). */
static size_t g_file_len;

static void advise(void *p, size_t n) {
    if (!strcmp(g_advise, "hugepage")) madvise(p, n, MADV_HUGEPAGE);
    else if (!strcmp(g_advise, "nohuge")) madvise(p, n, MADV_NOHUGEPAGE);
    else if (!strcmp(g_advise, "populate")) madvise(p, n, MADV_POPULATE_WRITE);
    else if (!strcmp(g_advise, "random")) madvise(p, n, MADV_RANDOM);
    else if (!strcmp(g_advise, "sequential")) madvise(p, n, MADV_SEQUENTIAL);
}

static void *alloc(size_t n) {
    void *p;
    if (!strcmp(g_api, "mmap")) {
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) p = NULL;
    } else if (!strcmp(g_api, "file")) {
        int fd = open(g_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 || fallocate(fd, 0, 0, (off_t)n) != 0) {
            perror("file api");
            exit(1);
        }
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) p = NULL;
        g_file_len = n;
    } else {
        p = malloc(n);
    }
    if (!p) {
        fprintf(stderr, "large_bench: allocation of %zu bytes failed\n", n);
        exit(1);
    }
    if (strcmp(g_api, "malloc")) advise(p, n);
    return p;
}

static void release(void *p, size_t n) {
    if (!strcmp(g_api, "malloc")) free(p);
    else munmap(p, n);
    (void)g_file_len;
}

static long rss_pages(void) {
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return 0;
    buf[k] = 0;
    long size = 0, res = 0;
    sscanf(buf, "%ld %ld", &size, &res);
    return res;
}

static const char *size_label(size_t n, char *buf, size_t cap) {
    if (n >= (1ull << 30) && n % (1ull << 30) == 0) snprintf(buf, cap, "%zuGiB", n >> 30);
    else snprintf(buf, cap, "%zuMiB", n >> 20);
    return buf;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void write_seq(unsigned char *p, size_t n) {
    const size_t chunk = 1 << 20;
    for (size_t off = 0; off < n; off += chunk) memset(p + off, 0x5a, off + chunk <= n ? chunk : n - off);
}

static int cmd_latency(int argc, char **argv) {
    for (int a = 0; a < argc; a++) {
        size_t n = parse_size(argv[a]);
        char label[32];
        size_label(n, label, sizeof label);
        double us[64];
        int reps = g_reps < 64 ? g_reps : 64;
        for (int r = 0; r < reps; r++) {
            uint64_t t0 = now_ns();
            volatile unsigned char *p = alloc(n);
            p[0] = 1;
            uint64_t t1 = now_ns();
            us[r] = (t1 - t0) / 1e3;
            release((void *)p, n);
            sleep_s(0.02); /* let a background release finish before the next one */
        }
        emit("large_latency", g_variant, label, "first_byte_us", median(us, reps), "us");
    }
    return 0;
}

/* Experiment (not what the shim does today): fault the region in from its
 * end, 16 MiB at a time, while the caller writes from the start, so two
 * cores take the page faults; stops where the writer has already been. */
struct prefault_job {
    unsigned char *p;
    size_t n;
};

static void *prefault_main(void *arg) {
    struct prefault_job *j = arg;
    const size_t step = 16u << 20;
    for (size_t end = j->n; end >= step; end -= step) {
        unsigned char vec[1];
        if (mincore(j->p + end - step, 4096, vec) == 0 && (vec[0] & 1)) break; /* the writer got here */
        madvise(j->p + end - step, step, MADV_POPULATE_WRITE);
    }
    return NULL;
}

static int cmd_seqwrite(int argc, char **argv) {
    if (argc < 1) return 2;
    size_t n = parse_size(argv[0]);
    char label[32];
    size_label(n, label, sizeof label);
    const char *state = g_idle > 0 ? "idle" : "warm";
    if (g_idle > 0) {
        sleep_s(g_idle);
    } else {
        unsigned char *q = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!getenv("BENCH_PRIME_4K")) madvise(q, n, MADV_HUGEPAGE);
        write_seq(q, n);
        munmap(q, n);
    }
    uint64_t t0 = now_ns();
    unsigned char *p = alloc(n);
    uint64_t t1 = now_ns();
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    pthread_t helper;
    struct prefault_job job = {p, n};
    if (g_prefault) pthread_create(&helper, NULL, prefault_main, &job);
    write_seq(p, n);
    if (g_prefault) pthread_join(helper, NULL);
    getrusage(RUSAGE_SELF, &ru1);
    uint64_t t2 = now_ns();
    g_bench_sink += p[n - 1];
    char param[64];
    snprintf(param, sizeof param, "%s-%s", label, state);
    emit("large_seqwrite", g_variant, param, "GBps", (double)n / (t2 - t0), "GB/s");
    emit("large_seqwrite", g_variant, param, "alloc_ms", (t1 - t0) / 1e6, "ms");
    emit("large_seqwrite", g_variant, param, "touch_ms", (t2 - t1) / 1e6, "ms");
    emit("large_seqwrite", g_variant, param, "touch_faults", (double)(ru1.ru_minflt - ru0.ru_minflt), "faults");
    emit("large_seqwrite", g_variant, param, "touch_sys_ms",
         ((ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e6 + (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec)) / 1e3, "ms");
    release(p, n);
    return 0;
}

typedef int (*release_fn)(const void *);
typedef long (*residency_fn)(const void *, size_t);

static double rand_pass(unsigned char *p, size_t n, long count, uint64_t seed) {
    uint64_t rng = seed;
    size_t words = n / 8;
    uint64_t t0 = now_ns();
    for (long i = 0; i < count; i++) ((uint64_t *)p)[rng_next(&rng) % words] = (uint64_t)i;
    return (double)(now_ns() - t0) / (double)count;
}

static int cmd_randwrite(int argc, char **argv) {
    if (argc < 2) return 2;
    size_t n = parse_size(argv[0]);
    long count = atol(argv[1]);
    long evicted = argc >= 3 ? atol(argv[2]) : 0;
    char label[32];
    size_label(n, label, sizeof label);
    unsigned char *p = alloc(n);
    emit("large_randwrite", g_variant, label, "first_touch_ns", rand_pass(p, n, count, 0x1234567), "ns/write");
    emit("large_randwrite", g_variant, label, "resident_ns", rand_pass(p, n, count, 0x7654321), "ns/write");
    release_fn rel = (release_fn)dlsym(RTLD_DEFAULT, "spillway_release_page_cache");
    int (*backing)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    if (evicted > 0 && rel && backing && backing(p) == 1 /* SPILLWAY_DISK */) {
        for (int adv = 0; adv < 2; adv++) {
            if (rel(p) != 0) break;
            if (adv) madvise(p, n, MADV_RANDOM);
            emit("large_randwrite", g_variant, label, adv ? "evicted_random_advice_ns" : "evicted_default_ns",
                 rand_pass(p, n, evicted, 0xabcdef + (uint64_t)adv), "ns/write");
        }
    }
    release(p, n);
    return 0;
}

static int cmd_freelat(int argc, char **argv) {
    if (argc < 1) return 2;
    size_t n = parse_size(argv[0]);
    char label[32];
    size_label(n, label, sizeof label);
    double caller[64], done[64];
    int reps = g_reps < 64 ? g_reps : 64;
    long page = sysconf(_SC_PAGESIZE);
    for (int r = 0; r < reps; r++) {
        unsigned char *p = alloc(n);
        write_seq(p, n);
        long before = rss_pages();
        uint64_t t0 = now_ns();
        release(p, n);
        uint64_t t1 = now_ns();
        /* Background work: until half the region has left the RSS (5 s at most). */
        long target = before - (long)(n / (size_t)page) / 2;
        uint64_t t2 = t1;
        while (rss_pages() > target && (t2 = now_ns()) - t1 < 5000000000ull) {}
        caller[r] = (t1 - t0) / 1e3;
        done[r] = (t2 - t0) / 1e3;
        sleep_s(0.05);
    }
    if (getenv("BENCH_VERBOSE"))
        for (int r = 0; r < reps; r++) fprintf(stderr, "free rep %d: caller %.1f us, rss released %.1f us\n", r, caller[r], done[r]);
    emit("large_free", g_variant, label, "caller_us", median(caller, reps), "us");
    emit("large_free", g_variant, label, "caller_max_us", caller[reps - 1], "us");
    emit("large_free", g_variant, label, "rss_released_us", median(done, reps), "us");
    return 0;
}

static int cmd_control(int argc, char **argv) {
    if (argc < 2) return 2;
    size_t n = parse_size(argv[0]), dirty = parse_size(argv[1]);
    residency_fn residency = (residency_fn)dlsym(RTLD_DEFAULT, "spillway_residency");
    release_fn rel = (release_fn)dlsym(RTLD_DEFAULT, "spillway_release_page_cache");
    if (!residency || !rel) {
        fprintf(stderr, "large_bench control: the shim is not preloaded\n");
        return 1;
    }
    char label[64], a[32], b[32];
    snprintf(label, sizeof label, "%s-dirty%s", size_label(n, a, sizeof a), size_label(dirty, b, sizeof b));
    unsigned char *p = alloc(n);
    write_seq(p, dirty);
    uint64_t t0 = now_ns();
    long res = residency(p, n);
    uint64_t t1 = now_ns();
    int rc = rel(p);
    uint64_t t2 = now_ns();
    long after = residency(p, n);
    uint64_t t3 = now_ns();
    emit("control", g_variant, label, "residency_ms", (t1 - t0) / 1e6, "ms");
    emit("control", g_variant, label, "release_ms", (t2 - t1) / 1e6, "ms");
    emit("control", g_variant, label, "residency_after_ms", (t3 - t2) / 1e6, "ms");
    emit("control", g_variant, label, "resident_before_MiB", res / 1048576.0, "MiB");
    emit("control", g_variant, label, "resident_after_MiB", after / 1048576.0, "MiB");
    if (rc != 0) fprintf(stderr, "large_bench control: release returned %d\n", rc);
    release(p, n);
    return 0;
}

int main(int argc, char **argv) {
    int a = 1;
    const char *cmd = NULL;
    char *rest[64];
    int nrest = 0;
    for (; a < argc; a++) {
        if (!strcmp(argv[a], "--api") && a + 1 < argc) g_api = argv[++a];
        else if (!strcmp(argv[a], "--variant") && a + 1 < argc) g_variant = argv[++a];
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc) g_reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--dir") && a + 1 < argc) g_dir = argv[++a];
        else if (!strcmp(argv[a], "--advise") && a + 1 < argc) g_advise = argv[++a];
        else if (!strcmp(argv[a], "--idle") && a + 1 < argc) g_idle = atof(argv[++a]);
        else if (!strcmp(argv[a], "--prefault")) g_prefault = 1;
        else if (!cmd) cmd = argv[a];
        else if (nrest < 64) rest[nrest++] = argv[a];
    }
    if (!cmd) {
        fprintf(stderr, "usage: large_bench latency|seqwrite|randwrite|freelat|control ARGS [options]\n");
        return 2;
    }
    if (!strcmp(cmd, "latency")) return cmd_latency(nrest, rest);
    if (!strcmp(cmd, "seqwrite")) return cmd_seqwrite(nrest, rest);
    if (!strcmp(cmd, "randwrite")) return cmd_randwrite(nrest, rest);
    if (!strcmp(cmd, "freelat")) return cmd_freelat(nrest, rest);
    if (!strcmp(cmd, "control")) return cmd_control(nrest, rest);
    fprintf(stderr, "large_bench: unknown command %s\n", cmd);
    return 2;
}
