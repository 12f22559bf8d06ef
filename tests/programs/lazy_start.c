/* lazy_start.c — the engine (libspillway_engine.so, with libstdc++) loads at
 * its first use when no setting is given, and at start-up when one is
 * (shim/front/engine_loader.h). A C program, so that nothing but the shim could
 * bring libstdc++ in. Run by lazy_start.sh; every mode exits 0 or prints the
 * failed check and exits 1.
 *
 *   lazy_start idle absent|present   neither the engine nor libstdc++ is
 *                                    mapped in main (absent), or both are
 *   lazy_start first-use THREADS     THREADS threads make their first large
 *                                    allocation at once: every one is a
 *                                    region; then a fork child gets regions
 *                                    too and writes to an inherited one
 *                                    without the parent seeing it
 *   lazy_start shm                   a /dev/shm segment opened and sized
 *                                    before anything else starts the engine
 *                                    is still moved to the spill directory
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"


#define LARGE ((size_t)80 << 20) /* above the default threshold (64 MiB) */

static int mapped(const char *name) {
    FILE *maps = fopen("/proc/self/maps", "re");
    CHECK(maps != NULL);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) found = strstr(line, name) != NULL;
    fclose(maps);
    return found;
}

/* Looked up only after the allocations it judges: the first spillway_* call
 * would start the engine itself. */
static int backing(const void *p) {
    int (*fn)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(fn != NULL);
    return fn(p);
}

static pthread_barrier_t g_barrier;

static void *first_large(void *out) {
    pthread_barrier_wait(&g_barrier);
    char *p = malloc(LARGE);
    if (p) memset(p, 0x5a, 4096);
    *(char **)out = p;
    return NULL;
}

static int first_use(int threads) {
    CHECK(threads > 0 && threads <= 64);
    CHECK(!mapped("libspillway_engine"));
    pthread_t t[64];
    char *p[64];
    pthread_barrier_init(&g_barrier, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) CHECK(pthread_create(&t[i], NULL, first_large, &p[i]) == 0);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    CHECK(mapped("libspillway_engine"));
    for (int i = 0; i < threads; i++) {
        CHECK(p[i] != NULL);
        if (backing(p[i]) == 0) {
            fprintf(stderr, "thread %d: its first large allocation escaped the shim\n", i);
            return 1;
        }
    }
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char *q = malloc(LARGE);
        CHECK(q != NULL && backing(q) != 0);
        memset(p[0], 0x11, 4096); /* copy-on-write: the parent must not see it */
        free(q);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(p[0][0] == 0x5a);
    for (int i = 0; i < threads; i++) free(p[i]);
    return 0;
}

static int shm(void) {
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/spillway-lazy-%d", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)LARGE) == 0);
    struct statfs fs;
    CHECK(fstatfs(fd, &fs) == 0);
    int moved = fs.f_type != TMPFS_MAGIC;
    char *m = mmap(NULL, LARGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    m[LARGE - 1] = 1;
    munmap(m, LARGE);
    close(fd);
    CHECK(unlink(path) == 0);
    if (!moved) {
        fprintf(stderr, "the segment stayed in /dev/shm\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "idle")) {
        int want = !strcmp(argv[2], "present");
        int engine = mapped("libspillway_engine"), cxx = mapped("libstdc++");
        if (engine != want || cxx != want) {
            fprintf(stderr, "expected the engine and libstdc++ %s; engine %d, libstdc++ %d\n", argv[2],
                    engine, cxx);
            return 1;
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "first-use")) return first_use(atoi(argv[2]));
    if (argc == 2 && !strcmp(argv[1], "shm")) return shm();
    fprintf(stderr, "usage: lazy_start idle absent|present | first-use THREADS | shm\n");
    return 2;
}
