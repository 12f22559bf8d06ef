/* tier_growth.c — scenario 14: a 600 MiB random-access region placed in
 * memory (spillway_alloc with SPILLWAY_RANDOM_ACCESS, found with dlsym),
 * filled, then the job's other memory (4 KiB mallocs, the small path) grows
 * by GROW MiB at RATE MiB/s, past the container's limit. With tiering the
 * region moves to disk in place and the job ends; without, it is
 * OOM-killed. Prints the region's backing at each step (after the growth,
 * once a move under way has finished) and a checksum.
 * Usage: tier_growth REGION_MIB GROW_MIB RATE_MIB_S [WAIT_MS]
 * WAIT_MS (default 60000): how long to wait for the move after the growth;
 * 0 for a run without a limit, where nothing moves (it waited 60 s for
 * nothing). */
#include "probe.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "tier_growth: usage: tier_growth REGION_MIB GROW_MIB RATE_MIB_S [WAIT_MS]\n");
        return 2;
    }
    size_t region_mib = strtoull(argv[1], 0, 10), grow_mib = strtoull(argv[2], 0, 10);
    double rate = strtod(argv[3], 0), wait_ms = argc == 5 ? strtod(argv[4], 0) : 60000;
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *(*alloc)(size_t, unsigned) = (void *(*)(size_t, unsigned))dlsym(RTLD_DEFAULT, "spillway_alloc");
    size_t words = region_mib << 17;
    uint64_t *region = alloc ? alloc(words * 8, 4 /* SPILLWAY_RANDOM_ACCESS */) : malloc(words * 8);
    if (!region) {
        printf("region: allocation failed\n");
        return 3;
    }
    printf("placed=%s\n", probe_backing_name(probe_backing(region)));
    for (size_t i = 0; i < words; i++) region[i] = mix(i);
    struct timespec pause = {0, 600000000};
    nanosleep(&pause, NULL);
    printf("before_growth=%s\n", probe_backing_name(probe_backing(region)));
    double t0 = now_ms();
    for (size_t step = 0; step < grow_mib / 8; step++) {
        for (int b = 0; b < 2048; b++) {
            char *p = malloc(4096);
            if (!p) {
                printf("growth: malloc failed\n");
                return 4;
            }
            memset(p, (int)(step + b), 4096);
        }
        double due = (step + 1) * 8 * 1000 / rate, late = now_ms() - t0;
        if (due > late) {
            struct timespec ts = {0, (long)((due - late) * 1e6)};
            nanosleep(&ts, NULL);
        }
    }
    printf("grown=%zu MiB in %.0f ms\n", grow_mib, now_ms() - t0);
    /* A demotion frees the region's memory chunk by chunk as it goes (that
     * is what keeps the job alive) and changes its backing when the last
     * chunk is on disk, which on a slow disk can be after the growth ended:
     * wait for it (at most wait_ms), and say how long. */
    double t1 = now_ms();
    while (probe_backing(region) != 1 /* disk */ && now_ms() - t1 < wait_ms) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    printf("after_growth=%s\nwaited_for_move_ms=%.0f\n", probe_backing_name(probe_backing(region)),
           now_ms() - t1);
    for (size_t i = 0; i < words; i++)
        if (region[i] != mix(i)) {
            printf("checksum MISMATCH at word %zu\n", i);
            return 1;
        }
    printf("checksum ok over %zu MiB\n", region_mib);
    return 0;
}
