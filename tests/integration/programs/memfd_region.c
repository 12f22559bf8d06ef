/* memfd_region.c — scenario 9: a 256 MiB region under SPILLWAY_POLICY=memory
 * in a container whose /dev/shm is Docker's default 64 MiB. Default mode:
 * malloc the region, write and verify it, and show where it lives: the
 * shim's backing, the /proc/self/maps line at its start (a memfd, not
 * /dev/shm), and whether every mapping over its whole range is one (a
 * region half moved to a spill file showed only at its start, issue 25).
 * --fill-mib-s RATE writes it at RATE MiB/s, as a slower machine does.
 * --devshm (control): put the same bytes in a /dev/shm file instead, which
 * must stop with ENOSPC at the 64 MiB size of /dev/shm.
 * Usage: memfd_region SIZE_MIB [--devshm | --fill-mib-s RATE] */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static void print_devshm_size(void) {
    struct statvfs v;
    if (statvfs("/dev/shm", &v) == 0)
        printf("/dev/shm size: %llu MiB\n", (unsigned long long)v.f_blocks * v.f_frsize >> 20);
    else
        printf("/dev/shm size: unknown (%s)\n", strerror(errno));
}

static int devshm_control(size_t size) {
    static char block[1 << 20];
    const char *path = "/dev/shm/spillway-int-control";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        fprintf(stderr, "memfd_region: cannot create %s (%s)\n", path, strerror(errno));
        return 2;
    }
    memset(block, 0x5a, sizeof block);
    size_t written = 0;
    int err = 0;
    while (written < size) {
        ssize_t w = write(fd, block, sizeof block);
        if (w <= 0) {
            err = errno;
            break;
        }
        written += (size_t)w;
    }
    close(fd);
    unlink(path);
    if (err) {
        printf("devshm: %s after %zu MiB of %zu MiB\n", err == ENOSPC ? "ENOSPC" : strerror(err),
               written >> 20, size >> 20);
        return 1;
    }
    printf("devshm: wrote all %zu MiB\n", size >> 20);
    return 0;
}

/* The /proc/self/maps line of the mapping that holds p, into line[cap]. */
static void mapping_of(const void *p, char *line, size_t cap) {
    FILE *f = fopen("/proc/self/maps", "r");
    snprintf(line, cap, "(not found)");
    if (!f) return;
    char buf[512];
    while (fgets(buf, sizeof buf, f)) {
        unsigned long lo, hi;
        if (sscanf(buf, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi) {
            buf[strcspn(buf, "\n")] = 0;
            snprintf(line, cap, "%s", buf);
            break;
        }
    }
    fclose(f);
}

/* Whether every mapping over [p, p+len) is a memfd; into line[cap], the
 * first that is not (or a gap), else how many there are. */
static int all_memfd(const void *p, size_t len, char *line, size_t cap) {
    FILE *f = fopen("/proc/self/maps", "r");
    snprintf(line, cap, "cannot read /proc/self/maps");
    if (!f) return 0;
    uintptr_t at = (uintptr_t)p, end = at + len;
    int spans = 0, ok = 1;
    char buf[512];
    while (ok && fgets(buf, sizeof buf, f)) {
        unsigned long lo, hi;
        if (sscanf(buf, "%lx-%lx", &lo, &hi) != 2 || hi <= at || lo >= end) continue;
        buf[strcspn(buf, "\n")] = 0;
        ok = lo <= at && strstr(buf, " rw-s ") && strstr(buf, "/memfd:");
        if (ok) at = hi;
        else snprintf(line, cap, "at offset %lu MiB: %s", (unsigned long)((lo > at ? at : lo) - (uintptr_t)p) >> 20, buf);
        spans++;
    }
    fclose(f);
    if (ok && at < end) {
        snprintf(line, cap, "its last %lu MiB are not mapped", (unsigned long)(end - at) >> 20);
        ok = 0;
    }
    if (ok) snprintf(line, cap, "%d mapping(s)", spans);
    return ok;
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "memfd_region: usage: memfd_region SIZE_MIB [--devshm]; pass the size\n");
        return 2;
    }
    size_t size = strtoull(argv[1], 0, 10) << 20, words = size / 8;
    print_devshm_size();
    if (argc > 2 && strcmp(argv[2], "--devshm") == 0) return devshm_control(size);

    double rate = argc > 3 && strcmp(argv[2], "--fill-mib-s") == 0 ? strtod(argv[3], 0) : 0;

    uint64_t *p = malloc(size);
    if (!p) {
        fprintf(stderr, "memfd_region: malloc(%zu MiB) failed; out of memory\n", size >> 20);
        return 3;
    }
    double t0 = seconds_now();
    const size_t step = (8 << 20) / 8; /* words: 8 MiB at a time */
    for (size_t first = 0; first < words; first += step) {
        for (size_t i = first; i < words && i < first + step; i++) p[i] = probe_mix(i);
        double due = rate > 0 ? t0 + (double)((first + step) * 8 >> 20) / rate : 0;
        while (seconds_now() < due) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, 0);
        }
    }
    printf("filled in %.0f ms\n", (seconds_now() - t0) * 1e3);
    /* The shim first (it answers once a move under way is over), then the kernel. */
    int backing = probe_backing(p);
    char line[512], range[640];
    mapping_of(p, line, sizeof line);
    int whole = all_memfd(p, size, range, sizeof range);
    printf("backing=%s\n", probe_backing_name(backing));
    printf("mapping: %s\n", line);
    printf("range: %s\n", whole ? "all memfd" : "NOT all memfd");
    printf("range detail: %s\n", range);
    for (size_t i = 0; i < words; i++)
        if (p[i] != probe_mix(i)) {
            printf("checksum MISMATCH at word %zu\n", i);
            return 1;
        }
    printf("checksum ok over %zu MiB\n", size >> 20);
    free(p);
    return 0;
}
