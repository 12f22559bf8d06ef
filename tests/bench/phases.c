/* phases.c — the phase benchmark of issue 12: what spilled data costs
 * against what the disk physically costs, one phase at a time.
 *
 *   phases floor --file PATH --size SIZE [--reads N] [--keep | --reuse]
 *       The physical floor of the filesystem holding PATH: writes SIZE bytes
 *       with O_DIRECT (sequential write bandwidth, fdatasync included), then
 *       one sequential O_DIRECT pass in 8 MiB blocks (read bandwidth), then
 *       N random 4 KiB O_DIRECT reads (median and p90 latency; the first
 *       10% are a warm-up). PATH is removed afterwards unless --keep;
 *       --reuse measures the reads of an existing PATH again without
 *       writing it (seq_write_MBps=0). Prints one line:
 *         FLOOR lat_med_us=.. lat_p90_us=.. seq_read_MBps=.. seq_write_MBps=.. bytes=..
 *
 *   phases run --size SIZE [--rows N] [--batch N] [--seed N] [--label L]
 *              [--dev loopN] [--cgroup DIR] [--limit BYTES] [--lat-us X]
 *              [--read-MBps Y] [--write-MBps Z]
 *              [--baseline --dir DIR [--advice normal|random]]
 *       A float matrix of SIZE bytes in 1 KiB rows (256 floats), allocated
 *       with malloc (so, under LD_PRELOAD=libspillway.so, a spill region), or
 *       with --baseline a fallocated MAP_SHARED file in DIR with no advice
 *       (--advice random: madvise(MADV_RANDOM) over it, the kernel alone
 *       with the advice the shim gives a region it learned random).
 *       Phases: fill (every row written in order), gather1 (N random rows in
 *       batches, copied into a batch buffer like a GNN feature gather), seq
 *       (every row read in order), gather2 (another N random rows). Every
 *       row read is checked against what fill wrote. One line per phase:
 *         PHASE label=.. phase=.. s=.. majflt=.. dev_read_bytes=.. dev_read_ios=..
 *               dev_write_bytes=.. cg_dirty_start_bytes=.. pgpgin_bytes=.. cg_majflt=.. cg_file_bytes=.. bytes_per_fault=..
 *               us_per_fault=.. main_cpu_s=.. other_cpu_s=.. main_nivcsw=..
 *               cg_failcnt=.. floor_s=.. ratio=..
 *       dev_* are deltas of /sys/block/DEV/stat (exact: only the spill
 *       filesystem is on that device); pgpgin is /proc/vmstat (system-wide,
 *       and it counts a loop device's reads twice: once on the loop device,
 *       once on the disk below it); cg_* come from DIR/memory.stat (v1 or v2;
 *       cg_dirty_start_bytes: the cgroup's dirty page cache as the phase began,
 *       which the device writes while the phase reads)
 *       and cg_failcnt from DIR/memory.failcnt (v1: how often the cgroup hit
 *       its limit, each time a reclaim by the charging thread; v2: the
 *       memory.events "max" count). us_per_fault = s / majflt; main_cpu_s is
 *       the measuring (faulting) thread's CPU time (user + system: its fault
 *       handling, page cache insertion and direct reclaim), other_cpu_s that
 *       of every other thread of the process (the shim's), main_nivcsw the
 *       times the measuring thread was preempted.
 *       Floors: fill = SIZE / write bandwidth (the disk must absorb every
 *       byte once the data outgrows the limit); gather = (1 - LIMIT / SIZE)
 *       x the distinct pages the gather's rows lie in x median 4 KiB latency,
 *       no slack term: at best LIMIT bytes of the matrix are resident, so at
 *       least that fraction of the rows must be read, each one 4 KiB read at
 *       queue depth 1 (the gather's fault is synchronous); without --limit,
 *       or with LIMIT >= SIZE, no gather floor. seq = SIZE / read bandwidth.
 *       No floor given: ratio is 0.
 *       Exit status 1 if any row read back differs from what was written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROW_FLOATS 256
#define ROW_BYTES (ROW_FLOATS * sizeof(float))

/* ---------------------------------------------------------------- counters */

static int read_text(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, cap - 1);
    close(fd);
    if (k < 0) return -1;
    buf[k] = 0;
    return 0;
}

/* value of "KEY VALUE" lines (memory.stat, /proc/vmstat); -1 if absent */
static long long keyed(const char *path, const char *key) {
    static char buf[65536];
    if (read_text(path, buf, sizeof buf) != 0) return -1;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line;) {
        if (!strncmp(line, key, kl) && line[kl] == ' ') return atoll(line + kl + 1);
        line = strchr(line, '\n');
        if (line) line++;
    }
    return -1;
}

struct counters {
    uint64_t ns;
    long majflt;
    long long dev_read_sectors, dev_read_ios, dev_write_sectors;
    long long pgpgin_kib;
    long long cg_majflt, cg_file, cg_dirty, cg_failcnt;
    double main_cpu_s, all_cpu_s;
    long main_nivcsw;
};

static const char *g_dev;    /* e.g. loop3 */
static const char *g_cgroup; /* a cgroup directory, v1 or v2 */

static double cpu_s(const struct rusage *ru) {
    return ru->ru_utime.tv_sec + ru->ru_stime.tv_sec + (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* memory.failcnt (v1) or the "max" line of memory.events (v2); -1 if absent */
static long long cgroup_failcnt(const char *cg) {
    char path[600], buf[64];
    snprintf(path, sizeof path, "%s/memory.failcnt", cg);
    if (read_text(path, buf, sizeof buf) == 0) return atoll(buf);
    snprintf(path, sizeof path, "%s/memory.events", cg);
    return keyed(path, "max");
}

static void sample(struct counters *c) {
    struct rusage ru, self;
    getrusage(RUSAGE_THREAD, &self);
    getrusage(RUSAGE_SELF, &ru);
    c->majflt = ru.ru_majflt;
    c->main_cpu_s = cpu_s(&self);
    c->all_cpu_s = cpu_s(&ru);
    c->main_nivcsw = self.ru_nivcsw;
    c->dev_read_sectors = c->dev_read_ios = c->dev_write_sectors = -1;
    if (g_dev) {
        char path[256], buf[512];
        snprintf(path, sizeof path, "/sys/block/%s/stat", g_dev);
        unsigned long long f[7];
        if (read_text(path, buf, sizeof buf) == 0 &&
            sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5],
                   &f[6]) == 7) {
            c->dev_read_ios = (long long)f[0];
            c->dev_read_sectors = (long long)f[2];
            c->dev_write_sectors = (long long)f[6];
        }
    }
    c->pgpgin_kib = keyed("/proc/vmstat", "pgpgin"); /* the kernel prints KiB */
    c->cg_majflt = c->cg_file = c->cg_dirty = c->cg_failcnt = -1;
    if (g_cgroup) {
        c->cg_failcnt = cgroup_failcnt(g_cgroup);
        char path[600];
        snprintf(path, sizeof path, "%s/memory.stat", g_cgroup);
        c->cg_majflt = keyed(path, "pgmajfault");
        c->cg_file = keyed(path, "cache");               /* v1 */
        if (c->cg_file < 0) c->cg_file = keyed(path, "file"); /* v2 */
        c->cg_dirty = keyed(path, "dirty");                   /* v1 */
        if (c->cg_dirty < 0) c->cg_dirty = keyed(path, "file_dirty"); /* v2 */
    }
    c->ns = now_ns();
}

static const char *g_label = "run";

static void report(const char *phase, const struct counters *a, const struct counters *b,
                   double floor_s) {
    double s = (b->ns - a->ns) / 1e9;
    long faults = b->majflt - a->majflt;
    long long dev = a->dev_read_sectors >= 0 ? (b->dev_read_sectors - a->dev_read_sectors) * 512 : -1;
    long long ios = a->dev_read_ios >= 0 ? b->dev_read_ios - a->dev_read_ios : -1;
    long long written =
        a->dev_write_sectors >= 0 ? (b->dev_write_sectors - a->dev_write_sectors) * 512 : -1;
    long long pgpgin = a->pgpgin_kib >= 0 ? (b->pgpgin_kib - a->pgpgin_kib) * 1024 : -1;
    long long cgf = a->cg_majflt >= 0 ? b->cg_majflt - a->cg_majflt : -1;
    double per_fault = faults > 0 && dev >= 0 ? (double)dev / faults : 0;
    double main_cpu = b->main_cpu_s - a->main_cpu_s;
    double other_cpu = b->all_cpu_s - a->all_cpu_s - main_cpu;
    long long failcnt = a->cg_failcnt >= 0 && b->cg_failcnt >= 0 ? b->cg_failcnt - a->cg_failcnt : -1;
    printf("PHASE label=%s phase=%s s=%.3f majflt=%ld dev_read_bytes=%lld dev_read_ios=%lld "
           "dev_write_bytes=%lld cg_dirty_start_bytes=%lld pgpgin_bytes=%lld cg_majflt=%lld cg_file_bytes=%lld bytes_per_fault=%.0f us_per_fault=%.1f "
           "main_cpu_s=%.3f other_cpu_s=%.3f main_nivcsw=%ld cg_failcnt=%lld floor_s=%.3f ratio=%.2f\n",
           g_label, phase, s, faults, dev, ios, written, a->cg_dirty, pgpgin, cgf, b->cg_file, per_fault,
           faults > 0 ? s * 1e6 / faults : 0, main_cpu, other_cpu < 0 ? 0 : other_cpu,
           b->main_nivcsw - a->main_nivcsw, failcnt, floor_s, floor_s > 0 ? s / floor_s : 0);
    fflush(stdout);
}

/* ---------------------------------------------------------------- floor */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int floor_main(int argc, char **argv) {
    const char *path = NULL;
    uint64_t size = 1ull << 30;
    int reads = 3000, keep = 0, reuse = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--file") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--keep")) keep = 1;
        else if (!strcmp(argv[i], "--reuse")) keep = reuse = 1;
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) size = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--reads") && i + 1 < argc) reads = atoi(argv[++i]);
        else {
            fprintf(stderr, "phases floor: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    const size_t block = 8u << 20;
    size = size / block * block;
    if (!path || size == 0 || reads < 10) {
        fprintf(stderr, "phases floor: give --file PATH and --size of at least 8M\n");
        return 2;
    }
    int fd = reuse ? open(path, O_RDONLY | O_DIRECT | O_CLOEXEC)
                   : open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "phases floor: cannot open %s with O_DIRECT: %s\n", path, strerror(errno));
        return 2;
    }
    unsigned char *buf;
    if (posix_memalign((void **)&buf, 4096, block)) return 2;
    uint64_t seed = 0x1234567;
    for (size_t i = 0; i < block / 8; i++) ((uint64_t *)buf)[i] = rng_next(&seed);
    /* written, not fallocated: reading an unwritten extent returns zeros
     * without touching the disk */
    struct stat st;
    if (reuse && (fstat(fd, &st) != 0 || (uint64_t)st.st_size < size)) {
        fprintf(stderr, "phases floor: %s is smaller than --size; create it without --reuse\n", path);
        return 2;
    }
    uint64_t t0 = now_ns();
    for (uint64_t off = 0; !reuse && off < size; off += block) {
        buf[0] = (unsigned char)(off >> 23);
        if (pwrite(fd, buf, block, (off_t)off) != (ssize_t)block) {
            fprintf(stderr, "phases floor: write to %s failed: %s\n", path, strerror(errno));
            unlink(path);
            return 2;
        }
    }
    if (!reuse) fdatasync(fd);
    double write_s = reuse ? 0 : (now_ns() - t0) / 1e9;

    t0 = now_ns();
    for (uint64_t off = 0; off < size; off += block)
        if (pread(fd, buf, block, (off_t)off) != (ssize_t)block) {
            fprintf(stderr, "phases floor: read of %s failed: %s\n", path, strerror(errno));
            if (!keep) unlink(path);
            return 2;
        }
    double read_s = (now_ns() - t0) / 1e9;

    /* random 4 KiB reads; the first 10% warm the path up (VMs here hand idle
     * memory and queues back to the host) and are not counted */
    int warm = reads / 10;
    uint64_t *lat = calloc((size_t)reads, sizeof *lat);
    uint64_t pages = size / 4096;
    for (int i = 0; i < warm + reads; i++) {
        uint64_t off = rng_next(&seed) % pages * 4096;
        uint64_t a = now_ns();
        if (pread(fd, buf, 4096, (off_t)off) != 4096) {
            fprintf(stderr, "phases floor: read of %s failed: %s\n", path, strerror(errno));
            if (!keep) unlink(path);
            return 2;
        }
        if (i >= warm) lat[i - warm] = now_ns() - a;
    }
    qsort(lat, (size_t)reads, sizeof *lat, cmp_u64);
    double med_us = lat[reads / 2] / 1e3, p90_us = lat[reads * 9 / 10] / 1e3;
    close(fd);
    if (!keep) unlink(path);
    printf("FLOOR lat_med_us=%.1f lat_p90_us=%.1f seq_read_MBps=%.0f seq_write_MBps=%.0f bytes=%llu\n",
           med_us, p90_us, size / read_s / 1e6, write_s > 0 ? size / write_s / 1e6 : 0, (unsigned long long)size);
    free(lat);
    free(buf);
    return 0;
}

/* ---------------------------------------------------------------- run */

/* what fill writes into row r, column c: cheap, exact in a float, and
 * different for every row and column the checks look at */
static inline float cell(uint64_t r, unsigned c) { return (float)((r * 7 + c) & 0xFFFFFF); }

static float *allocate(uint64_t size, int baseline, const char *dir, int advice) {
    if (!baseline) return malloc(size);
    char path[4096];
    snprintf(path, sizeof path, "%s/phases-baseline.XXXXXX", dir);
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "phases: cannot create a file in %s: %s\n", dir, strerror(errno));
        return NULL;
    }
    unlink(path);
    if (fallocate(fd, 0, 0, (off_t)size) != 0) {
        fprintf(stderr, "phases: cannot fallocate %llu bytes in %s: %s\n", (unsigned long long)size,
                dir, strerror(errno));
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return NULL;
    if (advice != MADV_NORMAL && madvise(p, size, advice) != 0) {
        fprintf(stderr, "phases: madvise of the baseline file failed: %s\n", strerror(errno));
        munmap(p, size);
        return NULL;
    }
    return p;
}

/* N random rows in batches of B, each copied into the batch buffer, then
 * the batch is used: every row checked at its first and last column */
static uint64_t gather(const float *m, uint64_t nrows, int rows, int batch, uint64_t seed, float *out,
                       uint64_t *idx) {
    uint64_t bad = 0;
    for (int done = 0; done < rows; done += batch) {
        int n = rows - done < batch ? rows - done : batch;
        for (int k = 0; k < n; k++) {
            idx[k] = rng_next(&seed) % nrows;
            memcpy(out + (size_t)k * ROW_FLOATS, m + idx[k] * ROW_FLOATS, ROW_BYTES);
        }
        for (int k = 0; k < n; k++) {
            const float *row = out + (size_t)k * ROW_FLOATS;
            bad += row[0] != cell(idx[k], 0) || row[ROW_FLOATS - 1] != cell(idx[k], ROW_FLOATS - 1);
        }
    }
    return bad;
}

/* how many distinct 4 KiB pages the rows gather() will read lie in: the
 * rows it draws with this seed, exactly (a second row of a page already
 * read in the same gather costs no read) */
static uint64_t gather_pages(uint64_t nrows, int rows, uint64_t seed) {
    uint64_t *pages = malloc((size_t)rows * sizeof *pages);
    if (!pages) return (uint64_t)rows;
    for (int i = 0; i < rows; i++) pages[i] = rng_next(&seed) % nrows * ROW_BYTES / 4096;
    qsort(pages, (size_t)rows, sizeof *pages, cmp_u64);
    uint64_t distinct = 0;
    for (int i = 0; i < rows; i++) distinct += i == 0 || pages[i] != pages[i - 1];
    free(pages);
    return distinct;
}

static int run_main(int argc, char **argv) {
    uint64_t size = 1ull << 30, seed = 42;
    uint64_t limit = 0;
    int rows = 20000, batch = 1000, baseline = 0, advice = MADV_NORMAL;
    double lat_us = 0, read_mbps = 0, write_mbps = 0;
    const char *dir = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--size") && more) size = parse_size(argv[++i]);
        else if (!strcmp(a, "--rows") && more) rows = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && more) batch = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && more) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--label") && more) g_label = argv[++i];
        else if (!strcmp(a, "--dev") && more) g_dev = argv[++i];
        else if (!strcmp(a, "--cgroup") && more) g_cgroup = argv[++i];
        else if (!strcmp(a, "--lat-us") && more) lat_us = atof(argv[++i]);
        else if (!strcmp(a, "--read-MBps") && more) read_mbps = atof(argv[++i]);
        else if (!strcmp(a, "--write-MBps") && more) write_mbps = atof(argv[++i]);
        else if (!strcmp(a, "--limit") && more) limit = parse_size(argv[++i]);
        else if (!strcmp(a, "--baseline")) baseline = 1;
        else if (!strcmp(a, "--advice") && more) {
            const char *v = argv[++i];
            if (!strcmp(v, "random")) advice = MADV_RANDOM;
            else if (strcmp(v, "normal")) {
                fprintf(stderr, "phases run: --advice takes normal or random, not %s\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--dir") && more) dir = argv[++i];
        else {
            fprintf(stderr, "phases run: unknown option %s\n", a);
            return 2;
        }
    }
    uint64_t nrows = size / ROW_BYTES;
    if (nrows == 0 || rows <= 0 || batch <= 0 || (baseline && !dir)) {
        fprintf(stderr, "phases run: give --size of at least 1K, positive --rows and --batch, "
                        "and --dir with --baseline\n");
        return 2;
    }
    size = nrows * ROW_BYTES;
    float *out = malloc((size_t)batch * ROW_BYTES);
    uint64_t *idx = malloc((size_t)batch * sizeof *idx);
    float *m = allocate(size, baseline, dir, advice);
    if (!m || !out || !idx) {
        fprintf(stderr, "phases run: could not allocate the %llu-byte matrix\n", (unsigned long long)size);
        return 2;
    }
    double mb = size / 1e6;
    struct counters a, b;
    uint64_t bad = 0;

    sample(&a);
    for (uint64_t r = 0; r < nrows; r++) {
        float *row = m + r * ROW_FLOATS;
        for (unsigned c = 0; c < ROW_FLOATS; c++) row[c] = cell(r, c);
    }
    sample(&b);
    report("fill", &a, &b, write_mbps > 0 ? mb / write_mbps : 0);

    /* at best `limit` bytes of the matrix are resident: the rest of the
     * gather's pages must be read, one 4 KiB read at queue depth 1 each */
    double miss = limit > 0 && limit < size ? 1.0 - (double)limit / size : 0;
    uint64_t seed2 = seed ^ 0x9E3779B97F4A7C15ull;
    double floor1 = lat_us * miss * gather_pages(nrows, rows, seed) / 1e6;
    double floor2 = lat_us * miss * gather_pages(nrows, rows, seed2) / 1e6;
    sample(&a);
    bad += gather(m, nrows, rows, batch, seed, out, idx);
    sample(&b);
    report("gather1", &a, &b, floor1);

    sample(&a);
    for (uint64_t r = 0; r < nrows; r++) {
        const float *row = m + r * ROW_FLOATS;
        /* two cells per row checked, every cell read (summed as integers so
         * the loop vectorises and costs far less than the disk) */
        const uint32_t *w = (const uint32_t *)row;
        uint32_t acc = 0;
        for (unsigned c = 0; c < ROW_FLOATS; c++) acc += w[c];
        g_bench_sink += acc;
        bad += row[0] != cell(r, 0) || row[ROW_FLOATS - 1] != cell(r, ROW_FLOATS - 1);
    }
    sample(&b);
    report("seq", &a, &b, read_mbps > 0 ? mb / read_mbps : 0);

    sample(&a);
    bad += gather(m, nrows, rows, batch, seed2, out, idx);
    sample(&b);
    report("gather2", &a, &b, floor2);

    if (bad) fprintf(stderr, "phases run: %llu rows read back wrong\n", (unsigned long long)bad);
    if (baseline) munmap(m, size);
    else free(m);
    free(out);
    free(idx);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "floor")) return floor_main(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "run")) return run_main(argc - 2, argv + 2);
    fprintf(stderr, "usage: phases floor --file PATH --size SIZE [--reads N]\n"
                    "       phases run --size SIZE [--rows N] [--batch N] [--baseline --dir DIR "
                    "[--advice normal|random]] [--dev loopN] [--cgroup DIR] [--limit BYTES] [--lat-us X] "
                    "[--read-MBps Y] [--write-MBps Z]\n");
    return 2;
}
