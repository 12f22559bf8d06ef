/* move_pause.c — what a move (spillway_spill) costs the threads using the
 * region: run under LD_PRELOAD=libspillway.so (spillway_spill is found with
 * dlsym, so without the shim it says so and exits 2).
 *
 *   move_pause SPILLS REGION_MIB [memory|anon] [writer|nowriter]
 *
 * Each spill: a fresh region (spillway_alloc SPILLWAY_PREFER_MEMORY, or
 * malloc under SPILLWAY_POLICY=anon), filled; a thread pread(2)s 1 MiB from
 * a file into its last MiB, 100 us apart, and (writer) another stores one
 * word per page sweeping the region's first half, 64 stores then 20 us
 * apart (paced, so the figures are the move's, not two threads spinning
 * against the mover on a small machine). First an equal stretch with no
 * move (the floor: what the scheduler alone does to them on this machine),
 * then spillway_spill. Prints one line per spill:
 *
 *   spill=N ms=... mib_s=... store_max_ms=... floor_store_max_ms=...
 *   pread_max_ms=... floor_pread_max_ms=... preads=... efault=... short=...
 *
 * store_max_ms: the longest single store (one waiting for the move shows
 * here); pread_max_ms: the longest single pread. A benchmark: it prints
 * figures, asserts nothing (the bytes are checked, a wrong one exits 1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *g_region;
static size_t g_size;
static int g_src = -1;
static atomic_int g_stop;
static atomic_int g_measure;        /* 0: idle, 1: measuring */
static atomic_uint_fast64_t g_writer_gap, g_pread_max, g_preads, g_efault, g_short, g_other;

static void note_max(atomic_uint_fast64_t *max, uint64_t d) {
    if (atomic_load_explicit(&g_measure, memory_order_relaxed) && d > atomic_load(max)) atomic_store(max, d);
}

static void *writer(void *arg) {
    (void)arg;
    uint64_t *w = (uint64_t *)g_region;
    size_t pages = g_size / 2 / 4096, i = 0;
    uint64_t k = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int b = 0; b < 64; b++, k++, i++) {
            uint64_t t0 = now_ns();
            __atomic_store_n(&w[(i % pages) * 512], k, __ATOMIC_RELAXED);
            note_max(&g_writer_gap, now_ns() - t0);
        }
        usleep(20);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    char *into = g_region + g_size - MiB;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        uint64_t t0 = now_ns();
        ssize_t got = pread(g_src, into, MiB, 0);
        note_max(&g_pread_max, now_ns() - t0);
        if (atomic_load_explicit(&g_measure, memory_order_relaxed)) {
            atomic_fetch_add(&g_preads, 1);
            if (got < 0 && errno == EFAULT) atomic_fetch_add(&g_efault, 1);
            else if (got < 0) atomic_fetch_add(&g_other, 1);
            else if (got != (ssize_t)MiB) atomic_fetch_add(&g_short, 1);
        }
        usleep(100);
    }
    return NULL;
}

static void measure_reset(void) {
    atomic_store(&g_writer_gap, 0);
    atomic_store(&g_pread_max, 0);
    atomic_store(&g_preads, 0);
    atomic_store(&g_efault, 0);
    atomic_store(&g_short, 0);
    atomic_store(&g_other, 0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: move_pause SPILLS REGION_MIB [memory|anon] [writer|nowriter]\n");
        return 2;
    }
    int (*spill)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "spillway_spill");
    void *(*alloc)(size_t, unsigned) = (void *(*)(size_t, unsigned))dlsym(RTLD_DEFAULT, "spillway_alloc");
    if (!spill || !alloc) {
        fprintf(stderr, "move_pause: run it under LD_PRELOAD=libspillway.so\n");
        return 2;
    }
    int spills = atoi(argv[1]);
    g_size = (size_t)atoi(argv[2]) * MiB;
    int memory = argc < 4 || strcmp(argv[3], "anon") != 0;
    int with_writer = argc < 5 || strcmp(argv[4], "nowriter") != 0;
    const char *dir = getenv("SPILLWAY_DIR");
    g_src = open(dir ? dir : "/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    char *bytes = malloc(MiB);
    for (size_t i = 0; i < MiB; i++) bytes[i] = (char)(i * 31 + 1);
    if (g_src < 0 || pwrite(g_src, bytes, MiB, 0) != (ssize_t)MiB) {
        perror("move_pause: source file");
        return 1;
    }
    for (int s = 0; s < spills; s++) {
        g_region = memory ? alloc(g_size, 2 /* SPILLWAY_PREFER_MEMORY */) : malloc(g_size);
        if (!g_region) return 1;
        memset(g_region, 7, g_size);
        atomic_store(&g_stop, 0);
        atomic_store(&g_measure, 0);
        pthread_t tw, tr;
        if (with_writer) pthread_create(&tw, NULL, writer, NULL);
        pthread_create(&tr, NULL, reader, NULL);
        usleep(50000);
        /* The floor: as long as the last spill took (500 ms the first time). */
        static uint64_t last_ms = 500;
        measure_reset();
        atomic_store(&g_measure, 1);
        usleep((useconds_t)(last_ms * 1000));
        atomic_store(&g_measure, 0);
        uint64_t floor_gap = atomic_load(&g_writer_gap), floor_pread = atomic_load(&g_pread_max);
        measure_reset();
        atomic_store(&g_measure, 1);
        uint64_t t0 = now_ns();
        int rc = spill(g_region);
        uint64_t t1 = now_ns();
        atomic_store(&g_measure, 0);
        atomic_store(&g_stop, 1);
        if (with_writer) pthread_join(tw, NULL);
        pthread_join(tr, NULL);
        if (pread(g_src, g_region + g_size - MiB, MiB, 0) != (ssize_t)MiB ||
            memcmp(g_region + g_size - MiB, bytes, MiB) != 0) {
            fprintf(stderr, "move_pause: the region's last MiB is wrong after the spill\n");
            return 1;
        }
        last_ms = (t1 - t0) / 1000000 + 1;
        printf("spill=%d rc=%d ms=%.1f mib_s=%.0f store_max_ms=%.3f floor_store_max_ms=%.3f pread_max_ms=%.3f "
               "floor_pread_max_ms=%.3f preads=%llu efault=%llu short=%llu other=%llu\n",
               s, rc, (t1 - t0) / 1e6, (double)g_size / MiB / ((t1 - t0) / 1e9),
               with_writer ? atomic_load(&g_writer_gap) / 1e6 : 0.0, with_writer ? floor_gap / 1e6 : 0.0,
               atomic_load(&g_pread_max) / 1e6, floor_pread / 1e6, (unsigned long long)atomic_load(&g_preads),
               (unsigned long long)atomic_load(&g_efault), (unsigned long long)atomic_load(&g_short),
               (unsigned long long)atomic_load(&g_other));
        fflush(stdout);
        free(g_region);
    }
    return 0;
}
