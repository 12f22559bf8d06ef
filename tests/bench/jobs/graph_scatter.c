/* graph_scatter.c — a graph build as a plain C program writes one: an edge
 * list of EDGES_MIB (16-byte (src, dst) pairs, as parsed from an input file)
 * is loaded into one malloc'd array, then streamed once in order while each
 * edge's source is counted into a calloc'd hash table of TABLE_MIB (8-byte
 * out-degree counters, a multiplicative hash of the node id: one random
 * 8-byte increment per edge), then the table is summed. The table is allocated
 * after the edges are loaded, as a job sizes it from what it read, so under
 * a limit the edge list's pages fill the cgroup when it arrives.
 * (jobs.sh runs it; issue 26: 2 GiB of edges, a 512 MiB table, in 1 GiB.)
 *
 * usage: graph_scatter [EDGES_MIB] [TABLE_MIB]   (default 2048 512)
 * Prints JOBPHASE lines (load, count, check) and JOBRESULT. */
#include "jobphase.h"

#include <stdint.h>

struct edge {
    uint64_t src, dst;
};

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

int main(int argc, char **argv) {
    size_t edges_mib = argc > 1 ? strtoull(argv[1], 0, 10) : 2048;
    size_t table_mib = argc > 2 ? strtoull(argv[2], 0, 10) : 512;
    size_t n = (edges_mib << 20) / sizeof(struct edge);
    size_t slots = (table_mib << 20) / sizeof(uint64_t); /* a power of two */
    uint64_t nodes = 1ull << 28, seed = 0x9E3779B97F4A7C15ull;
    struct jobphase p;

    jobphase_begin(&p, "graph", "load");
    struct edge *edges = malloc(n * sizeof *edges);
    if (!edges) return perror("malloc edges"), 3;
    for (size_t i = 0; i < n; i++) {
        edges[i].src = xorshift(&seed) % nodes;
        edges[i].dst = xorshift(&seed) % nodes;
    }
    jobphase_end(&p);

    jobphase_begin(&p, "graph", "count");
    uint64_t *degree = calloc(slots, sizeof *degree);
    if (!degree) return perror("calloc table"), 3;
    int shift = 64 - __builtin_ctzll(slots);
    for (size_t i = 0; i < n; i++) {
        degree[(edges[i].src * 0x9E3779B97F4A7C15ull) >> shift]++;
    }
    jobphase_end(&p);

    jobphase_begin(&p, "graph", "check");
    uint64_t total = 0, maxd = 0, used = 0;
    for (size_t s = 0; s < slots; s++) {
        total += degree[s];
        used += degree[s] != 0;
        if (degree[s] > maxd) maxd = degree[s];
    }
    jobphase_end(&p);
    printf("JOBRESULT job=graph value=%llu/%llu/%llu\n", (unsigned long long)total, (unsigned long long)used,
           (unsigned long long)maxd);
    free(degree);
    free(edges);
    return total == n ? 0 : 1;
}
