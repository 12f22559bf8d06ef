/* churn.c — the cost of one large allocate / first-touch / free cycle.
 *
 * usage: churn SIZE CYCLES [memset|touch|calloc] [VARIANT]
 * Each cycle: p = malloc(SIZE) (calloc(1, SIZE) in calloc mode), write every
 * page (memset of the whole buffer, or one byte per 4 KiB page in touch
 * mode; calloc mode reads one byte per page and checks it is zero), free(p).
 * This is numpy's `a = b * 2` on big arrays in a loop, reduced to its
 * allocator traffic. Prints CSV rows (common.h): the median, minimum and
 * maximum per-cycle time in milliseconds, and the first cycle's on its own.
 * Exit status 1 when a calloc'ed page did not read zero.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: churn SIZE CYCLES [memset|touch|calloc] [VARIANT]\n");
        return 2;
    }
    size_t size = (size_t)parse_size(argv[1]);
    int cycles = atoi(argv[2]);
    const char *mode = argc > 3 ? argv[3] : "memset";
    const char *variant = argc > 4 ? argv[4] : "run";
    if (size < 4096 || cycles < 1) {
        fprintf(stderr, "churn: SIZE must be at least 4K and CYCLES at least 1\n");
        return 2;
    }
    double *ms = malloc(sizeof(double) * (size_t)cycles);
    int bad = 0;
    for (int i = 0; i < cycles; i++) {
        uint64_t t0 = now_ns();
        int zero = strcmp(mode, "calloc") == 0;
        char *p = zero ? calloc(1, size) : malloc(size);
        if (!p) {
            fprintf(stderr, "churn: allocation of %zu bytes failed\n", size);
            return 1;
        }
        if (strcmp(mode, "memset") == 0) {
            memset(p, i + 1, size);
        } else {
            for (size_t off = 0; off < size; off += 4096) {
                if (zero && p[off] != 0) bad = 1;
                p[off] = (char)(i + 1);
            }
        }
        __asm__ volatile("" : : "r"(p) : "memory"); /* the writes must happen */
        free(p);
        ms[i] = (double)(now_ns() - t0) / 1e6;
    }
    char param[64];
    snprintf(param, sizeof param, "%zuMiB-%s", size >> 20, mode);
    emit("churn", variant, param, "first_cycle", ms[0], "ms");
    double lo = ms[0], hi = ms[0];
    for (int i = 0; i < cycles; i++) {
        if (ms[i] < lo) lo = ms[i];
        if (ms[i] > hi) hi = ms[i];
    }
    emit("churn", variant, param, "min_cycle", lo, "ms");
    emit("churn", variant, param, "max_cycle", hi, "ms");
    emit("churn", variant, param, "median_cycle", median(ms, cycles), "ms");
    if (bad) fprintf(stderr, "churn: a calloc'ed page did not read zero\n");
    free(ms);
    return bad;
}
