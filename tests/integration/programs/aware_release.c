/* aware_release.c — scenario 4, C part: aware code that finds
 * spillway_release_page_cache with dlsym (a no-op without the shim) and
 * calls it after writing each CHUNK_MIB buffer and again after verifying
 * it. It keeps every buffer live and samples the container's memory usage
 * from its cgroup right after each release. Prints
 *   usage baseline=B max_after_release=M samples=N
 * and "checksum ok"; the suite asserts M - B stays under its stated bound
 * (and, with --no-release, that the bound is not met for free).
 * Usage: aware_release CHUNKS CHUNK_MIB [--no-release] */
#include "probe.h"

#include <stdint.h>
#include <string.h>

typedef int (*release_fn)(const void *);

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "aware_release: usage: aware_release CHUNKS CHUNK_MIB [--no-release]; pass the sizes\n");
        return 2;
    }
    size_t n = strtoull(argv[1], 0, 10), chunk = strtoull(argv[2], 0, 10) << 20, words = chunk / 8;
    int do_release = !(argc > 3 && strcmp(argv[3], "--no-release") == 0);
    release_fn release = (release_fn)dlsym(RTLD_DEFAULT, "spillway_release_page_cache");
    printf("control API %s; releasing: %s\n", release ? "found" : "absent (release is a no-op)",
           do_release ? "yes" : "no");
    long long baseline = probe_cgroup_usage();
    if (baseline < 0) {
        fprintf(stderr, "aware_release: cannot read the cgroup's memory usage (memory.current or "
                        "memory.usage_in_bytes); run in a container with a memory cgroup\n");
        return 2;
    }
    long long max_after = 0;
    int samples = 0, failures = 0;
    uint64_t **bufs = calloc(n, sizeof *bufs);

    for (int phase = 0; phase < 2; phase++) {
        for (size_t c = 0; c < n; c++) {
            if (phase == 0) {
                bufs[c] = malloc(chunk);
                if (!bufs[c]) {
                    fprintf(stderr, "aware_release: malloc(%zu) failed at chunk %zu; out of memory\n", chunk, c);
                    return 3;
                }
                for (size_t i = 0; i < words; i++) bufs[c][i] = probe_mix(c * words + i);
            } else {
                for (size_t i = 0; i < words; i++)
                    if (bufs[c][i] != probe_mix(c * words + i)) {
                        failures++;
                        break;
                    }
            }
            if (do_release && release) {
                int rc = release(bufs[c]);
                if (rc != 0) {
                    fprintf(stderr, "aware_release: spillway_release_page_cache failed: %s\n", strerror(-rc));
                    return 4;
                }
            }
            long long now = probe_cgroup_usage();
            if (now > max_after) max_after = now;
            samples++;
            printf("%s chunk %zu backing=%s usage=%lld MiB\n", phase ? "verified" : "wrote", c,
                   probe_backing_name(probe_backing(bufs[c])), now >> 20);
            fflush(stdout);
        }
    }
    printf("usage baseline=%lld max_after_release=%lld samples=%d\n", baseline, max_after, samples);
    if (failures) {
        printf("checksum MISMATCH in %d chunks\n", failures);
        return 1;
    }
    printf("checksum ok over %zu MiB\n", (n * chunk) >> 20);
    return 0;
}
