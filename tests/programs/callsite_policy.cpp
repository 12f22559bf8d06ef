// callsite_policy.cpp — two named call sites allocating 512 MiB each: a
// sequential fill and a random 8-byte scatter. Prints where each landed
// (spillway_backing) so callsite_policy.sh can check rules, learning across
// runs, and the no-headroom fallback.
#include "check.h"
#include "spillway.h"

#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <unistd.h>

static const size_t kSize = size_t(512) << 20;

extern "C" __attribute__((noinline)) uint64_t *sequential_fill() {
    uint64_t *p = (uint64_t *)malloc(kSize);
    for (size_t i = 0; i < kSize / 8; i++) p[i] = i;
    return p;
}

extern "C" __attribute__((noinline)) uint64_t *scatter_add(unsigned writes) {
    uint64_t *p = (uint64_t *)malloc(kSize);
    std::mt19937_64 rng(42);
    for (unsigned i = 0; i < writes; i++) p[rng() % (kSize / 8)] += 1;
    return p;
}

int main(int argc, char **argv) {
    auto backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(backing);
    unsigned writes = argc > 1 ? (unsigned)atoi(argv[1]) : 30000;
    uint64_t *seq = sequential_fill();
    uint64_t *scatter = scatter_add(writes);
    printf("sequential=%d scatter=%d\n", backing(seq), backing(scatter));
    fflush(stdout);
    usleep(600000); // give the sampler a few ticks to classify the scatter site
    CHECK(seq[12345] == 12345);
    free(seq);
    free(scatter);
    return 0;
}
