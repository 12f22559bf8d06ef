/* common.h — small helpers shared by the benchmark programs (header only).
 *
 * Every program prints its measurements as CSV rows on stdout:
 *   bench,variant,param,metric,value,unit
 * run.sh adds the round number and collects them into results.csv.
 */
#ifndef SPILLWAY_BENCH_COMMON_H
#define SPILLWAY_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The bytes this process made the kernel read from and write to storage
 * (/proc/self/io read_bytes, and write_bytes less cancelled_write_bytes:
 * its faults, read-ahead and the writeback it caused; a page is counted
 * written when it is dirtied, and cancelled when it is dropped dirty, as
 * the shim's zeroing of dirty zeros drops it). Zero when the file cannot
 * be read. */
static inline void proc_io_bytes(unsigned long long *read, unsigned long long *written) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    unsigned long long cancelled = 0;
    *read = *written = 0;
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "read_bytes: %llu", read);
        sscanf(line, "write_bytes: %llu", written);
        sscanf(line, "cancelled_write_bytes: %llu", &cancelled);
    }
    if (f) fclose(f);
    *written = *written > cancelled ? *written - cancelled : 0;
}

/* xorshift64*: cheap, deterministic per-thread randomness. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; break;
    case 'm': case 'M': v *= 1024.0 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (uint64_t)v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of n values (sorts v in place). */
static inline double median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void emit(const char *bench, const char *variant, const char *param,
                        const char *metric, double value, const char *unit) {
    printf("%s,%s,%s,%s,%.6g,%s\n", bench, variant, param, metric, value, unit);
    fflush(stdout);
}

/* A sink the compiler cannot see through, so work is never optimised away. */
static volatile uint64_t g_bench_sink;

#endif
