/* wbjob.c — does dirty-page writeback stall a job that writes more than its
 * memory limit? (issue 12 part 3)
 *
 * usage: wbjob SIZE [--cgroup DIR] [--sample-ms 100] [--baseline --dir DIR]
 * Allocates SIZE bytes with malloc (a spill region under the shim), or with
 * --baseline a fallocated MAP_SHARED file in DIR, and writes it once front
 * to back, one 4 KiB page at a time, timing every page's first write (the
 * page fault, including any reclaim that waits on writeback). A thread
 * samples DIR/memory.stat (v1 dirty/writeback, v2 file_dirty/file_writeback)
 * every --sample-ms. Prints one line:
 *   WBJOB s=.. MBps=.. stall_s=.. (time in page writes > 10 ms)
 *         slow_1ms=.. slow_10ms=.. slow_100ms=.. max_page_ms=..
 *         chunk_max_s=.. chunk_p99_s=.. chunk_med_s=.. (64 MiB chunks)
 *         blocked_s=.. blocked_chunk_max_s=.. blocked_chunk_p99_s=..
 *         dirty_max=.. dirty_mean=.. writeback_max=.. writeback_mean=..
 * On a loaded machine a slow page can be mere preemption: blocked_s is the
 * time the writing thread slept (wall - on CPU - waiting for a CPU, from
 * /proc/thread-self/schedstat, per 64 MiB chunk), i.e. reclaim, writeback
 * and dirty throttling waits, and nothing else.
 * and, with --series FILE, the samples as "t_s,dirty,writeback,file".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *g_cgroup;
static int g_sample_ms = 100;
static volatile int g_done;
static FILE *g_series;
static double g_dirty_max, g_dirty_sum, g_wb_max, g_wb_sum;
static long g_samples;

static long long stat_key(const char *key1, const char *key2) {
    char path[600], buf[16384];
    snprintf(path, sizeof path, "%s/memory.stat", g_cgroup);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return -1;
    buf[k] = 0;
    const char *keys[2] = {key1, key2};
    for (int j = 0; j < 2; j++) {
        size_t kl = strlen(keys[j]);
        for (char *line = buf; line && *line;) {
            if (!strncmp(line, keys[j], kl) && line[kl] == ' ') return atoll(line + kl + 1);
            line = strchr(line, '\n');
            if (line) line++;
        }
    }
    return -1;
}

/* nanoseconds on CPU and waiting on a run queue, this thread */
static void sched_ns(uint64_t *run, uint64_t *wait) {
    char buf[128];
    *run = *wait = 0;
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return;
    buf[k] = 0;
    unsigned long long r = 0, w = 0;
    sscanf(buf, "%llu %llu", &r, &w);
    *run = r;
    *wait = w;
}

static void *sampler(void *arg) {
    uint64_t t0 = *(uint64_t *)arg;
    while (!g_done) {
        long long d = stat_key("dirty", "file_dirty");
        long long w = stat_key("writeback", "file_writeback");
        long long f = stat_key("cache", "file");
        if (d >= 0 && w >= 0) {
            if (d > g_dirty_max) g_dirty_max = d;
            if (w > g_wb_max) g_wb_max = w;
            g_dirty_sum += d;
            g_wb_sum += w;
            g_samples++;
            if (g_series) fprintf(g_series, "%.3f,%lld,%lld,%lld\n", (now_ns() - t0) / 1e9, d, w, f);
        }
        usleep((useconds_t)g_sample_ms * 1000);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: wbjob SIZE [--cgroup DIR] [--sample-ms MS] [--series FILE] "
                        "[--baseline --dir DIR]\n");
        return 2;
    }
    uint64_t size = parse_size(argv[1]);
    int baseline = 0;
    const char *dir = NULL;
    for (int i = 2; i < argc; i++) {
        int more = i + 1 < argc;
        if (!strcmp(argv[i], "--cgroup") && more) g_cgroup = argv[++i];
        else if (!strcmp(argv[i], "--sample-ms") && more) g_sample_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--series") && more) g_series = fopen(argv[++i], "w");
        else if (!strcmp(argv[i], "--baseline")) baseline = 1;
        else if (!strcmp(argv[i], "--dir") && more) dir = argv[++i];
        else {
            fprintf(stderr, "wbjob: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    const size_t page = 4096, chunk = 64u << 20;
    size = size / chunk * chunk;
    if (!size || (baseline && !dir)) {
        fprintf(stderr, "wbjob: SIZE must be at least 64M; --baseline needs --dir\n");
        return 2;
    }
    unsigned char *p;
    if (baseline) {
        char path[4096];
        snprintf(path, sizeof path, "%s/wbjob.XXXXXX", dir);
        int fd = mkostemp(path, O_CLOEXEC);
        if (fd < 0 || unlink(path) != 0 || fallocate(fd, 0, 0, (off_t)size) != 0) {
            fprintf(stderr, "wbjob: cannot make a %llu-byte file in %s: %s\n", (unsigned long long)size,
                    dir, strerror(errno));
            return 2;
        }
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) p = NULL;
    } else {
        p = malloc(size);
    }
    if (!p) {
        fprintf(stderr, "wbjob: cannot allocate %llu bytes\n", (unsigned long long)size);
        return 2;
    }
    size_t nchunks = size / chunk;
    double *chunk_s = calloc(nchunks, sizeof *chunk_s);
    double *blocked_s = calloc(nchunks, sizeof *blocked_s);
    double blocked_total = 0;
    if (g_series) fprintf(g_series, "t_s,dirty,writeback,file\n");
    uint64_t t0 = now_ns();
    pthread_t th;
    int sampling = g_cgroup && pthread_create(&th, NULL, sampler, &t0) == 0;
    uint64_t stall_ns = 0, max_ns = 0, slow1 = 0, slow10 = 0, slow100 = 0;
    for (size_t c = 0; c < nchunks; c++) {
        uint64_t run0, wait0, run1, wait1;
        sched_ns(&run0, &wait0);
        uint64_t cs = now_ns();
        for (size_t off = c * chunk; off < (c + 1) * chunk; off += page) {
            uint64_t a = now_ns();
            p[off] = (unsigned char)(off >> 12); /* the first write faults the page in */
            uint64_t d = now_ns() - a;
            memset(p + off + 1, (int)(off >> 12), page - 1);
            if (d > max_ns) max_ns = d;
            if (d > 1000000) slow1++;
            if (d > 10000000) slow10++, stall_ns += d;
            if (d > 100000000) slow100++;
        }
        uint64_t ce = now_ns();
        sched_ns(&run1, &wait1);
        chunk_s[c] = (ce - cs) / 1e9;
        double slept = chunk_s[c] - ((run1 - run0) + (wait1 - wait0)) / 1e9;
        blocked_s[c] = slept > 0 ? slept : 0;
        blocked_total += blocked_s[c];
    }
    uint64_t t1 = now_ns();
    g_done = 1;
    if (sampling) pthread_join(th, NULL);
    uint64_t bad = 0;
    for (size_t off = 0; off < size; off += 1u << 20) bad += p[off] != (unsigned char)(off >> 12);
    double s = (t1 - t0) / 1e9;
    double chunk_max = 0;
    for (size_t c = 0; c < nchunks; c++)
        if (chunk_s[c] > chunk_max) chunk_max = chunk_s[c];
    qsort(chunk_s, nchunks, sizeof *chunk_s, cmp_double);
    double p99 = chunk_s[(nchunks * 99) / 100 < nchunks ? (nchunks * 99) / 100 : nchunks - 1];
    double med = chunk_s[nchunks / 2];
    qsort(blocked_s, nchunks, sizeof *blocked_s, cmp_double);
    size_t i99 = (nchunks * 99) / 100 < nchunks ? (nchunks * 99) / 100 : nchunks - 1;
    double n = g_samples ? (double)g_samples : 1;
    printf("WBJOB s=%.3f MBps=%.0f stall_s=%.3f slow_1ms=%llu slow_10ms=%llu slow_100ms=%llu "
           "max_page_ms=%.1f chunk_max_s=%.3f chunk_p99_s=%.3f chunk_med_s=%.3f blocked_s=%.3f "
           "blocked_chunk_max_s=%.3f blocked_chunk_p99_s=%.3f dirty_max_MiB=%.0f "
           "dirty_mean_MiB=%.0f writeback_max_MiB=%.0f writeback_mean_MiB=%.0f bad=%llu\n",
           s, size / s / 1e6, stall_ns / 1e9, (unsigned long long)slow1, (unsigned long long)slow10,
           (unsigned long long)slow100, max_ns / 1e6, chunk_max, p99, med, blocked_total,
           blocked_s[nchunks - 1], blocked_s[i99], g_dirty_max / 1048576,
           g_dirty_sum / n / 1048576, g_wb_max / 1048576, g_wb_sum / n / 1048576,
           (unsigned long long)bad);
    if (g_series) fclose(g_series);
    return bad ? 1 : 0;
}
