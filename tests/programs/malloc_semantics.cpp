// malloc_semantics.cpp — the whole malloc family under the shim keeps glibc's
// contract: zeroed calloc, realloc across the threshold both ways keeps the
// bytes, every valid alignment, ENOMEM/EINVAL where due, usable sizes, and
// free() preserving errno. Run with SPILLWAY_THRESHOLD=1MiB.
#include "check.h"
#include "spillway.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <initializer_list>
#include <unistd.h>

static const size_t MiB = 1 << 20;

static int backing(const void *p) {
    static auto fn = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(fn != nullptr);
    return fn(p);
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)(seed + i / 4096);
    if (n) p[n - 1] = (unsigned char)seed;
}

static bool same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != (unsigned char)(seed + i / 4096)) return false;
    return true;
}

int main() {
    auto active = (int (*)())dlsym(RTLD_DEFAULT, "spillway_is_active");
    CHECK(active && active() == 1);

    // Large malloc lands in a region; small one does not.
    void *small = malloc(1000);
    void *large = malloc(3 * MiB);
    CHECK(backing(small) == SPILLWAY_NONE);
    CHECK(backing(large) != SPILLWAY_NONE);
    CHECK(malloc_usable_size(large) >= 3 * MiB);
    CHECK(malloc_usable_size(small) >= 1000);
    CHECK(malloc_usable_size(nullptr) == 0);
    free(small);
    free(large);

    // calloc of a fresh region reads as zeros, including a reused range.
    for (int round = 0; round < 3; round++) {
        unsigned char *z = (unsigned char *)calloc(5, MiB);
        CHECK(z && backing(z) != SPILLWAY_NONE);
        for (size_t i = 0; i < 5 * MiB; i += 512) CHECK(z[i] == 0);
        memset(z, 0xAB, 5 * MiB); // dirty it: the next round may reuse the range
        free(z);
        usleep(20000);
    }

    // realloc small -> large -> larger -> small keeps the bytes.
    unsigned char *p = (unsigned char *)malloc(100 * 1024);
    fill(p, 100 * 1024, 7);
    p = (unsigned char *)realloc(p, 2 * MiB);
    CHECK(backing(p) != SPILLWAY_NONE && same(p, 100 * 1024, 7));
    fill(p, 2 * MiB, 9);
    p = (unsigned char *)realloc(p, 64 * MiB);
    CHECK(same(p, 2 * MiB, 9));
    fill(p, 64 * MiB, 11);
    p = (unsigned char *)realloc(p, 300 * MiB); // dedicated-file size: mremap path
    CHECK(same(p, 64 * MiB, 11));
    p = (unsigned char *)realloc(p, 10 * MiB); // shrink in place
    CHECK(same(p, 10 * MiB, 11));
    p = (unsigned char *)realloc(p, 200 * 1024); // back below the threshold
    CHECK(backing(p) == SPILLWAY_NONE && same(p, 200 * 1024, 11));
    free(p);

    // Growth of many interleaved regions (forces moves, not just in-place).
    unsigned char *a = (unsigned char *)malloc(2 * MiB), *b = (unsigned char *)malloc(2 * MiB);
    fill(a, 2 * MiB, 1);
    fill(b, 2 * MiB, 2);
    for (size_t n = 3; n < 40; n += 5) {
        a = (unsigned char *)realloc(a, n * MiB);
        b = (unsigned char *)realloc(b, n * MiB);
        CHECK(a && b && same(a, 2 * MiB, 1) && same(b, 2 * MiB, 2));
    }
    free(a);
    free(b);

    // Every valid alignment, small and large.
    for (size_t align = sizeof(void *); align <= (size_t(1) << 30); align <<= 1) {
        for (size_t size : {size_t(24), size_t(3 * MiB)}) {
            void *q = nullptr;
            CHECK(posix_memalign(&q, align, size) == 0);
            CHECK(((uintptr_t)q & (align - 1)) == 0);
            memset(q, 1, size);
            CHECK(malloc_usable_size(q) >= size);
            free(q);
        }
    }
    void *q = nullptr;
    CHECK(posix_memalign(&q, 24, 100) == EINVAL);
    CHECK(posix_memalign(&q, 64, (size_t)1 << 62) == ENOMEM);
    errno = 0;
    CHECK(aligned_alloc(3, 64) == nullptr && errno == EINVAL);
    void *m = memalign(2 * MiB, 5 * MiB);
    CHECK(m && ((uintptr_t)m & (2 * MiB - 1)) == 0);
    free(m);
    void *v = valloc(3 * MiB);
    CHECK(v && ((uintptr_t)v & 4095) == 0);
    free(v);
    void *pv = pvalloc(5000);
    CHECK(pv && malloc_usable_size(pv) >= 8192);
    free(pv);

    // Impossible sizes.
    errno = 0;
    CHECK(malloc(SIZE_MAX - 4096) == nullptr && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 4) == nullptr && errno == ENOMEM);
    errno = 0;
    CHECK(reallocarray(nullptr, SIZE_MAX / 2, 4) == nullptr && errno == ENOMEM);

    // free() keeps errno, for small and large pointers.
    void *x = malloc(4 * MiB), *y = malloc(16);
    errno = 12345;
    free(x);
    free(y);
    free(nullptr);
    CHECK(errno == 12345);

    // realloc(p, 0) frees and returns NULL (glibc's behaviour).
    CHECK(realloc(malloc(2 * MiB), 0) == nullptr);
    puts("malloc_semantics: ok");
    return 0;
}
