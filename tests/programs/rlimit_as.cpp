// rlimit_as.cpp — a process that lowers RLIMIT_AS to 4 GiB after start-up
// (as sandboxes, `prlimit --as`, Python's resource.setrlimit do) must behave
// under the shim as it does bare: threads start, 100 MiB and 1 GiB
// allocations succeed and grow, a request past the limit fails with ENOMEM,
// everything frees. The script runs it bare and under the shim and compares
// the printed results line for line. Under the shim it also checks that the
// large allocations are still spillway regions (the reservation grew under
// the limit instead of falling back).
#include "check.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>

static void *thread_body(void *arg) {
    char *p = static_cast<char *>(malloc(1 << 20));
    if (p) memset(p, 1, 1 << 20);
    *static_cast<bool *>(arg) = p != nullptr;
    free(p);
    return nullptr;
}

// Touches one byte per 2 MiB: proves the mapping without spending RAM.
// Not denser: each touched page of a reserved (fallocated) spill file
// splits its unwritten extent, and where the spill disk is mounted with
// `discard` (this VM's root is) every extent is discarded, synchronously,
// when the file is freed, and the process's exit waits for it. At one byte
// per 64 KiB (16,384 extents a GiB) the shim's exit took 37-64 s with other
// writers on the disk, and the test its 120 s timeout (docs/filesystems.md).
static void touch(char *p, size_t n) {
    for (size_t i = 0; i < n; i += 2 << 20) p[i] = (char)i;
    p[n - 1] = 1;
}

int main() {
    using backing_fn = int (*)(const void *);
    auto backing = reinterpret_cast<backing_fn>(dlsym(RTLD_DEFAULT, "spillway_backing"));
    const bool shim = backing != nullptr;
    auto routed = [&](const void *p) { return !shim || backing(p) != 0; };

    rlimit lim{size_t(4) << 30, size_t(4) << 30};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
    printf("RLIMIT_AS lowered to 4 GiB\n");

    constexpr int kThreads = 32;
    pthread_t ids[kThreads];
    bool ok[kThreads] = {};
    int started = 0;
    for (int i = 0; i < kThreads; i++)
        if (pthread_create(&ids[i], nullptr, thread_body, &ok[i]) == 0) started++;
        else break;
    int fine = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(ids[i], nullptr);
        fine += ok[i];
    }
    printf("threads started %d/%d, allocated in %d\n", started, kThreads, fine);

    const size_t mib = size_t(1) << 20;
    char *medium = static_cast<char *>(malloc(100 * mib));
    printf("malloc(100 MiB): %s\n", medium ? "ok" : strerror(errno));
    CHECK(medium && routed(medium));
    touch(medium, 100 * mib);

    char *big = static_cast<char *>(malloc(1024 * mib));
    printf("malloc(1 GiB): %s\n", big ? "ok" : strerror(errno));
    CHECK(big && routed(big));
    touch(big, 1024 * mib);

    char *grown = static_cast<char *>(realloc(medium, 600 * mib));
    printf("realloc(100 MiB -> 600 MiB): %s\n", grown ? "ok" : strerror(errno));
    CHECK(grown && routed(grown));
    CHECK(grown[0] == 0 && grown[100 * mib - 1] == 1); // the old bytes came along
    touch(grown, 600 * mib);

    errno = 0;
    void *too_big = malloc(size_t(5) << 30);
    printf("malloc(5 GiB) past the limit: %s\n", too_big ? "succeeded" : strerror(errno));
    free(too_big);

    free(big);
    free(grown);
    char *again = static_cast<char *>(malloc(1024 * mib));
    printf("malloc(1 GiB) after freeing: %s\n", again ? "ok" : strerror(errno));
    CHECK(again && routed(again));
    touch(again, 1024 * mib);
    free(again);

    started = 0;
    for (int i = 0; i < kThreads; i++)
        if (pthread_create(&ids[i], nullptr, thread_body, &ok[i]) == 0) started++;
    for (int i = 0; i < started; i++) pthread_join(ids[i], nullptr);
    printf("threads started again %d/%d\n", started, kThreads);
    return 0;
}
