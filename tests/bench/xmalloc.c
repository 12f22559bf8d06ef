/* xmalloc.c — xmalloc-style producer/consumer, written for spillway's suite.
 *
 * P producer threads allocate batches of blocks (mostly 16-256 bytes, one in
 * 32 up to 4 KiB), write into them and push each batch onto a shared bounded
 * queue; C consumer threads pop batches and free every block. Every block
 * is freed by a thread that did not allocate it: the cross-thread free path
 * of the allocator is what this measures. Fixed work: wall time is the metric.
 *
 * usage: xmalloc PRODUCERS CONSUMERS BATCHES_PER_PRODUCER [BATCH]
 */
#include "common.h"

#include <pthread.h>

#define QCAP 64

static int g_batch = 128;
static int g_per_producer;
static void **g_queue[QCAP];
static int g_head, g_count, g_producers_left;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_not_empty = PTHREAD_COND_INITIALIZER, g_not_full = PTHREAD_COND_INITIALIZER;

static void *producer(void *arg) {
    uint64_t rng = 0xD1B54A32D192ED03ull * (uint64_t)(uintptr_t)arg + 1;
    for (int b = 0; b < g_per_producer; b++) {
        void **batch = malloc(sizeof(void *) * (size_t)g_batch);
        for (int i = 0; i < g_batch; i++) {
            uint64_t r = rng_next(&rng);
            size_t n = (r & 31) == 0 ? 256 + (r >> 8) % 3841 : 16 + (r >> 8) % 241;
            unsigned char *p = malloc(n);
            p[0] = (unsigned char)i;
            p[n - 1] = (unsigned char)b;
            batch[i] = p;
        }
        pthread_mutex_lock(&g_lock);
        while (g_count == QCAP) pthread_cond_wait(&g_not_full, &g_lock);
        g_queue[(g_head + g_count) % QCAP] = batch;
        g_count++;
        pthread_cond_signal(&g_not_empty);
        pthread_mutex_unlock(&g_lock);
    }
    pthread_mutex_lock(&g_lock);
    g_producers_left--;
    pthread_cond_broadcast(&g_not_empty);
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    uint64_t sum = 0;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        while (g_count == 0 && g_producers_left > 0) pthread_cond_wait(&g_not_empty, &g_lock);
        if (g_count == 0) {
            pthread_mutex_unlock(&g_lock);
            break;
        }
        void **batch = g_queue[g_head];
        g_head = (g_head + 1) % QCAP;
        g_count--;
        pthread_cond_signal(&g_not_full);
        pthread_mutex_unlock(&g_lock);
        for (int i = 0; i < g_batch; i++) {
            sum += ((unsigned char *)batch[i])[0];
            free(batch[i]);
        }
        free(batch);
    }
    g_bench_sink += sum;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s PRODUCERS CONSUMERS BATCHES_PER_PRODUCER [BATCH]\n", argv[0]);
        return 2;
    }
    int np = atoi(argv[1]), nc = atoi(argv[2]);
    g_per_producer = atoi(argv[3]);
    if (argc >= 5) g_batch = atoi(argv[4]);
    g_producers_left = np;
    pthread_t tid[256];
    uint64_t t0 = now_ns();
    for (int i = 0; i < np; i++) pthread_create(&tid[i], NULL, producer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < nc; i++) pthread_create(&tid[np + i], NULL, consumer, NULL);
    for (int i = 0; i < np + nc; i++) pthread_join(tid[i], NULL);
    uint64_t t1 = now_ns();
    double blocks = (double)np * g_per_producer * g_batch;
    fprintf(stderr, "xmalloc: %.0f blocks in %.3f s (%.1f M blocks/s)\n", blocks, (t1 - t0) / 1e9,
            blocks / ((t1 - t0) / 1e3));
    return 0;
}
