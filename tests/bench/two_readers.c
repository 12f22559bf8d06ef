/* two_readers.c — two threads read one large buffer at once, pass after
 * pass, as OpenMP loops do (XGBoost's sketch: every thread walks every row
 * for its own columns; a static schedule: each thread its half of the rows).
 *
 * usage: two_readers MIB MODE LAG_MIB PASSES WORK
 *   MODE same:   both threads read the whole buffer in order, the second
 *                starting once the first is LAG_MIB in;
 *        halves: each thread reads its half in order;
 *        one:    one thread reads it all (the single-reader baseline).
 *   WORK: multiply-adds per 64-byte line (0: a bare pass; 40: about the
 *   speed of a sketch's loop, so the detector's 10-20 ms looks see it).
 * The buffer is malloc'd (a spill file under the shim), or with PLAIN=FILE
 * in the environment a MAP_SHARED mapping of FILE (fallocated: the kernel
 * alone, the baseline). It is written once, then each pass prints its
 * seconds and the MiB this process read from storage (/proc/self/io
 * read_bytes: faults, the kernel's read-ahead and the shim's worker alike).
 * tests/bench/two_readers.sh runs it in a memory cgroup both ways.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { SAME, HALVES, ONE };
static size_t g_len, g_lag;
static uint8_t *g_buf;
static int g_mode, g_work;
static volatile size_t g_first_at; // the first reader's position
static uint64_t g_sums[2];

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned long long storage_read_bytes(void) {
    unsigned long long read, written;
    proc_io_bytes(&read, &written);
    return read;
}

static void *reader(void *arg) {
    int t = (int)(intptr_t)arg;
    size_t from = 0, to = g_len;
    if (g_mode == HALVES) {
        from = t * (g_len / 2);
        to = from + g_len / 2;
    }
    if (g_mode == SAME && t == 1)
        while (g_first_at < g_lag) usleep(1000);
    uint64_t s = 0;
    for (size_t i = from; i < to; i += 64) {
        for (int w = 0; w < g_work; w++) s = s * 6364136223846793005ull + g_buf[i + (w & 63)];
        s += g_buf[i];
        if (t == 0 && (i & 0xfffff) == 0) g_first_at = i;
    }
    if (t == 0) g_first_at = g_len;
    g_sums[t] = s;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6 || (strcmp(argv[2], "same") && strcmp(argv[2], "halves") && strcmp(argv[2], "one"))) {
        fprintf(stderr, "usage: two_readers MIB same|halves|one LAG_MIB PASSES WORK\n");
        return 2;
    }
    g_len = (size_t)atol(argv[1]) << 20;
    g_mode = !strcmp(argv[2], "same") ? SAME : !strcmp(argv[2], "halves") ? HALVES : ONE;
    g_lag = (size_t)atol(argv[3]) << 20;
    int passes = atoi(argv[4]);
    g_work = atoi(argv[5]);
    const char *plain = getenv("PLAIN");
    if (plain) {
        int fd = open(plain, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || fallocate(fd, 0, 0, (off_t)g_len) != 0) {
            perror("two_readers: PLAIN file");
            return 1;
        }
        g_buf = mmap(NULL, g_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (g_buf == MAP_FAILED) g_buf = NULL;
    } else {
        g_buf = malloc(g_len);
    }
    if (!g_buf) {
        perror("two_readers: buffer");
        return 1;
    }
    for (size_t i = 0; i < g_len; i += 4096) memset(g_buf + i, (int)(i >> 12), 4096);
    sleep(2); // writeback of the fill settles a little before the first pass
    int threads = g_mode == ONE ? 1 : 2;
    for (int p = 0; p < passes; p++) {
        g_first_at = 0;
        unsigned long long r0 = storage_read_bytes();
        double t0 = now_s();
        pthread_t th[2];
        for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, reader, (void *)(intptr_t)t);
        for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
        printf("TWOREADERS mode=%s backing=%s pass=%d s=%.3f read_mib=%.0f sums=%llx/%llx\n", argv[2],
               plain ? "plain" : "malloc", p, now_s() - t0, (storage_read_bytes() - r0) / 1048576.0,
               (unsigned long long)g_sums[0], (unsigned long long)g_sums[1]);
    }
    return 0;
}
