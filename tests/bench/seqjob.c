/* seqjob.c — a sequential batch job that holds more data than its memory
 * limit: it allocates TOTAL bytes in CHUNK-sized buffers with malloc,
 * fills each buffer front to back, keeps all of them, then reads every
 * buffer back in order and checks its contents. Without the shim the
 * buffers are anonymous memory and a cgroup limit below TOTAL kills it;
 * with the shim they are spill files whose written pages the kernel can
 * write back and evict.
 *
 * usage: seqjob TOTAL CHUNK
 * Prints "SEQJOB write_s=... read_s=... total_s=..." on stderr, and for
 * jobs.sh the phases (write, read) as JOBPHASE lines and the count of bad
 * words as JOBRESULT on stdout (jobs/jobphase.h); exit 1 on a verification
 * error.
 */
#include "common.h"
#include "jobs/jobphase.h"

static inline uint64_t pattern(size_t chunk, size_t i) { return (i * 0x9E3779B97F4A7C15ull) ^ chunk; }

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOTAL CHUNK\n", argv[0]);
        return 2;
    }
    size_t total = parse_size(argv[1]), chunk = parse_size(argv[2]);
    size_t n = total / chunk, words = chunk / 8;
    uint64_t **buf = calloc(n, sizeof *buf);
    struct jobphase p;
    jobphase_begin(&p, "live", "write");
    uint64_t t0 = now_ns();
    for (size_t c = 0; c < n; c++) {
        buf[c] = malloc(chunk);
        if (!buf[c]) {
            fprintf(stderr, "seqjob: malloc(%zu) failed at chunk %zu\n", chunk, c);
            return 3;
        }
        for (size_t i = 0; i < words; i++) buf[c][i] = pattern(c, i);
    }
    uint64_t t1 = now_ns();
    jobphase_end(&p);
    jobphase_begin(&p, "live", "read");
    uint64_t bad = 0;
    for (size_t c = 0; c < n; c++)
        for (size_t i = 0; i < words; i++) bad += buf[c][i] != pattern(c, i);
    uint64_t t2 = now_ns();
    jobphase_end(&p);
    printf("JOBRESULT job=live value=%llu\n", (unsigned long long)bad);
    for (size_t c = 0; c < n; c++) free(buf[c]);
    free(buf);
    fprintf(stderr, "SEQJOB write_s=%.3f read_s=%.3f total_s=%.3f bad_words=%llu\n", (t1 - t0) / 1e9,
            (t2 - t1) / 1e9, (t2 - t0) / 1e9, (unsigned long long)bad);
    return bad ? 1 : 0;
}
