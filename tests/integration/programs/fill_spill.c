/* fill_spill.c — scenario 5: the spill directory's filesystem fills up.
 * Default mode (run under the shim, small threshold): region 1 is malloc'd
 * (reserved on disk), then the filesystem is filled to the last block with a
 * filler file, then region 1 is written in full (a reserved file cannot
 * SIGBUS), then COUNT-1 more regions are malloc'd (the shim cannot reserve:
 * it must fall back loudly) and written; everything is verified.
 * --naive (control, no shim): the same, but region 1 is a sparse
 * ftruncate'd file mapped MAP_SHARED, as a shim without reservation would
 * do; writing it on the full filesystem must raise SIGBUS (exit 135).
 * Usage: fill_spill SPILL_DIR REGION_MIB COUNT [--naive] */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

static char block[1 << 20];

/* Writes a filler file in dir until the filesystem refuses even 4 KiB. */
static long long fill_filesystem(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/filler", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fill_spill: cannot create %s (%s); is the spill dir writable?\n", path, strerror(errno));
        exit(2);
    }
    long long written = 0;
    for (size_t step = sizeof block; step >= 4096; step /= 2) {
        for (;;) {
            ssize_t w = write(fd, block, step);
            if (w <= 0) break;
            written += w;
        }
        fsync(fd); /* delayed allocation: make the blocks real before retrying smaller */
    }
    close(fd);
    return written;
}

static void fill_region(uint64_t *p, size_t words, uint64_t seed) {
    for (size_t i = 0; i < words; i++) p[i] = probe_mix(seed + i);
}

static int region_ok(const uint64_t *p, size_t words, uint64_t seed) {
    for (size_t i = 0; i < words; i++)
        if (p[i] != probe_mix(seed + i)) return 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "fill_spill: usage: fill_spill SPILL_DIR REGION_MIB COUNT [--naive]; pass all three\n");
        return 2;
    }
    const char *dir = argv[1];
    size_t region = strtoull(argv[2], 0, 10) << 20, words = region / 8;
    int count = atoi(argv[3]);
    int naive = argc > 4 && strcmp(argv[4], "--naive") == 0;
    uint64_t **r = calloc((size_t)count, sizeof *r);
    int backing[4] = {0};
    memset(block, 0xa5, sizeof block);

    if (naive) {
        char path[4096];
        snprintf(path, sizeof path, "%s/naive-sparse", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)region) != 0) {
            fprintf(stderr, "fill_spill: cannot create sparse %s (%s)\n", path, strerror(errno));
            return 2;
        }
        r[0] = mmap(0, region, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r[0] == MAP_FAILED) {
            fprintf(stderr, "fill_spill: mmap of %s failed (%s)\n", path, strerror(errno));
            return 2;
        }
        printf("region 1: sparse file mapping (no reservation)\n");
    } else {
        r[0] = malloc(region);
        if (!r[0]) {
            fprintf(stderr, "fill_spill: malloc of region 1 failed; out of memory\n");
            return 3;
        }
        backing[probe_backing(r[0]) & 3]++;
        printf("region 1: backing=%s\n", probe_backing_name(probe_backing(r[0])));
    }
    fflush(stdout);

    long long filled = fill_filesystem(dir);
    struct statvfs vfs;
    statvfs(dir, &vfs);
    printf("filesystem filled: filler %lld MiB, %llu KiB left\n", filled >> 20,
           (unsigned long long)vfs.f_bavail * vfs.f_frsize / 1024);
    fflush(stdout);

    fill_region(r[0], words, 0); /* SIGBUS here if region 1 is not reserved */
    printf("region 1 written in full on the full filesystem\n");
    fflush(stdout);

    for (int i = 1; i < count; i++) {
        r[i] = malloc(region);
        if (!r[i]) {
            fprintf(stderr, "fill_spill: malloc of region %d failed cleanly (out of memory)\n", i + 1);
            return 3;
        }
        backing[probe_backing(r[i]) & 3]++;
        printf("region %d: backing=%s\n", i + 1, probe_backing_name(probe_backing(r[i])));
        fflush(stdout);
        fill_region(r[i], words, (uint64_t)i * words);
    }
    int bad = 0;
    for (int i = 0; i < count; i++) bad += !region_ok(r[i], words, (uint64_t)i * words);
    char path[4096];
    snprintf(path, sizeof path, "%s/filler", dir);
    unlink(path);
    printf("regions: disk=%d memory=%d anon=%d none=%d\n", backing[1], backing[2], backing[3], backing[0]);
    if (bad) {
        printf("checksum MISMATCH in %d regions\n", bad);
        return 1;
    }
    printf("checksum ok over %d regions\n", count);
    return 0;
}
