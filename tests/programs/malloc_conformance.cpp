// malloc_conformance.cpp — the malloc family's documented edge cases, as
// glibc's manual and the man pages state them. Prints one line per case
// and exits 1 if any case broke its documented result. conformance.sh runs
// it bare and under the shim (1 MiB threshold) and requires identical
// output: the shim must be indistinguishable from glibc here.
// Sizes are 4 MiB or more where the large path is meant (large at 1 MiB).
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <pthread.h>
#include <vector>

// A failed realloc leaves its block valid: reading it afterwards is the test.
#pragma GCC diagnostic ignored "-Wuse-after-free"

namespace {

int g_failures = 0;

void report(const char *name, bool ok, const char *detail = "") {
    printf("%-52s %s%s%s\n", name, ok ? "ok" : "FAILED", *detail ? ": " : "", detail);
    if (!ok) g_failures++;
}

// Keeps the compiler from folding calls with constant impossible sizes.
size_t opaque(size_t n) {
    volatile size_t v = n;
    return v;
}

bool fails_with(void *p, int want_errno) {
    int e = errno;
    free(p);
    return p == nullptr && e == want_errno;
}

constexpr size_t kLarge = 4 << 20;

void impossible_sizes() {
    errno = 0;
    report("malloc(SIZE_MAX) fails with ENOMEM", fails_with(malloc(opaque(SIZE_MAX)), ENOMEM));
    errno = 0;
    report("malloc(PTRDIFF_MAX + 1) fails with ENOMEM",
           fails_with(malloc(opaque((size_t)PTRDIFF_MAX + 1)), ENOMEM));
    errno = 0;
    report("malloc(PTRDIFF_MAX) fails with ENOMEM", fails_with(malloc(opaque(PTRDIFF_MAX)), ENOMEM));
    errno = 0;
    report("calloc(SIZE_MAX / 2 + 1, 2) overflows: ENOMEM",
           fails_with(calloc(opaque(SIZE_MAX / 2 + 1), 2), ENOMEM));
    errno = 0;
    report("calloc(2, SIZE_MAX / 2 + 1) overflows: ENOMEM",
           fails_with(calloc(2, opaque(SIZE_MAX / 2 + 1)), ENOMEM));
    errno = 0;
    report("calloc(1, PTRDIFF_MAX + 1) fails with ENOMEM",
           fails_with(calloc(1, opaque((size_t)PTRDIFF_MAX + 1)), ENOMEM));
    errno = 0;
    report("reallocarray(NULL, SIZE_MAX, 2) overflows: ENOMEM",
           fails_with(reallocarray(nullptr, opaque(SIZE_MAX), 2), ENOMEM));
    for (size_t size : {size_t(64), kLarge}) {
        char *p = (char *)malloc(size);
        memset(p, 0x5a, size);
        errno = 0;
        void *q = reallocarray(p, opaque(SIZE_MAX / 4 + 1), 8);
        bool ok = q == nullptr && errno == ENOMEM && p[0] == 0x5a && p[size - 1] == 0x5a;
        report(size == 64 ? "reallocarray overflow keeps a small block intact"
                          : "reallocarray overflow keeps a large block intact", ok);
        errno = 0;
        q = realloc(p, opaque(SIZE_MAX));
        ok = q == nullptr && errno == ENOMEM && p[0] == 0x5a && p[size - 1] == 0x5a;
        report(size == 64 ? "realloc(small, SIZE_MAX): ENOMEM, block intact"
                          : "realloc(large, SIZE_MAX): ENOMEM, block intact", ok);
        free(p);
    }
}

void alignment() {
    const size_t bad[] = {0, 1, 2, 3, 4, sizeof(void *) / 2 * 3, 24, 4097, (size_t)1 << 63 | 8};
    for (size_t size : {size_t(16), kLarge}) {
        bool all_ok = true;
        for (size_t align : bad) {
            void *sentinel = (void *)0x1234;
            void *out = sentinel;
            int rc = posix_memalign(&out, opaque(align), size);
            if (rc != EINVAL || out != sentinel) all_ok = false;
            if (rc == 0) free(out);
        }
        report(size == 16 ? "posix_memalign(bad alignment): EINVAL, out untouched (small)"
                          : "posix_memalign(bad alignment): EINVAL, out untouched (large)",
               all_ok);
    }
    bool good = true;
    for (size_t align : {sizeof(void *), size_t(64), size_t(4096), size_t(1) << 21})
        for (size_t size : {size_t(1), size_t(100), kLarge + 1}) {
            void *out = nullptr;
            if (posix_memalign(&out, align, size) != 0 || (uintptr_t)out % align != 0) good = false;
            else memset(out, 1, size);
            free(out);
        }
    report("posix_memalign(good alignment) aligns, small and large", good);
    errno = 0;
    void *sentinel = (void *)0x1234, *out = sentinel;
    int rc = posix_memalign(&out, 64, opaque(SIZE_MAX));
    report("posix_memalign(64, SIZE_MAX): ENOMEM, out untouched", rc == ENOMEM && out == sentinel);
    report("posix_memalign(64, SIZE_MAX) leaves errno ENOMEM, as glibc does", errno == ENOMEM);

    good = true;
    for (size_t align : {size_t(16), size_t(64), size_t(4096)})
        for (size_t size : {size_t(1), size_t(3), size_t(17), size_t(4095), size_t(4097),
                            kLarge + 1, kLarge + 4095}) {
            void *p = aligned_alloc(align, size); // sizes need not be multiples of align
            if (!p || (uintptr_t)p % align != 0 || malloc_usable_size(p) < size) good = false;
            else memset(p, 2, size);
            free(p);
        }
    report("aligned_alloc with sizes not a multiple of align", good);

    // glibc aligns every block to 16 (alignof(max_align_t)), tiny ones too
    // (glibc's tst-mallocalign1). Several blocks per size, so a size class
    // whose blocks are only 8 apart shows; every form that allocates.
    good = true;
    char detail[160] = "";
    auto check = [&](const char *fn, size_t n, void *p) {
        if (p && (uintptr_t)p % alignof(max_align_t) == 0) return;
        if (good) snprintf(detail, sizeof detail, "%s(%zu) -> %p", fn, n, p);
        good = false;
    };
    for (size_t n = 0; n <= 1024; n++) {
        void *blocks[8];
        for (void *&b : blocks) check("malloc", n, b = malloc(n));
        for (void *b : blocks) free(b);
        for (void *&b : blocks) check("calloc", n, b = calloc(1, n));
        for (void *b : blocks) free(b);
        for (void *&b : blocks) check("realloc", n, b = realloc(malloc(100), n ? n : 1));
        for (void *b : blocks) free(b);
        for (void *&b : blocks) check("operator new", n, b = operator new(n));
        for (void *b : blocks) operator delete(b);
        void *out[8];
        for (void *&b : out) {
            b = nullptr;
            if (posix_memalign(&b, sizeof(void *), n) != 0) b = nullptr;
            check("posix_memalign(8)", n, b);
        }
        for (void *b : out) free(b);
    }
    report("every block is 16-aligned, sizes 0 to 1024", good, detail);
}

void realloc_edges() {
    void *p = realloc(nullptr, 100);
    bool ok = p && malloc_usable_size(p) >= 100;
    free(p);
    report("realloc(NULL, 100) is malloc(100)", ok);
    p = realloc(nullptr, kLarge);
    ok = p && malloc_usable_size(p) >= kLarge;
    if (p) memset(p, 3, kLarge);
    free(p);
    report("realloc(NULL, large) is malloc(large)", ok);
    for (size_t size : {size_t(100), kLarge}) {
        p = malloc(size);
        errno = 0;
        void *q = realloc(p, 0); // glibc: frees p, returns NULL
        report(size == 100 ? "realloc(small, 0) frees and returns NULL"
                           : "realloc(large, 0) frees and returns NULL",
               q == nullptr && errno == 0);
    }
    // Growing across the threshold and back keeps the bytes.
    unsigned char *b = (unsigned char *)malloc(1000);
    for (int i = 0; i < 1000; i++) b[i] = (unsigned char)i;
    b = (unsigned char *)realloc(b, kLarge);
    ok = b != nullptr;
    for (int i = 0; ok && i < 1000; i++) ok = b[i] == (unsigned char)i;
    b = (unsigned char *)realloc(b, 500);
    for (int i = 0; ok && i < 500; i++) ok = b[i] == (unsigned char)i;
    free(b);
    report("realloc small -> large -> small keeps the bytes", ok);
}

void errno_and_sizes() {
    bool ok = true;
    for (size_t size : {size_t(0), size_t(1), size_t(100000), kLarge}) {
        void *p = malloc(size);
        errno = 12345;
        free(p);
        if (errno != 12345) ok = false;
    }
    errno = 12345;
    free(nullptr);
    report("free preserves errno (NULL, small, large)", ok && errno == 12345);
    report("malloc_usable_size(NULL) == 0", malloc_usable_size(nullptr) == 0);
    ok = true;
    for (size_t size : {size_t(1), size_t(1000), kLarge + 1}) {
        void *p = malloc(size);
        if (malloc_usable_size(p) < size) ok = false;
        free(p);
    }
    report("malloc_usable_size(p) >= the size asked for", ok);
    void *z = malloc(0);
    report("malloc(0) returns a unique pointer that free accepts", z != nullptr);
    free(z);
    unsigned char *c = (unsigned char *)calloc(kLarge / 8, 8);
    ok = c != nullptr;
    for (size_t i = 0; ok && i < kLarge; i += 4093) ok = c[i] == 0;
    free(c);
    report("calloc(large) reads as zero", ok);
}

// Threads allocate, hand their blocks over and exit; other threads free
// them after the owner is gone (mimalloc and the shim both keep per-thread
// state that must outlive its thread).
struct Handoff {
    std::vector<void *> blocks;
    bool intact = true; // set by the consumer: every block still held its bytes
};

void *producer(void *arg) {
    auto *h = (Handoff *)arg;
    for (int i = 0; i < 200; i++) {
        size_t size = i % 50 == 0 ? kLarge : (size_t)(16 + i * 37);
        void *p = malloc(size);
        if (!p) abort();
        memset(p, i, size < 4096 ? size : 4096);
        h->blocks.push_back(p);
    }
    return nullptr;
}

void *consumer(void *arg) {
    auto *h = (Handoff *)arg;
    for (size_t i = 0; i < h->blocks.size(); i++) {
        auto *p = (unsigned char *)h->blocks[i];
        if (p[0] != (unsigned char)i || p[15] != (unsigned char)i) h->intact = false;
        free(p);
    }
    return nullptr;
}

void thread_exit_frees() {
    bool intact = true;
    for (int round = 0; round < 8; round++) {
        Handoff h[4];
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], nullptr, producer, &h[i]);
        for (int i = 0; i < 4; i++) pthread_join(t[i], nullptr); // owners have exited
        for (int i = 0; i < 4; i++) pthread_create(&t[i], nullptr, consumer, &h[(i + 1) % 4]);
        for (int i = 0; i < 4; i++) pthread_join(t[i], nullptr);
        for (const Handoff &x : h) intact = intact && x.intact;
    }
    report("threads exit while others free their memory", intact);
}

} // namespace

int main() {
    impossible_sizes();
    alignment();
    realloc_edges();
    errno_and_sizes();
    thread_exit_frees();
    return g_failures ? 1 : 0;
}
