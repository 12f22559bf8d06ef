/* closed_fds.c — a program that closes every descriptor it did not open
 * (close_range(3, ~0U), as daemons clean up) and then opens files of its
 * own: the shim's spill files, spill directory, pagemap reader and
 * libunwind's pipe had those low numbers, and the shim then punched holes
 * in the program's files, mapped them as regions and wrote memory bytes
 * into them (shim/common/fd_policy.h). Run by closed_fds.sh; exits 0, or
 * prints what was wrong and exits 1.
 *
 *   closed_fds DIR   writes its files in DIR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define kFiles 24
#define kFileBytes (4 << 20)
#define kRegion (16 << 20)

/* A large allocation at a new call site each time (the shim names it with
 * libunwind), filled and freed (the reaper gives its pages back). */
__attribute__((noinline)) static void region(int v) {
    unsigned char *p = malloc(kRegion);
    if (!p) {
        fputs("closed_fds: FAIL: malloc returned NULL\n", stderr);
        exit(1);
    }
    memset(p, v, kRegion);
    __asm__ volatile("" ::"r"(p) : "memory");
    free(p);
}
#define TEN(x) x x x x x x x x x x

static void close_from_3(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
    for (int fd = 3; fd < 4096; fd++) close(fd);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fputs("usage: closed_fds DIR\n", stderr);
        return 2;
    }
    TEN(region(1);)
    usleep(300 * 1000); /* the shim's threads and descriptors are all there */
    close_from_3();
    static unsigned char pattern[kFileBytes], back[kFileBytes];
    int fds[kFiles];
    for (int i = 0; i < kFiles; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/file%02d", argv[1], i);
        fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fds[i] < 0) {
            fprintf(stderr, "closed_fds: FAIL: open %s: %s\n", path, strerror(errno));
            return 1;
        }
        memset(pattern, 'a' + i, sizeof pattern);
        if (write(fds[i], pattern, sizeof pattern) != (ssize_t)sizeof pattern) {
            fprintf(stderr, "closed_fds: FAIL: write %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    TEN(region(2);) /* new call sites: libunwind checks memory through its pipe */
    TEN(region(3);)
    usleep(1500 * 1000); /* the reaper has given the regions back */
    int bad = 0;
    for (int i = 0; i < kFiles; i++) {
        ssize_t n = pread(fds[i], back, sizeof back, 0);
        long wrong = 0;
        for (ssize_t j = 0; j < n; j++) wrong += back[j] != 'a' + i;
        off_t size = lseek(fds[i], 0, SEEK_END);
        if (n != (ssize_t)sizeof back || wrong || size != kFileBytes) {
            fprintf(stderr, "closed_fds: FAIL: the program's file %d (descriptor %d): read %zd bytes, %ld wrong, size %lld\n",
                    i, fds[i], n, wrong, (long long)size);
            bad = 1;
        }
    }
    if (bad) return 1;
    printf("closed_fds: %d files on descriptors %d-%d intact\n", kFiles, fds[0], fds[kFiles - 1]);
    return 0;
}
