/* churn.c — the cost of one large allocate / first-touch / free cycle.
 *
 * usage: churn SIZE CYCLES [memset|touch|calloc] [VARIANT]
 *        churn --floor DIR     (the disk's floor, for figures beside these)
 * Each cycle: p = malloc(SIZE) (calloc(1, SIZE) in calloc mode), write every
 * page (memset of the whole buffer, or one byte per 4 KiB page in touch
 * mode; calloc mode reads one byte per page and checks it is zero), free(p).
 * This is numpy's `a = b * 2` on big arrays in a loop, reduced to its
 * allocator traffic. Prints CSV rows (common.h): the median, minimum and
 * maximum per-cycle time in milliseconds, and the first cycle's on its own.
 * Exit status 1 when a calloc'ed page did not read zero.
 * --floor writes a 256 MiB file in DIR (removed after), then prints the
 * median random 4 KiB O_DIRECT read latency (500 reads) and the sequential
 * O_DIRECT read bandwidth in 8 MiB blocks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <fcntl.h>
#include <unistd.h>

static int floor_of(const char *dir) {
    const size_t file_len = (size_t)256 << 20, block = (size_t)8 << 20;
    char path[4096];
    snprintf(path, sizeof path, "%s/churn-floor-%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror("churn --floor: open");
        return 1;
    }
    unlink(path);
    char *buf = aligned_alloc(4096, block);
    for (size_t i = 0; i < block; i++) buf[i] = (char)(i * 31 + 7); /* not zeros: no compression */
    for (size_t off = 0; off < file_len; off += block)
        if (pwrite(fd, buf, block, (off_t)off) != (ssize_t)block) {
            perror("churn --floor: write");
            return 1;
        }
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    int dfd = open(fdpath, O_RDONLY | O_DIRECT);
    if (dfd < 0) {
        perror("churn --floor: O_DIRECT");
        return 1;
    }
    enum { kReads = 500 };
    double lat[kReads];
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < kReads; i++) {
        off_t off = (off_t)(rng_next(&seed) % (file_len / 4096)) * 4096;
        uint64_t t0 = now_ns();
        if (pread(dfd, buf, 4096, off) != 4096) {
            perror("churn --floor: pread");
            return 1;
        }
        lat[i] = (double)(now_ns() - t0) / 1e3;
    }
    emit("churn", "floor", dir, "rand4k_read_median", median(lat, kReads), "us");
    uint64_t t0 = now_ns();
    for (size_t off = 0; off < file_len; off += block)
        if (pread(dfd, buf, block, (off_t)off) != (ssize_t)block) {
            perror("churn --floor: pread");
            return 1;
        }
    emit("churn", "floor", dir, "seq_read", (double)file_len / 1048576.0 / ((double)(now_ns() - t0) / 1e9), "MiB/s");
    close(dfd);
    close(fd);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--floor") == 0) return floor_of(argv[2]);
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
