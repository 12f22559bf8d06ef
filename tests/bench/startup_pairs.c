/* startup_pairs.c — process start-up under one preloaded library against
 * another, as interleaved pairs in one run (A B, B A, A B, ...), so a
 * machine whose speed drifts affects both sides alike.
 *
 * usage: startup_pairs [-n PAIRS] [-w WARMUP] [-e NAME=VALUE]... PRELOAD_A PRELOAD_B
 *            [-- COMMAND [ARGS...]]        (COMMAND defaults to /bin/true)
 * -e settings apply to both sides (e.g. SPILLWAY_DIR). Prints the median
 * wall and CPU (user+sys, from wait4) of each side, the median of the
 * per-pair ratios A/B, and one CSV row per figure for run.sh:
 *   startup,<variant>,<command>,<metric>,<value>,<unit>
 * A measurement, never a verdict: the exit status only says whether every
 * run was started and exited 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *g_envs[64];
static int g_nenv;

/* Runs argv with LD_PRELOAD=preload; wall and CPU seconds; 0 on exit 0. */
static int run_once(const char *preload, char **argv, double *wall, double *cpu) {
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        for (int i = 0; i < g_nenv; i++) putenv(g_envs[i]);
        if (*preload) setenv("LD_PRELOAD", preload, 1);
        else unsetenv("LD_PRELOAD");
        freopen("/dev/null", "w", stdout);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return -1;
    *wall = now_s() - t0;
    *cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    int pairs = 200, warmup = 20, i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc && g_nenv < 64) g_envs[g_nenv++] = argv[++i];
        else break;
    }
    if (argc - i < 2 || pairs < 1) {
        fprintf(stderr, "usage: startup_pairs [-n PAIRS] [-w WARMUP] [-e NAME=VALUE]... "
                        "PRELOAD_A PRELOAD_B [-- COMMAND [ARGS...]]\n");
        return 2;
    }
    const char *a = argv[i], *b = argv[i + 1];
    char *default_cmd[] = {"/bin/true", NULL};
    char **cmd = default_cmd;
    if (i + 2 < argc && !strcmp(argv[i + 2], "--") && i + 3 < argc) cmd = &argv[i + 3];

    double *wa = calloc(pairs, sizeof(double)), *wb = calloc(pairs, sizeof(double));
    double *ca = calloc(pairs, sizeof(double)), *cb = calloc(pairs, sizeof(double));
    double *rw = calloc(pairs, sizeof(double)), *rc = calloc(pairs, sizeof(double));
    double w, c;
    for (int k = 0; k < warmup; k++)
        if (run_once(a, cmd, &w, &c) || run_once(b, cmd, &w, &c)) {
            fprintf(stderr, "startup_pairs: %s failed under one of the two libraries\n", cmd[0]);
            return 1;
        }
    for (int k = 0; k < pairs; k++) {
        int failed;
        if (k % 2 == 0) failed = run_once(a, cmd, &wa[k], &ca[k]) | run_once(b, cmd, &wb[k], &cb[k]);
        else failed = run_once(b, cmd, &wb[k], &cb[k]) | run_once(a, cmd, &wa[k], &ca[k]);
        if (failed) {
            fprintf(stderr, "startup_pairs: %s failed in pair %d\n", cmd[0], k);
            return 1;
        }
        rw[k] = wa[k] / wb[k];
        rc[k] = cb[k] > 0 ? ca[k] / cb[k] : 0;
    }
    /* CPU times are clock ticks (often 4 ms): ratios only from pairs where B's is non-zero. */
    int nc = 0;
    for (int k = 0; k < pairs; k++)
        if (cb[k] > 0) rc[nc++] = rc[k];
    double mwa = median(wa, pairs), mwb = median(wb, pairs), mca = median(ca, pairs),
           mcb = median(cb, pairs), mrw = median(rw, pairs), mrc = nc ? median(rc, nc) : 0;
    printf("# %d pairs of %s: A=%s B=%s\n", pairs, cmd[0], a, b);
    printf("# wall: A %.2f ms, B %.2f ms, median ratio A/B %.3f\n", mwa * 1e3, mwb * 1e3, mrw);
    printf("# cpu:  A %.2f ms, B %.2f ms, median ratio A/B %.3f (%d pairs with B > 0)\n", mca * 1e3,
           mcb * 1e3, mrc, nc);
    emit("startup", "A", cmd[0], "wall_ms", mwa * 1e3, "ms");
    emit("startup", "B", cmd[0], "wall_ms", mwb * 1e3, "ms");
    emit("startup", "A/B", cmd[0], "wall_ratio", mrw, "x");
    emit("startup", "A/B", cmd[0], "cpu_ratio", mrc, "x");
    return 0;
}
