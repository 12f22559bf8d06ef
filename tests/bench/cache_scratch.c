/* cache_scratch.c — passive false sharing, written for spillway's suite.
 *
 * The main thread allocates one small object per worker back to back (so
 * they tend to share cache lines) and hands them out. Each worker frees the
 * object it was given, then repeatedly allocates an object of the same
 * size, writes it many times and frees it. An allocator that gives a worker
 * memory on a cache line another core is writing makes the lines ping-pong
 * between cores and the run several times slower.
 *
 * usage: cache_scratch THREADS ITERATIONS OBJSIZE REPETITIONS
 */
#include "common.h"

#include <pthread.h>

static int g_iterations, g_repetitions;
static size_t g_objsize;

static void *worker(void *arg) {
    free(arg); /* the object main allocated for us */
    for (int i = 0; i < g_iterations; i++) {
        volatile char *p = malloc(g_objsize);
        for (int r = 0; r < g_repetitions; r++)
            for (size_t k = 0; k < g_objsize; k++) {
                p[k] = (char)(p[k] + (char)r);
            }
        free((void *)p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s THREADS ITERATIONS OBJSIZE REPETITIONS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]);
    g_iterations = atoi(argv[2]);
    g_objsize = strtoul(argv[3], NULL, 0);
    g_repetitions = atoi(argv[4]);
    pthread_t tid[256];
    void *obj[256];
    for (int t = 0; t < threads; t++) obj[t] = malloc(g_objsize);
    uint64_t t0 = now_ns();
    for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, obj[t]);
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    uint64_t t1 = now_ns();
    fprintf(stderr, "cache-scratch: %.3f s\n", (t1 - t0) / 1e9);
    return 0;
}
