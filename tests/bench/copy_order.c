/* copy_order.c — what the order of a large copy costs when its source is
 * on disk, and what the front's memcpy costs a small copy; both against
 * glibc's own routine in the same process.
 *
 *   LD_PRELOAD=libspillway.so SPILLWAY_DIR=DISKDIR copy_order [MIB] [ROUNDS]
 *
 * Large: two MIB regions (both start on a 2 MiB boundary, so glibc copies
 * between them backwards); each round writes the source, drops its page
 * cache and the destination's (spillway_release_page_cache), then copies it
 * once with memcpy (under the shim, front/copy_forward.cpp: front to back)
 * and once, after dropping again, with glibc's __memcpy_chk called directly
 * (the order glibc picks), the two in alternating order. Small: 64-byte
 * copies in a loop through memcpy and through __memcpy_chk, alternating.
 * CSV rows (common.h): copy_order,VARIANT,PARAM,METRIC,VALUE,UNIT.
 */

#include "common.h"

#include <dlfcn.h>
#include <sys/resource.h>

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dst_len);

static long major_faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_majflt;
}

typedef void *(*copy_fn)(void *, const void *, size_t);
/* Both through a volatile pointer, so the loop's own call costs the same. */
static void *(*volatile g_glibc_copy)(void *, const void *, size_t, size_t) = __memcpy_chk;
static void *glibc_copy(void *d, const void *s, size_t n) { return g_glibc_copy(d, s, n, (size_t)-1); }
static void *(*volatile g_front_copy)(void *, const void *, size_t) = memcpy;
static void *front_copy(void *d, const void *s, size_t n) { return g_front_copy(d, s, n); }

static void large_round(const char *variant, copy_fn copy, char *src, char *dst, size_t len, int round,
                        int (*release)(const void *)) {
    release(src);
    release(dst);
    long f0 = major_faults();
    uint64_t t0 = now_ns();
    copy(dst, src, len);
    uint64_t t1 = now_ns();
    long f1 = major_faults();
    for (size_t i = 0; i < len; i += 4093)
        if (dst[i] != (char)(i * 7 + 3)) {
            fprintf(stderr, "copy_order: wrong byte at %zu after the %s copy\n", i, variant);
            exit(1);
        }
    printf("copy_order,%s,%zuMiB,seconds_round%d,%.4f,s\n", variant, len >> 20, round, (t1 - t0) / 1e9);
    printf("copy_order,%s,%zuMiB,major_faults_round%d,%ld,faults\n", variant, len >> 20, round, f1 - f0);
}

static double small_loop(copy_fn copy, char *a, char *b, long n) {
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        copy(a + (i & 63), b + ((i * 7) & 63), 64);
        __asm__ volatile("" ::: "memory");
    }
    return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv) {
    size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 76) << 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    int (*release)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_release_page_cache");
    if (!release) {
        fprintf(stderr, "copy_order: run it under the shim (LD_PRELOAD=libspillway.so, SPILLWAY_DIR on a disk)\n");
        return 2;
    }
    char *src = malloc(len), *dst = malloc(len);
    if (!src || !dst) return 1;
    for (size_t i = 0; i < len; i++) src[i] = (char)(i * 7 + 3);
    memset(dst, 0, len);
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            large_round("front", front_copy, src, dst, len, r, release);
            large_round("glibc", glibc_copy, src, dst, len, r, release);
        } else {
            large_round("glibc", glibc_copy, src, dst, len, r, release);
            large_round("front", front_copy, src, dst, len, r, release);
        }
    }
    static char a[256], b[256];
    const long n = 20000000;
    for (int r = 0; r < rounds; r++) {
        double front = small_loop(front_copy, a, b, n), glibc = small_loop(glibc_copy, a, b, n);
        printf("copy_order,front,64B,ns_per_copy_round%d,%.2f,ns\n", r, front);
        printf("copy_order,glibc,64B,ns_per_copy_round%d,%.2f,ns\n", r, glibc);
    }
    free(src);
    free(dst);
    return 0;
}
