/* larson.c — larson-style server churn, written for spillway's suite.
 *
 * T threads each own a table of S live blocks. A round: every thread does K
 * replacements (free a random slot, allocate a random small size, write
 * into it). Between rounds the tables rotate to the next thread, so a block
 * is usually freed by a different thread than the one that allocated it
 * (larson's "server hands its connections to a new worker"), and worker
 * threads are created and exit every round. Fixed work: wall time is the metric.
 *
 * usage: larson THREADS SLOTS ROUNDS OPS_PER_ROUND [MIN MAX]
 */
#include "common.h"

#include <pthread.h>

struct table {
    void **slot;
    size_t *len;
    uint64_t rng;
};

static int g_slots, g_ops;
static size_t g_min = 16, g_max = 512;

static size_t pick_size(uint64_t *rng) { return g_min + rng_next(rng) % (g_max - g_min + 1); }

static void *worker(void *arg) {
    struct table *t = arg;
    uint64_t sum = 0;
    for (int i = 0; i < g_ops; i++) {
        int k = (int)(rng_next(&t->rng) % (uint64_t)g_slots);
        sum += ((unsigned char *)t->slot[k])[0];
        free(t->slot[k]);
        size_t n = pick_size(&t->rng);
        unsigned char *p = malloc(n);
        if (!p) abort();
        p[0] = (unsigned char)i;
        p[n - 1] = (unsigned char)k;
        if (n > 64) p[n / 2] = 1;
        t->slot[k] = p;
        t->len[k] = n;
    }
    g_bench_sink += sum;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s THREADS SLOTS ROUNDS OPS_PER_ROUND [MIN MAX]\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), rounds = atoi(argv[3]);
    g_slots = atoi(argv[2]);
    g_ops = atoi(argv[4]);
    if (argc >= 7) {
        g_min = strtoul(argv[5], NULL, 0);
        g_max = strtoul(argv[6], NULL, 0);
    }
    struct table *tab = calloc((size_t)threads, sizeof *tab);
    for (int t = 0; t < threads; t++) {
        tab[t].slot = malloc(sizeof(void *) * (size_t)g_slots);
        tab[t].len = malloc(sizeof(size_t) * (size_t)g_slots);
        tab[t].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
        for (int k = 0; k < g_slots; k++) {
            tab[t].len[k] = pick_size(&tab[t].rng);
            tab[t].slot[k] = calloc(1, tab[t].len[k]);
        }
    }
    pthread_t *tid = malloc(sizeof(pthread_t) * (size_t)threads);
    uint64_t t0 = now_ns();
    for (int r = 0; r < rounds; r++) {
        for (int t = 0; t < threads; t++)
            pthread_create(&tid[t], NULL, worker, &tab[(t + r) % threads]);
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    }
    uint64_t t1 = now_ns();
    for (int t = 0; t < threads; t++) {
        for (int k = 0; k < g_slots; k++) free(tab[t].slot[k]);
        free(tab[t].slot);
        free(tab[t].len);
    }
    free(tab);
    free(tid);
    double ops = (double)threads * rounds * g_ops;
    fprintf(stderr, "larson: %.0f replacements in %.3f s (%.1f Mops/s)\n", ops, (t1 - t0) / 1e9,
            ops / ((t1 - t0) / 1e3));
    return 0;
}
