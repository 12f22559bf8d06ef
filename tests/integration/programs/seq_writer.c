/* seq_writer.c — scenario 1 (and the payload of scenario 7): writes TOTAL MiB
 * sequentially through large malloc()s of CHUNK MiB, keeps every chunk live,
 * then reads everything back and checks a checksum recomputed from the
 * pattern. Without the shim in a container limited below TOTAL it must be
 * OOM-killed; with it, it must finish with "checksum ok" and every chunk on
 * disk. Usage: seq_writer TOTAL_MIB CHUNK_MIB [PAUSE_MS_PER_CHUNK] */
#include "probe.h"

#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "seq_writer: usage: seq_writer TOTAL_MIB CHUNK_MIB [PAUSE_MS]; pass the sizes\n");
        return 2;
    }
    size_t total = strtoull(argv[1], 0, 10) << 20, chunk = strtoull(argv[2], 0, 10) << 20;
    long pause_ms = argc > 3 ? atol(argv[3]) : 0;
    if (!chunk || total < chunk) {
        fprintf(stderr, "seq_writer: CHUNK_MIB must be >0 and <= TOTAL_MIB; fix the arguments\n");
        return 2;
    }
    size_t n = total / chunk, words = chunk / 8;
    uint64_t **bufs = calloc(n, sizeof *bufs);
    int backing_counts[4] = {0};
    printf("shim active: %d\n", probe_shim_active());
    fflush(stdout);
    for (size_t c = 0; c < n; c++) {
        bufs[c] = malloc(chunk);
        if (!bufs[c]) {
            fprintf(stderr, "seq_writer: malloc(%zu) returned NULL at chunk %zu; out of memory\n", chunk, c);
            return 3;
        }
        for (size_t i = 0; i < words; i++) bufs[c][i] = probe_mix(c * words + i);
        int b = probe_backing(bufs[c]);
        backing_counts[b & 3]++;
        printf("filled %zu/%zu backing=%s\n", c + 1, n, probe_backing_name(b));
        fflush(stdout);
        if (pause_ms) {
            struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
            nanosleep(&ts, 0);
        }
    }
    uint64_t sum = 0, expect = 0;
    for (size_t c = 0; c < n; c++)
        for (size_t i = 0; i < words; i++) {
            sum += bufs[c][i];
            expect += probe_mix(c * words + i);
        }
    printf("chunks: disk=%d memory=%d anon=%d none=%d\n", backing_counts[1], backing_counts[2],
           backing_counts[3], backing_counts[0]);
    if (sum != expect) {
        printf("checksum MISMATCH: got %016llx expected %016llx\n", (unsigned long long)sum,
               (unsigned long long)expect);
        return 1;
    }
    printf("checksum ok %016llx over %zu MiB\n", (unsigned long long)sum, total >> 20);
    for (size_t c = 0; c < n; c++) free(bufs[c]);
    free(bufs);
    return 0;
}
