/* jobphase.h — the phase clock of the C jobs of jobs.sh, the same line as
 * jobphase.py prints (header only; the jobs themselves stay plain C):
 *   JOBPHASE job=J phase=P s=SECONDS cpu_s=X runq_s=X shim_cpu_s=X minflt=N
 *            majflt=N io_read_mib=X io_write_mib=X dev_read_mib=X dev_write_mib=X
 *            load=A-B machine_busy=F
 * cpu_s/runq_s: time run and time waited runnable for a CPU by the main
 * thread, from /proc/self/schedstat (the C jobs are single-threaded);
 * shim_cpu_s: CPU of the shim's threads (comm spillway-*) that are alive at
 * both ends; faults from getrusage (all threads), io_* from
 * /proc/self/io, dev_* from
 * /sys/block/$JOB_DEV/stat (-1 without JOB_DEV); load: the 1-minute load
 * average at the phase's start and end; machine_busy: the fraction of all
 * CPUs' time over the phase that was neither idle nor iowait (/proc/stat:
 * every process and kernel thread, the loop device's and flushers' too), so
 * a phase on a saturated machine is told from one waiting for its disk.
 * (These two only in the C jobs.) */
#ifndef SPILLWAY_BENCH_JOBPHASE_H
#define SPILLWAY_BENCH_JOBPHASE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct jobphase {
    const char *job, *name;
    double t0, io_r, io_w, dev_r, dev_w, cpu, runq, shim, load;
    unsigned long long busy, total;
    long minflt, majflt;
};

static double jobphase_load(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
    return l;
}

/* All CPUs' jiffies from /proc/stat's first line: busy (not idle, not
 * iowait) and total. */
static void jobphase_machine(unsigned long long *busy, unsigned long long *total) {
    unsigned long long v[10] = {0};
    *busy = *total = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 8) return;
    for (int i = 0; i < 8; i++) *total += v[i]; /* guest time is inside user already */
    *busy = *total - v[3] - v[4];
}

static double jobphase_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void jobphase_io(double *r, double *w) {
    char key[64];
    long long v;
    *r = *w = -1;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f) return;
    while (fscanf(f, "%63[^:]: %lld\n", key, &v) == 2) {
        if (!strcmp(key, "read_bytes")) *r = v / 1048576.0;
        if (!strcmp(key, "write_bytes")) *w = v / 1048576.0;
    }
    fclose(f);
}

static void jobphase_dev(double *r, double *w) {
    const char *dev = getenv("JOB_DEV");
    char path[256];
    unsigned long long f[7];
    *r = *w = -1;
    if (!dev || !*dev) return;
    snprintf(path, sizeof path, "/sys/block/%s/stat", dev);
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    if (fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]) == 7) {
        *r = f[2] * 512 / 1048576.0;
        *w = f[6] * 512 / 1048576.0;
    }
    fclose(fp);
}

static void jobphase_sched(double *cpu, double *runq, double *shim) {
    unsigned long long c = 0, w = 0;
    *cpu = *runq = -1;
    *shim = 0;
    FILE *f = fopen("/proc/self/schedstat", "r");
    if (!f) return;
    if (fscanf(f, "%llu %llu", &c, &w) == 2) {
        *cpu = c / 1e9;
        *runq = w / 1e9;
    }
    fclose(f);
    DIR *d = opendir("/proc/self/task");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if (!(f = fopen(path, "r"))) continue;
        int got = fscanf(f, "%31s", comm);
        fclose(f);
        if (got != 1 || strncmp(comm, "spillway-", 9)) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if (!(f = fopen(path, "r"))) continue;
        if (fscanf(f, "%llu", &c) == 1) *shim += c / 1e9;
        fclose(f);
    }
    closedir(d);
}

static void jobphase_begin(struct jobphase *p, const char *job, const char *name) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    p->job = job;
    p->name = name;
    p->minflt = ru.ru_minflt;
    p->majflt = ru.ru_majflt;
    jobphase_io(&p->io_r, &p->io_w);
    jobphase_dev(&p->dev_r, &p->dev_w);
    jobphase_sched(&p->cpu, &p->runq, &p->shim);
    p->load = jobphase_load();
    jobphase_machine(&p->busy, &p->total);
    p->t0 = jobphase_now();
}

static void jobphase_end(struct jobphase *p) {
    double s = jobphase_now() - p->t0, io_r, io_w, dev_r, dev_w, cpu, runq, shim;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    jobphase_io(&io_r, &io_w);
    jobphase_dev(&dev_r, &dev_w);
    jobphase_sched(&cpu, &runq, &shim);
    unsigned long long busy, total;
    jobphase_machine(&busy, &total);
    printf("JOBPHASE job=%s phase=%s s=%.3f cpu_s=%.3f runq_s=%.3f shim_cpu_s=%.3f minflt=%ld majflt=%ld "
           "io_read_mib=%.1f io_write_mib=%.1f dev_read_mib=%.1f dev_write_mib=%.1f load=%.2f-%.2f "
           "machine_busy=%.3f\n",
           p->job, p->name, s, cpu - p->cpu, runq - p->runq, shim > p->shim ? shim - p->shim : 0,
           ru.ru_minflt - p->minflt, ru.ru_majflt - p->majflt,
           p->io_r >= 0 ? io_r - p->io_r : -1, p->io_w >= 0 ? io_w - p->io_w : -1,
           p->dev_r >= 0 ? dev_r - p->dev_r : -1, p->dev_w >= 0 ? dev_w - p->dev_w : -1, p->load,
           jobphase_load(), total > p->total ? (double)(busy - p->busy) / (double)(total - p->total) : -1);
    fflush(stdout);
}

#endif
