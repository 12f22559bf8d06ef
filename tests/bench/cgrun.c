/* cgrun.c — run a command in a fresh cgroup-v1 memory cgroup and record the
 * cgroup's memory use over time.
 *
 * usage: cgrun [--limit BYTES] [--sample-ms MS] [--csv FILE] [--name NAME]
 *              [-e NAME=VALUE]... -- COMMAND [ARGS...]
 * Creates /sys/fs/cgroup/memory/spillway-bench-NAME-PID, sets
 * memory.limit_in_bytes (and memory.memsw.limit_in_bytes when present, so
 * swap cannot hide the limit) unless --limit is 0, moves the child in, then
 * samples memory.usage_in_bytes every MS milliseconds into FILE
 * ("t_s,usage_bytes"). When the child has exited the cgroup is removed. One
 * summary line on stderr:
 *   CGRUN wall_s=... status=<exit|sig:N> max_usage=... oom_kills=... failcnt=...
 * Exit status: the child's (128+N on signal). Needs root and cgroup v1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_cg[512];
static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static int write_file(const char *name, const char *value) {
    char path[640];
    snprintf(path, sizeof path, "%s/%s", g_cg, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    ssize_t k = write(fd, value, strlen(value));
    int err = k < 0 ? -errno : 0;
    close(fd);
    return err;
}

static long long read_ll(const char *name, const char *key) {
    char path[640], buf[8192];
    snprintf(path, sizeof path, "%s/%s", g_cg, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return -1;
    buf[k] = 0;
    if (!key) return atoll(buf);
    size_t kl = strlen(key);
    for (char *line = buf; line && *line;) {
        if (!strncmp(line, key, kl) && line[kl] == ' ') return atoll(line + kl + 1);
        line = strchr(line, '\n');
        if (line) line++;
    }
    return -1;
}

static void remove_cgroup(void) {
    /* Charged page cache does not block rmdir in v1 (it moves to the parent). */
    for (int i = 0; i < 100 && rmdir(g_cg) != 0 && errno == EBUSY; i++) usleep(20000);
}

int main(int argc, char **argv) {
    unsigned long long limit = 0;
    int sample_ms = 20, i = 1, nenv = 0;
    const char *csv = NULL, *name = "job";
    char *envs[64];
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--limit") && i + 1 < argc) limit = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc) sample_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "-e") && i + 1 < argc && nenv < 64) envs[nenv++] = argv[++i];
        else {
            fprintf(stderr, "cgrun: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "usage: cgrun [--limit BYTES] [--sample-ms MS] [--csv FILE] [--name NAME] "
                        "[-e NAME=VALUE]... -- COMMAND [ARGS...]\n");
        return 2;
    }
    snprintf(g_cg, sizeof g_cg, "/sys/fs/cgroup/memory/spillway-bench-%s-%d", name, (int)getpid());
    if (mkdir(g_cg, 0755) != 0) {
        fprintf(stderr, "cgrun: cannot create %s: %s (needs root and cgroup v1)\n", g_cg, strerror(errno));
        return 2;
    }
    if (limit) {
        char v[32];
        snprintf(v, sizeof v, "%llu", limit);
        int err = write_file("memory.limit_in_bytes", v);
        if (!err && access("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", F_OK) == 0)
            err = write_file("memory.memsw.limit_in_bytes", v);
        if (err) {
            fprintf(stderr, "cgrun: cannot set the limit on %s: %s\n", g_cg, strerror(-err));
            remove_cgroup();
            return 2;
        }
    }
    FILE *out = csv ? fopen(csv, "w") : NULL;
    if (out) fprintf(out, "t_s,usage_bytes\n");
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return perror("pipe"), 2;
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        char b;
        close(ready[1]);
        if (read(ready[0], &b, 1) != 1) _exit(126); /* wait until moved into the cgroup */
        for (int k = 0; k < nenv; k++) putenv(envs[k]);
        execvp(argv[i], &argv[i]);
        perror(argv[i]);
        _exit(127);
    }
    close(ready[0]);
    char pidbuf[32];
    snprintf(pidbuf, sizeof pidbuf, "%d", (int)pid);
    int err = write_file("cgroup.procs", pidbuf);
    if (err) {
        fprintf(stderr, "cgrun: cannot move the child into %s: %s\n", g_cg, strerror(-err));
        kill(pid, SIGKILL);
    }
    if (write(ready[1], "x", 1) != 1) kill(pid, SIGKILL);
    close(ready[1]);
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (g_stop) kill(pid, SIGKILL);
        long long usage = read_ll("memory.usage_in_bytes", NULL);
        if (out) fprintf(out, "%.4f,%lld\n", (now_ns() - t0) / 1e9, usage);
        usleep((useconds_t)sample_ms * 1000);
    }
    uint64_t t1 = now_ns();
    long long usage = read_ll("memory.usage_in_bytes", NULL);
    if (out) {
        fprintf(out, "%.4f,%lld\n", (t1 - t0) / 1e9, usage);
        fclose(out);
    }
    long long max_usage = read_ll("memory.max_usage_in_bytes", NULL);
    long long failcnt = read_ll("memory.failcnt", NULL);
    long long ooms = read_ll("memory.oom_control", "oom_kill");
    char st[32];
    if (WIFSIGNALED(status)) snprintf(st, sizeof st, "sig:%d", WTERMSIG(status));
    else snprintf(st, sizeof st, "%d", WEXITSTATUS(status));
    fprintf(stderr, "CGRUN wall_s=%.4f status=%s max_usage=%lld oom_kills=%lld failcnt=%lld limit=%llu\n",
            (t1 - t0) / 1e9, st, max_usage, ooms, failcnt, limit);
    remove_cgroup();
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
