/* gather_probe.c — what spilled data costs per access phase, beside the
 * disk's floor measured in the same run.
 *
 * usage: gather_probe [--size 4G] [--touches 2000] [--phases fill,rand,seq,rand]
 *        (phases: fill, rand, wrand, seq, alt, and idle: a 300 ms pause, not reported)
 *                     [--floor-mb 512] [--compute-us 0] [--verdict-grace-ms 0]
 * Run it under the shim (large threshold below --size) in a memory cgroup
 * smaller than --size, with SPILLWAY_DIR on the filesystem to measure.
 * Phases (run in the order given, on one malloc'ed region):
 *   fill   write every page in order
 *   rand   read one byte of --touches random pages
 *   wrand  write one byte of --touches random pages
 *   seq    read every page in order (one word per 4 KiB, plus --compute-us
 *          of arithmetic per MiB so compute can overlap prefetch)
 *   alt    8 cycles of (64 MiB read in order, touches/8 random reads)
 * For each phase one line:
 *   phase=NAME s=... majflt=... read_mib=... kib_per_fault=... mb_s=...
 *   verdict_ms=... (time until the shim's detector reported the phase's
 *   pattern, from spillway_access_phase when the shim exports it; -1 = never)
 *   --verdict-grace-ms: a phase whose pattern was not reported by its end
 *   waits up to that long, idle, for the detector to judge what the phase
 *   did (its looks are 100 ms apart: a phase on a fast disk can end first);
 *   s, majflt and read_mib are taken before the wait, verdict_ms may then
 *   exceed the phase's s. 0 (default): the phase's own time only.
 * and first the floor of the spill filesystem's device:
 *   floor rand4k_us=<median O_DIRECT 4 KiB read> seq_mb_s=<O_DIRECT 8 MiB reads>
 * Bytes read come from /sys/dev/block/MAJ:MIN/stat of the spill directory's
 * device (sectors read), faults from getrusage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char g_stat_path[128];
static int (*g_phase_of)(const void *);
static const unsigned char *g_region;
static atomic_int g_want_phase;   /* 0: not watching */
static atomic_llong g_seen_ns;    /* when the wanted verdict was first seen */
static atomic_int g_stop;
static long g_grace_ms;

static uint64_t sectors_read(void) {
    FILE *f = fopen(g_stat_path, "r");
    if (!f) return 0;
    unsigned long long rd_ios, rd_merges, rd_sectors;
    int n = fscanf(f, "%llu %llu %llu", &rd_ios, &rd_merges, &rd_sectors);
    fclose(f);
    return n == 3 ? rd_sectors : 0;
}

static long majflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_majflt;
}

static void *watcher(void *arg) {
    (void)arg;
    while (!atomic_load(&g_stop)) {
        int want = atomic_load(&g_want_phase);
        if (want && atomic_load(&g_seen_ns) == 0 && g_phase_of(g_region) == want)
            atomic_store(&g_seen_ns, (long long)now_ns());
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Floor: a file of real data (fallocated extents would read without I/O). */
static void measure_floor(const char *dir, size_t mb) {
    char path[4096];
    snprintf(path, sizeof path, "%s/floor.XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) { perror("floor file"); return; }
    unlink(path);
    size_t chunk = 8 << 20;
    char *buf = aligned_alloc(4096, chunk);
    memset(buf, 0x5a, chunk);
    for (size_t off = 0; off < mb << 20; off += chunk)
        if (pwrite(fd, buf, chunk, (off_t)off) != (ssize_t)chunk) { perror("floor write"); return; }
    fsync(fd);
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    int dfd = open(fdpath, O_RDONLY | O_DIRECT);
    if (dfd < 0) { perror("O_DIRECT"); return; }
    uint64_t seed = 12345;
    double lat[1000];
    size_t pages = (mb << 20) / 4096;
    for (int i = 0; i < 1000; i++) {
        off_t off = (off_t)(rng_next(&seed) % pages) * 4096;
        uint64_t t0 = now_ns();
        if (pread(dfd, buf, 4096, off) != 4096) { perror("floor pread"); return; }
        lat[i] = (now_ns() - t0) / 1e3;
    }
    uint64_t t0 = now_ns();
    for (size_t off = 0; off < mb << 20; off += chunk)
        if (pread(dfd, buf, chunk, (off_t)off) != (ssize_t)chunk) { perror("floor seq"); return; }
    double s = (now_ns() - t0) / 1e9;
    printf("floor rand4k_us=%.1f seq_mb_s=%.0f\n", median(lat, 1000), (double)(mb << 20) / 1e6 / s);
    fflush(stdout);
    close(dfd);
    close(fd);
    free(buf);
}

struct Mark {
    uint64_t t, sectors;
    long flt;
};
static struct Mark mark(void) {
    struct Mark m = {now_ns(), sectors_read(), majflt()};
    return m;
}

static void report(const char *phase, struct Mark a, size_t bytes_touched, int want) {
    struct Mark b = mark();
    double s = (b.t - a.t) / 1e9, mib = (b.sectors - a.sectors) * 512.0 / 1048576;
    long f = b.flt - a.flt;
    for (long waited = 0; want && g_phase_of && waited < g_grace_ms && !atomic_load(&g_seen_ns); waited++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    long long seen = atomic_load(&g_seen_ns);
    double verdict_ms = !g_phase_of ? -2 : seen ? (seen - (long long)a.t) / 1e6 : -1;
    if (!want) verdict_ms = -2;
    printf("phase=%s s=%.3f majflt=%ld read_mib=%.1f kib_per_fault=%.1f mb_s=%.0f verdict_ms=%.0f\n",
           phase, s, f, mib, f ? mib * 1024 / f : 0, bytes_touched / 1e6 / s, verdict_ms);
    fflush(stdout);
}

static void watch(int want) {
    atomic_store(&g_seen_ns, 0);
    atomic_store(&g_want_phase, want);
}

int main(int argc, char **argv) {
    size_t size = 4ull << 30, floor_mb = 512;
    long touches = 2000, compute_us = 0;
    const char *phases = "fill,rand,seq,rand";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size")) size = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--touches")) touches = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--phases")) phases = argv[i + 1];
        else if (!strcmp(argv[i], "--floor-mb")) floor_mb = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--compute-us")) compute_us = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--verdict-grace-ms")) g_grace_ms = atol(argv[i + 1]);
        else { fprintf(stderr, "gather_probe: unknown option %s\n", argv[i]); return 2; }
    }
    const char *dir = getenv("SPILLWAY_DIR");
    if (!dir) { fprintf(stderr, "gather_probe: set SPILLWAY_DIR to the spill directory\n"); return 2; }
    struct stat st;
    if (stat(dir, &st) != 0) { perror(dir); return 2; }
    snprintf(g_stat_path, sizeof g_stat_path, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
    if (floor_mb) measure_floor(dir, floor_mb);
    *(void **)&g_phase_of = dlsym(RTLD_DEFAULT, "spillway_access_phase");

    unsigned char *p = malloc(size);
    if (!p) { perror("malloc"); return 1; }
    g_region = p;
    pthread_t tid;
    if (g_phase_of) pthread_create(&tid, NULL, watcher, NULL);
    size_t pages = size / 4096;
    uint64_t seed = 42;
    char list[256];
    snprintf(list, sizeof list, "%s", phases);
    for (char *save = NULL, *ph = strtok_r(list, ",", &save); ph; ph = strtok_r(NULL, ",", &save)) {
        struct Mark a = mark();
        if (!strcmp(ph, "idle")) {
            /* A pause between phases (a job between its load and its first
             * epoch): the detector sees the fill end. Not reported. */
            struct timespec pause = {0, 300 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        if (!strcmp(ph, "fill")) {
            watch(1);
            for (size_t i = 0; i < size; i += 4096) memset(p + i, (int)(i >> 12) | 1, 4096);
            report(ph, a, size, 1);
        } else if (!strcmp(ph, "rand") || !strcmp(ph, "wrand")) {
            watch(2);
            uint64_t sum = 0;
            for (long i = 0; i < touches; i++) {
                size_t off = (rng_next(&seed) % pages) * 4096 + (rng_next(&seed) % 4096);
                if (ph[0] == 'w') p[off] = (unsigned char)i;
                else sum += p[off];
            }
            g_bench_sink = sum;
            report(ph, a, (size_t)touches * 4096, 2);
        } else if (!strcmp(ph, "seq")) {
            watch(1);
            uint64_t sum = 0;
            for (size_t i = 0; i < size; i += 4096) {
                sum += *(volatile uint64_t *)(p + i);
                if (compute_us && (i & ((1 << 20) - 1)) == 0) {
                    uint64_t t0 = now_ns();
                    while (now_ns() - t0 < (uint64_t)compute_us * 1000) sum++;
                }
            }
            g_bench_sink = sum;
            report(ph, a, size, 1);
        } else if (!strcmp(ph, "alt")) {
            /* Alternating region: per cycle, 64 MiB in order, then random
             * reads. Reported separately: the random part's bytes per fault
             * must stay small while the detector catches up. */
            size_t chunk = 64 << 20, pos = 0;
            uint64_t sum = 0, seq_ns = 0, rnd_ns = 0, seq_sec = 0, rnd_sec = 0;
            long seq_f = 0, rnd_f = 0;
            for (int c = 0; c < 8; c++) {
                struct Mark s0 = mark();
                for (size_t i = 0; i < chunk; i += 4096) sum += p[(pos + i) % size];
                pos = (pos + chunk + size / 3) % size;
                struct Mark s1 = mark();
                for (long i = 0; i < touches / 8; i++) sum += p[(rng_next(&seed) % pages) * 4096];
                struct Mark s2 = mark();
                seq_ns += s1.t - s0.t; seq_sec += s1.sectors - s0.sectors; seq_f += s1.flt - s0.flt;
                rnd_ns += s2.t - s1.t; rnd_sec += s2.sectors - s1.sectors; rnd_f += s2.flt - s1.flt;
            }
            g_bench_sink = sum;
            printf("phase=alt-seq s=%.3f majflt=%ld read_mib=%.1f kib_per_fault=%.1f mb_s=%.0f\n",
                   seq_ns / 1e9, seq_f, seq_sec / 2048.0, seq_f ? seq_sec / 2.0 / seq_f : 0,
                   8.0 * chunk / 1e6 / (seq_ns / 1e9));
            printf("phase=alt-rand s=%.3f majflt=%ld read_mib=%.1f kib_per_fault=%.1f\n",
                   rnd_ns / 1e9, rnd_f, rnd_sec / 2048.0, rnd_f ? rnd_sec / 2.0 / rnd_f : 0);
            fflush(stdout);
        } else {
            fprintf(stderr, "gather_probe: unknown phase %s\n", ph);
            return 2;
        }
        atomic_store(&g_want_phase, 0);
    }
    atomic_store(&g_stop, 1);
    if (g_phase_of) pthread_join(tid, NULL);
    free(p);
    return 0;
}
