/* fresh_fill.c — what a first store into each page of a fresh spill file
 * costs, by how the page gets into the page cache: the cost the block zone
 * (shim/engine/large/block_zone.cpp, prefill_bytes) pays for each page of a
 * CPython arena it hands out.
 *
 * usage: fresh_fill DIR [MIB] [ROUNDS]   (default 256 MiB, 3 rounds)
 *   A file of MIB reserved with fallocate(2) (unwritten extents, as a spill
 *   chunk is), mapped shared, and one byte stored in each page, in order,
 *   1 MiB at a time, in four ways, each round in turn:
 *     normal    the mapping under MADV_NORMAL: faults with read-around;
 *     random    under MADV_RANDOM (the shim's advice for a region under
 *               64 MiB, such as a 32 MiB chunk): a fault per page;
 *     willneed  MADV_RANDOM, and MADV_WILLNEED over each MiB first;
 *     prefill   MADV_RANDOM, and each MiB written with zeros by pwrite
 *               first (what the block zone does for each block it hands
 *               out).
 * Prints per way and round the seconds, microseconds a page, and the major
 * and minor faults. No memory limit: the figure is the kernel's per-page
 * work, not the disk's (an unwritten extent is read as zeros, no I/O).
 * Ratios against `random` in the same round are the figure; these VMs
 * are noisy, and the first toucher of memory after a pause pays.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

enum { kNormal, kRandom, kWillneed, kPrefill, kWays };
static const char *const kNames[kWays] = {"normal", "random", "willneed", "prefill"};
static char g_zeros[1 << 20];

static double fill(const char *dir, int way, size_t len, long *majflt, long *minflt) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fresh_fill.%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || fallocate(fd, 0, 0, (off_t)len) != 0) {
        fprintf(stderr, "fresh_fill: cannot make a reserved file in %s (%m): give a directory on a disk filesystem\n", dir);
        exit(1);
    }
    unlink(path);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { perror("fresh_fill: mmap"); exit(1); }
    if (way != kNormal) madvise(p, len, MADV_RANDOM);
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    uint64_t t0 = now_ns();
    for (size_t off = 0; off < len; off += sizeof g_zeros) {
        if (way == kWillneed) madvise(p + off, sizeof g_zeros, MADV_WILLNEED);
        if (way == kPrefill && pwrite(fd, g_zeros, sizeof g_zeros, (off_t)off) != (ssize_t)sizeof g_zeros) {
            perror("fresh_fill: pwrite");
            exit(1);
        }
        for (size_t i = 0; i < sizeof g_zeros; i += 4096) p[off + i] = 1;
    }
    double s = (now_ns() - t0) / 1e9;
    getrusage(RUSAGE_SELF, &b);
    *majflt = b.ru_majflt - a.ru_majflt;
    *minflt = b.ru_minflt - a.ru_minflt;
    munmap(p, len);
    close(fd);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fresh_fill DIR [MIB] [ROUNDS]: DIR on a disk filesystem (ext4, XFS)\n");
        return 2;
    }
    size_t len = (size_t)(argc > 2 ? atoi(argv[2]) : 256) << 20;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    printf("%-6s %-9s %9s %9s %9s %9s %9s\n", "round", "way", "s", "us/page", "x random", "majflt", "minflt");
    for (int r = 1; r <= rounds; r++) {
        double s[kWays];
        long maj[kWays], min[kWays];
        for (int k = 0; k < kWays; k++) { // each round starts at another way: the first toucher pays
            int w = (k + r) % kWays;
            s[w] = fill(argv[1], w, len, &maj[w], &min[w]);
        }
        for (int w = 0; w < kWays; w++)
            printf("%-6d %-9s %9.3f %9.2f %9.2f %9ld %9ld\n", r, kNames[w], s[w], s[w] * 1e6 / (double)(len / 4096),
                   s[w] / s[kRandom], maj[w], min[w]);
    }
    return 0;
}
