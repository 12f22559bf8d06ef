/* callsite_bench.c — what call-site capture and the policy decision add to
 * one large allocation. Run under the shim with a low SPILLWAY_THRESHOLD
 * (the allocations are SIZE bytes, at the threshold), once as is and once
 * with a config that says [callsites] enabled = false; the difference is
 * the capture + decision cost.
 *
 *   cold        first allocation from each of 512 distinct call sites (the
 *               site is captured, identified with dladdr, matched against the
 *               rules and the profile, then inserted)
 *   warm_same   COUNT allocations from one site that has been seen before
 *   warm_many   a second allocation from each of the 512 sites
 * Each timed interval is the malloc() call alone; the region is freed
 * outside the timed interval and never touched.
 *
 * Compiled with -O0 on purpose: every `case` below must stay a separate
 * call instruction (at -O2 the compiler merges or hoists identical calls,
 * and the sites would no longer be distinct).
 *
 * usage: callsite_bench SIZE COUNT VARIANT
 */
#include "common.h"

#include <unistd.h>

#define NSITES 512

static size_t g_size;

#define C1(n) case (n): p = malloc(g_size); break;
#define C8(n) C1(n) C1(n + 1) C1(n + 2) C1(n + 3) C1(n + 4) C1(n + 5) C1(n + 6) C1(n + 7)
#define C64(n) C8(n) C8(n + 8) C8(n + 16) C8(n + 24) C8(n + 32) C8(n + 40) C8(n + 48) C8(n + 56)

static __attribute__((noinline)) void *site_alloc(int site) {
    void *p = NULL;
    switch (site) {
        C64(0) C64(64) C64(128) C64(192) C64(256) C64(320) C64(384) C64(448)
    default: abort();
    }
    return p;
}

static double timed(int site) {
    uint64_t t0 = now_ns();
    void *p = site_alloc(site);
    uint64_t t1 = now_ns();
    if (!p) {
        fprintf(stderr, "callsite_bench: malloc(%zu) failed\n", g_size);
        exit(1);
    }
    free(p);
    return (t1 - t0) / 1e3;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SIZE COUNT VARIANT\n", argv[0]);
        return 2;
    }
    g_size = parse_size(argv[1]);
    int count = atoi(argv[2]);
    const char *variant = argv[3];
    static double cold[NSITES], warm_many[NSITES], scratch;
    double *warm_same = malloc(sizeof(double) * (size_t)count);
    /* One loop, one call of timed(): every pass reaches site_alloc through
     * the same return addresses above it, so "site s" is the same call site
     * (the same captured stack) in every pass. Step 0 is site 0's first
     * allocation (start-up work: first large allocation, reaper thread). */
    int steps = 1 + (NSITES - 1) + count + (NSITES - 1);
    for (int step = 0; step < steps; step++) {
        int site;
        double *out;
        if (step == 0) site = 0, out = &scratch;
        else if (step < NSITES) site = step, out = &cold[step - 1];
        else if (step < NSITES + count) site = 0, out = &warm_same[step - NSITES];
        else site = step - NSITES - count + 1, out = &warm_many[site - 1];
        *out = timed(site);
        if (step == 0) usleep(20000);
    }
    char param[32];
    snprintf(param, sizeof param, "%s", argv[1]);
    emit("callsite", variant, param, "cold_us", median(cold, NSITES - 1), "us");
    emit("callsite", variant, param, "warm_same_us", median(warm_same, count), "us");
    emit("callsite", variant, param, "warm_many_us", median(warm_many, NSITES - 1), "us");
    emit("callsite", variant, param, "cold_p90_us", cold[(NSITES - 1) * 9 / 10], "us");
    free(warm_same);
    return 0;
}
