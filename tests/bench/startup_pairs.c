/* startup_pairs.c — process start-up under one preloaded library against
 * others, in one run: every round runs each variant once, the order
 * rotating from round to round (A B, B A for two), so a machine whose speed
 * drifts affects them all alike; a ratio is taken within each round.
 *
 * usage: startup_pairs [-n ROUNDS] [-w WARMUP] [-e NAME=VALUE]...
 *            [-E K NAME=VALUE]... [-L K LABEL]...
 *            PRELOAD_A PRELOAD_B [PRELOAD_C ...] [-- COMMAND [ARGS...]]
 * COMMAND defaults to /bin/true; "" as a PRELOAD runs without LD_PRELOAD.
 * -e settings apply to every variant (e.g. SPILLWAY_DIR), -E only to
 * variant K (1 for A, 2 for B, ...), -L names variant K in the output.
 * Prints the median wall and CPU (user+sys, from wait4) of each variant
 * and the median of the per-round ratios; with two variants A/B, as:
 *   startup,<variant>,<command>,<metric>,<value>,<unit>
 * (CSV rows for run.sh), with more every X/Y. A measurement, never a
 * verdict: the exit status only says whether every run was started and
 * exited 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_VARIANTS 8
#define MAX_ENV 64

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct variant {
    const char *preload;
    const char *label;
    char *env[MAX_ENV];
    int nenv;
    double *wall, *cpu;
};

static char *g_envs[MAX_ENV];
static int g_nenv;

/* Runs argv under variant v; wall and CPU seconds; 0 on exit 0. */
static int run_once(const struct variant *v, char **argv, double *wall, double *cpu) {
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        for (int i = 0; i < g_nenv; i++) putenv(g_envs[i]);
        for (int i = 0; i < v->nenv; i++) putenv(v->env[i]);
        if (*v->preload) setenv("LD_PRELOAD", v->preload, 1);
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

static int variant_index(const char *text, int limit) {
    int k = atoi(text);
    return k >= 1 && k <= limit ? k - 1 : -1;
}

int main(int argc, char **argv) {
    static struct variant vs[MAX_VARIANTS];
    int rounds = 200, warmup = 20, i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
            warmup = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-e") && i + 1 < argc && g_nenv < MAX_ENV) {
            g_envs[g_nenv++] = argv[++i];
        } else if ((!strcmp(argv[i], "-E") || !strcmp(argv[i], "-L")) && i + 2 < argc) {
            int k = variant_index(argv[i + 1], MAX_VARIANTS);
            if (k < 0) break;
            if (argv[i][1] == 'L') vs[k].label = argv[i + 2];
            else if (vs[k].nenv < MAX_ENV) vs[k].env[vs[k].nenv++] = argv[i + 2];
            i += 2;
        } else {
            break;
        }
    }
    int n = 0;
    while (i < argc && strcmp(argv[i], "--") && n < MAX_VARIANTS) vs[n++].preload = argv[i++];
    if (n < 2 || rounds < 1) {
        fprintf(stderr, "usage: startup_pairs [-n ROUNDS] [-w WARMUP] [-e NAME=VALUE]... [-E K NAME=VALUE]... "
                        "[-L K LABEL]... PRELOAD_A PRELOAD_B [PRELOAD_C ...] [-- COMMAND [ARGS...]]\n");
        return 2;
    }
    char *default_cmd[] = {"/bin/true", NULL};
    char **cmd = default_cmd;
    if (i < argc && !strcmp(argv[i], "--") && i + 1 < argc) cmd = &argv[i + 1];
    static const char *const letters[] = {"A", "B", "C", "D", "E", "F", "G", "H"};
    for (int k = 0; k < n; k++) {
        if (!vs[k].label) vs[k].label = letters[k];
        vs[k].wall = calloc(rounds, sizeof(double));
        vs[k].cpu = calloc(rounds, sizeof(double));
    }

    double w, c;
    for (int r = 0; r < warmup; r++)
        for (int k = 0; k < n; k++)
            if (run_once(&vs[k], cmd, &w, &c)) {
                fprintf(stderr, "startup_pairs: %s failed under %s\n", cmd[0], vs[k].label);
                return 1;
            }
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < n; j++) {
            /* Two variants: A B, B A, ...; more: each starts the round in turn. */
            int k = n == 2 ? (r % 2 ? 1 - j : j) : (j + r) % n;
            if (run_once(&vs[k], cmd, &vs[k].wall[r], &vs[k].cpu[r])) {
                fprintf(stderr, "startup_pairs: %s failed under %s in round %d\n", cmd[0], vs[k].label, r);
                return 1;
            }
        }
    }

    double *ratio = calloc(rounds, sizeof(double));
    printf("# %d rounds of %s, %d variants:", rounds, cmd[0], n);
    for (int k = 0; k < n; k++) printf(" %s=%s", vs[k].label, *vs[k].preload ? vs[k].preload : "(no preload)");
    printf("\n");
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            if (a == b || (n == 2 && a == 1)) continue;
            int nw = 0, nc = 0;
            for (int r = 0; r < rounds; r++) ratio[nw++] = vs[a].wall[r] / vs[b].wall[r];
            double rw = median(ratio, nw);
            /* CPU times are clock ticks (often 4 ms): ratios only from rounds where the divisor's is non-zero. */
            for (int r = 0; r < rounds; r++)
                if (vs[b].cpu[r] > 0) ratio[nc++] = vs[a].cpu[r] / vs[b].cpu[r];
            double rc = nc ? median(ratio, nc) : 0;
            char name[128];
            snprintf(name, sizeof name, "%s/%s", vs[a].label, vs[b].label);
            printf("# %-24s wall %.3f, cpu %.3f (%d rounds with a divisor's cpu > 0)\n", name, rw, rc, nc);
            emit("startup", name, cmd[0], "wall_ratio", rw, "x");
            emit("startup", name, cmd[0], "cpu_ratio", rc, "x");
        }
    }
    for (int k = 0; k < n; k++) {
        double mw = median(vs[k].wall, rounds), mc = median(vs[k].cpu, rounds);
        printf("# %-24s wall %.2f ms, cpu %.2f ms (medians)\n", vs[k].label, mw * 1e3, mc * 1e3);
        emit("startup", vs[k].label, cmd[0], "wall_ms", mw * 1e3, "ms");
    }
    return 0;
}
