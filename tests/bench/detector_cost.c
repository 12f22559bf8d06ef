/* detector_cost.c — CPU the shim's detector thread ("spillway-learn")
 * spends with many live disk regions while the program keeps faulting.
 *
 * usage: detector_cost [--regions 1000] [--region-size 4M] [--seconds 10]
 * Run under the shim with a threshold below --region-size. Allocates the
 * regions, writes each once, then for --seconds touches random pages of
 * random regions (a few thousand a second, so the detector's fault gate is
 * open every tick) and prints, for the fill and for the touching:
 *   phase=... regions=N s=... detector_cpu_ms=... core_share_pct=...
 * read from /proc/self/task/<tid>/stat of the detector thread, and how
 * long a large malloc took meanwhile (one malloc/free of --region-size
 * every 10 ms: the large lock the detector shares with the allocator):
 *   alloc_probe=N median_us=... p99_us=... max_us=...
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <dirent.h>
#include <unistd.h>

static double thread_cpu_ms(const char *name) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    struct dirent *e;
    double ms = -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;
        if (strcmp(comm, name)) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f) continue;
        char buf[1024];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *p = strrchr(buf, ')');
        unsigned long utime = 0, stime = 0;
        /* fields after ')': state(3) ... utime(14) stime(15) */
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
            ms = (utime + stime) * 1000.0 / sysconf(_SC_CLK_TCK);
    }
    closedir(d);
    return ms;
}

int main(int argc, char **argv) {
    long regions = 1000, seconds = 10;
    size_t size = 4 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--regions")) regions = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--region-size")) size = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atol(argv[i + 1]);
    }
    unsigned char **r = calloc((size_t)regions, sizeof *r);
    uint64_t f0 = now_ns();
    for (long i = 0; i < regions; i++) {
        r[i] = malloc(size);
        if (!r[i]) { perror("malloc"); return 1; }
        for (size_t o = 0; o < size; o += 4096) r[i][o] = 1;
    }
    double fill_s = (now_ns() - f0) / 1e9, fill_cpu = thread_cpu_ms("spillway-learn");
    printf("phase=fill regions=%ld s=%.1f detector_cpu_ms=%.0f core_share_pct=%.2f\n", regions, fill_s,
           fill_cpu, fill_cpu / 10.0 / fill_s);
    fflush(stdout);
    sleep(1);
    double cpu0 = thread_cpu_ms("spillway-learn");
    uint64_t seed = 1, t0 = now_ns(), end = t0 + (uint64_t)seconds * 1000000000ull, sum = 0;
    size_t probes_cap = (size_t)seconds * 200 + 16, probes = 0;
    double *probe_us = calloc(probes_cap, sizeof *probe_us);
    while (now_ns() < end) {
        for (int k = 0; k < 50; k++) sum += r[rng_next(&seed) % regions][(rng_next(&seed) % (size / 4096)) * 4096];
        uint64_t a0 = now_ns();
        unsigned char *extra = malloc(size);
        uint64_t a1 = now_ns();
        if (extra) extra[0] = 1;
        g_bench_sink += (uintptr_t)extra; /* keeps the pair from being elided */
        free(extra);
        if (probe_us && probes < probes_cap) probe_us[probes++] = (a1 - a0) / 1e3;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    g_bench_sink = sum;
    double cpu1 = thread_cpu_ms("spillway-learn"), s = (now_ns() - t0) / 1e9;
    printf("phase=touch regions=%ld region_mib=%zu seconds=%.1f detector_cpu_ms=%.0f core_share_pct=%.2f\n", regions,
           size >> 20, s, cpu1 - cpu0, cpu0 < 0 ? -1 : (cpu1 - cpu0) / 10.0 / s);
    if (probe_us && probes > 1) {
        double med = median(probe_us, (int)probes); /* sorts */
        printf("alloc_probe=%zu median_us=%.1f p99_us=%.1f max_us=%.1f\n", probes, med,
               probe_us[(size_t)(probes * 0.99)], probe_us[probes - 1]);
    }
    return 0;
}
