/* memfd_region.c — scenario 9: a 256 MiB region under SPILLWAY_POLICY=memory
 * in a container whose /dev/shm is Docker's default 64 MiB. Default mode:
 * malloc the region, write and verify it, and show where it lives (the
 * shim's backing and the /proc/self/maps line: a memfd, not /dev/shm).
 * --devshm (control): put the same bytes in a /dev/shm file instead, which
 * must stop with ENOSPC at the 64 MiB size of /dev/shm.
 * Usage: memfd_region SIZE_MIB [--devshm] */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/statvfs.h>
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

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "memfd_region: usage: memfd_region SIZE_MIB [--devshm]; pass the size\n");
        return 2;
    }
    size_t size = strtoull(argv[1], 0, 10) << 20, words = size / 8;
    print_devshm_size();
    if (argc > 2 && strcmp(argv[2], "--devshm") == 0) return devshm_control(size);

    uint64_t *p = malloc(size);
    if (!p) {
        fprintf(stderr, "memfd_region: malloc(%zu MiB) failed; out of memory\n", size >> 20);
        return 3;
    }
    for (size_t i = 0; i < words; i++) p[i] = probe_mix(i);
    char line[512];
    mapping_of(p, line, sizeof line);
    printf("backing=%s\n", probe_backing_name(probe_backing(p)));
    printf("mapping: %s\n", line);
    for (size_t i = 0; i < words; i++)
        if (p[i] != probe_mix(i)) {
            printf("checksum MISMATCH at word %zu\n", i);
            return 1;
        }
    printf("checksum ok over %zu MiB\n", size >> 20);
    free(p);
    return 0;
}
