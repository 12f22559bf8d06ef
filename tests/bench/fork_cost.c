/* fork_cost.c — what a fork costs a process with large buffers, per phase
 * (fork_cost.sh runs it bare and under the shim, alternately, and prints
 * the ratios). Under the shim a fork makes the parent's regions private
 * until no child is left, then shares them over their files again
 * (shim/engine/large/fork_snapshot.h); bare, the kernel copies on write.
 *
 *   fork_cost REGIONS MIB_EACH FORKS
 *
 * Phases, one line each ("phase NAME SECONDS"):
 *   fork_exec      FORKS times fork, exec /bin/true in the child, waitpid
 *                  (seconds per fork)
 *   shared_again   from the last waitpid until every region is mapped
 *                  shared again (under the shim; 0 bare)
 *   write_alone    a store per page over every region, no child
 *   write_child    the same while a forked child sleeps (copy on write)
 *   shared_after   from that child's end until every region is shared
 *                  again, the pages it copied written back (0 bare)
 *   write_after    the store pass once more (regions shared again)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* How many of the regions this process maps shared (/proc/self/maps). */
static int count_shared(unsigned char **regions, int n) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return 0;
    char line[512];
    int shared = 0;
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[3] != 's') continue;
        for (int i = 0; i < n; i++) shared += (uintptr_t)regions[i] >= lo && (uintptr_t)regions[i] < hi;
    }
    fclose(maps);
    return shared;
}

/* Seconds until all n regions are shared again (10 s at most); 0 when none
 * was shared before the fork (bare). */
static double wait_shared(unsigned char **regions, int n, int shared_before, double t0) {
    if (!shared_before) return 0;
    while (count_shared(regions, n) < shared_before && now_s() - t0 < 10) usleep(500);
    return now_s() - t0;
}

static void store_pass(unsigned char **regions, int n, size_t len, unsigned char v) {
    for (int i = 0; i < n; i++)
        for (size_t off = 0; off < len; off += 4096) regions[i][off] = v;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fputs("usage: fork_cost REGIONS MIB_EACH FORKS\n", stderr);
        return 2;
    }
    const int n = atoi(argv[1]), forks = atoi(argv[3]);
    const size_t len = (size_t)atoi(argv[2]) << 20;
    unsigned char **regions = calloc((size_t)n, sizeof *regions);
    for (int i = 0; i < n; i++) {
        regions[i] = malloc(len);
        if (!regions[i]) return 2;
        memset(regions[i], 1, len);
    }
    const int shared_before = count_shared(regions, n);
    double t0 = now_s(), t = 0;
    for (int k = 0; k < forks; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) return 2;
        t = now_s();
    }
    printf("phase fork_exec %.6f\n", (t - t0) / forks);
    printf("phase shared_again %.6f\n", wait_shared(regions, n, shared_before, t));

    t0 = now_s();
    store_pass(regions, n, len, 2);
    printf("phase write_alone %.6f\n", now_s() - t0);

    int go[2];
    if (pipe(go) != 0) return 2;
    pid_t pid = fork();
    if (pid == 0) {
        char byte;
        close(go[1]);
        _exit(read(go[0], &byte, 1) == 1 ? 0 : 1);
    }
    close(go[0]);
    t0 = now_s();
    store_pass(regions, n, len, 3);
    printf("phase write_child %.6f\n", now_s() - t0);
    if (write(go[1], "g", 1) != 1) return 2;
    int status;
    if (waitpid(pid, &status, 0) != pid) return 2;
    t = now_s();
    printf("phase shared_after %.6f\n", wait_shared(regions, n, shared_before, t));

    t0 = now_s();
    store_pass(regions, n, len, 4);
    printf("phase write_after %.6f\n", now_s() - t0);
    for (int i = 0; i < n; i++)
        for (size_t off = 0; off < len; off += 4096)
            if (regions[i][off] != 4) {
                fprintf(stderr, "fork_cost: region %d byte %zu is %d, not 4\n", i, off, regions[i][off]);
                return 1;
            }
    return 0;
}
