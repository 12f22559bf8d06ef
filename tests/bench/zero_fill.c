/* zero_fill.c — a buffer zeroed, then written with its real contents by
 * two threads, each its half, as XGBoost builds its DMatrix from a numpy
 * array (its ParallelGroupBuilder: `data_.resize(n)` value-initialises
 * every entry, then each OpenMP thread writes its rows' (index, value)
 * pairs over the zeros).
 *
 * usage: zero_fill SRC_MIB ZERO
 *   A source of SRC_MIB (float32, written once) and a destination twice
 *   as large (pairs of 4-byte index and value), both malloc'd (spill files
 *   under the shim). ZERO 1: the destination is zeroed first (memset, as
 *   resize does); 0: it is written only once (as reserve + push_back would).
 * Prints per step its seconds and the MiB this process read from and wrote
 * to storage (/proc/self/io: faults, read-ahead, writeback it caused).
 * Run it in a memory cgroup smaller than both buffers to see what the
 * zeros cost once spilled: under a limit they are written back, then read
 * back from disk before the real contents overwrite them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float *g_src;
static uint32_t *g_dst;
static size_t g_n; // floats in the source

static double now_s(void) { return now_ns() / 1e9; }

static void *copy_half(void *arg) {
    size_t half = (size_t)(uintptr_t)arg, from = half ? g_n / 2 : 0, to = half ? g_n : g_n / 2;
    for (size_t i = from; i < to; i++) {
        g_dst[2 * i] = (uint32_t)(i % 64);
        memcpy(&g_dst[2 * i + 1], &g_src[i], 4);
    }
    return NULL;
}

static void step(const char *name, double t0, unsigned long long r0, unsigned long long w0) {
    unsigned long long r, w;
    proc_io_bytes(&r, &w);
    printf("%s_s=%.2f %s_read_mib=%.0f %s_written_mib=%.0f\n", name, now_s() - t0, name, (r - r0) / 1048576.0, name,
           (w - w0) / 1048576.0);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: zero_fill SRC_MIB ZERO(0|1)\n");
        return 2;
    }
    size_t src_bytes = (size_t)strtoull(argv[1], NULL, 10) << 20;
    int zero = atoi(argv[2]);
    g_n = src_bytes / 4;
    g_src = malloc(src_bytes);
    g_dst = malloc(2 * src_bytes);
    if (!g_src || !g_dst) {
        fprintf(stderr, "zero_fill: cannot allocate %zu MiB: lower SRC_MIB\n", 3 * (src_bytes >> 20));
        return 1;
    }
    unsigned long long r0, w0;
    proc_io_bytes(&r0, &w0);
    double t0 = now_s();
    uint32_t x = 7;
    for (size_t i = 0; i < g_n; i++) {
        x = x * 1664525u + 1013904223u;
        g_src[i] = (float)(x >> 8);
    }
    step("source", t0, r0, w0);
    proc_io_bytes(&r0, &w0);
    t0 = now_s();
    if (zero) memset(g_dst, 0, 2 * src_bytes);
    step("zero", t0, r0, w0);
    proc_io_bytes(&r0, &w0);
    t0 = now_s();
    pthread_t a, b;
    pthread_create(&a, NULL, copy_half, (void *)(uintptr_t)0);
    pthread_create(&b, NULL, copy_half, (void *)(uintptr_t)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    step("copy", t0, r0, w0);
    uint64_t sum = 0;
    for (size_t i = 0; i < 2 * g_n; i += 4096) sum += g_dst[i] + g_dst[i + 1];
    printf("check=%llu\n", (unsigned long long)sum);
    return 0;
}
