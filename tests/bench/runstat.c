/* runstat.c — run a command, report its wall time and peak RSS.
 *
 * usage: runstat [-e NAME=VALUE]... [-q] -- COMMAND [ARGS...]
 * The -e settings (e.g. LD_PRELOAD) are applied in the child only, so the
 * measuring process itself is never preloaded. Prints one line on stderr:
 *   RUNSTAT wall_s=<s> maxrss_kb=<kB> user_s=<s> sys_s=<s> status=<exit|sig:N>
 * ru_maxrss from wait4 is the largest RSS among the child and every
 * descendant it waited for (g++ -> cc1plus counts). -q sends the child's
 * stdout and stderr to /dev/null. Exit status: the child's (128+N on signal).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int i = 1, quiet = 0;
    char *envs[64];
    int nenv = 0;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "-e") && i + 1 < argc && nenv < 64) envs[nenv++] = argv[++i];
        else if (!strcmp(argv[i], "-q")) quiet = 1;
        else {
            fprintf(stderr, "runstat: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "usage: runstat [-e NAME=VALUE]... [-q] -- COMMAND [ARGS...]\n");
        return 2;
    }
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) return perror("fork"), 2;
    if (pid == 0) {
        for (int k = 0; k < nenv; k++) putenv(envs[k]);
        if (quiet) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[i], &argv[i]);
        perror(argv[i]);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {}
    uint64_t t1 = now_ns();
    char st[32];
    if (WIFSIGNALED(status)) snprintf(st, sizeof st, "sig:%d", WTERMSIG(status));
    else snprintf(st, sizeof st, "%d", WEXITSTATUS(status));
    fprintf(stderr, "RUNSTAT wall_s=%.6f maxrss_kb=%ld user_s=%.3f sys_s=%.3f status=%s\n",
            (t1 - t0) / 1e9, ru.ru_maxrss, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
            ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, st);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
