// faultprog.cpp — the program faults.sh runs under the shim (and often under
// seccomp_fail or a low limit). Every mode allocates, writes every page,
// verifies and frees; it must end with exit 0 (the shim fell back, logged)
// or a clean NULL/ENOMEM from the allocator, never a signal.
//   faultprog work            the standard mix (pool, dedicated, calloc, realloc, aligned)
//   faultprog fill-live FILE  regions live, then the spill filesystem is filled (FILE), then
//                             every region page is written (reserved: no SIGBUS) and more is allocated
//   faultprog maxmap          the process's own vm.max_map_count exhausted, then allocations
//   faultprog emfile          descriptors exhausted after start-up, then allocations
//   faultprog rmdir           the spill directory is removed mid-run
//   faultprog readonly        the spill directory is made read-only mid-run (run as non-root)
//   faultprog config-gone     SPILLWAY_CONFIG is deleted, then a child is exec'ed
// Prints "backings: disk=N memory=N anon=N small=N null=N".
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "faultprog: %s:%d: CHECK failed: %s (errno %s)\n", __FILE__, \
                    __LINE__, #cond, strerror(errno));                                   \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static int (*g_backing)(const void *) = nullptr;
static long g_count[6]; // by spillway_backing value; [5] = NULL results

struct Buf {
    unsigned char *p;
    size_t n;
    unsigned char tag;
};
static std::vector<Buf> g_live;

static void note(const void *p) {
    if (!p) { g_count[5]++; return; }
    int b = g_backing ? g_backing(p) : 0;
    if (b < 0 || b > 4) b = 4;
    g_count[b]++;
}

static void write_all(Buf &b) {
    for (size_t i = 0; i < b.n; i += 4096) b.p[i] = (unsigned char)(b.tag + i / 4096);
    b.p[b.n - 1] = b.tag;
}
static void verify(const Buf &b) {
    for (size_t i = 0; i < b.n; i += 4096)
        if (b.p[i] != (unsigned char)(b.tag + i / 4096)) {
            fprintf(stderr, "faultprog: byte %zu of a %zu-byte buffer changed\n", i, b.n);
            exit(1);
        }
    CHECK(b.p[b.n - 1] == b.tag);
}

// Allocates n bytes one of several ways; NULL is allowed (counted), a
// signal is not. Keeps the buffer live.
static void *alloc_one(size_t n, int how, bool must) {
    void *p = nullptr;
    switch (how % 5) {
    case 0: p = malloc(n); break;
    case 1: p = calloc(1, n); if (p) CHECK(((unsigned char *)p)[n / 2] == 0 && ((unsigned char *)p)[n - 1] == 0); break;
    case 2: if (posix_memalign(&p, 64, n)) p = nullptr; break;
    case 3: p = aligned_alloc(size_t(2) << 20, n); break;
    case 4: {
        p = malloc(n / 4);
        if (!p) break;
        memset(p, 0x11, n / 4);
        void *q = realloc(p, n);
        if (!q) { free(p); p = nullptr; break; }
        for (size_t i = 0; i < n / 4; i += 4096) CHECK(((unsigned char *)q)[i] == 0x11);
        p = q;
        break;
    }
    }
    note(p);
    if (!p) {
        CHECK(!must);
        CHECK(errno == ENOMEM);
        return nullptr;
    }
    Buf b{(unsigned char *)p, n, (unsigned char)(g_live.size() * 7 + 1)};
    write_all(b);
    g_live.push_back(b);
    return p;
}

static void work(int rounds, bool must) {
    static const size_t sizes[] = {1 << 20, 3 << 20, 6 << 20, 17 << 20, 2 << 20, 40 << 20};
    for (int i = 0; i < rounds; i++) alloc_one(sizes[i % 6] + 4096 * (i % 3), i, must);
    // grow a few in place / by move
    for (size_t i = 0; i < g_live.size(); i += 3) {
        Buf &b = g_live[i];
        verify(b);
        void *q = realloc(b.p, b.n * 2);
        if (!q) { CHECK(!must); continue; }
        b.p = (unsigned char *)q;
        verify(b);
        b.n *= 2;
        write_all(b);
    }
}

static void free_all() {
    for (Buf &b : g_live) {
        verify(b);
        free(b.p);
    }
    g_live.clear();
}

static void report(const char *mode) {
    printf("faultprog %s: backings: disk=%ld memory=%ld anon=%ld small=%ld null=%ld\n", mode,
           g_count[1], g_count[2], g_count[3], g_count[0] + g_count[4], g_count[5]);
    fflush(stdout);
}

static std::string spill_dir() {
    const char *d = getenv("SPILLWAY_DIR");
    CHECK(d);
    return d;
}

int main(int argc, char **argv) {
    CHECK(argc >= 2);
    std::string mode = argv[1];
    g_backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    auto *active = (int (*)())dlsym(RTLD_DEFAULT, "spillway_is_active");
    if (mode == "work") {
        work(12, true);
        free_all();
    } else if (mode == "fill-live") {
        CHECK(argc >= 3);
        work(6, true); // live, reserved regions (written once)
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        static char chunk[1 << 16];
        memset(chunk, 0xee, sizeof chunk);
        long filled = 0;
        for (;;) {
            ssize_t w = write(fd, chunk, sizeof chunk);
            if (w <= 0) break;
            filled += w;
        }
        CHECK(errno == ENOSPC);
        fsync(fd);
        fprintf(stderr, "faultprog: filesystem filled with %ld more bytes\n", filled);
        // Every page of every live region, written again: all were reserved.
        for (Buf &b : g_live) { verify(b); b.tag ^= 0x40; write_all(b); verify(b); }
        work(6, true); // new allocations on the full filesystem: fallbacks
        free_all();
        close(fd);
        unlink(argv[2]);
        work(3, true); // space is back
        free_all();
    } else if (mode == "maxmap") {
        // Exhaust this process's mappings (vm.max_map_count) with 1-page
        // mappings of alternating protection (they cannot merge).
        std::vector<void *> fill;
        size_t page = 4096;
        for (;;) {
            void *p = mmap(nullptr, page, (fill.size() % 2) ? PROT_READ : PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) break;
            fill.push_back(p);
            if (fill.size() > 2000000) break;
        }
        CHECK(errno == ENOMEM);
        fprintf(stderr, "faultprog: %zu filler mappings until ENOMEM\n", fill.size());
        // A little room, so the program itself can still limp along.
        for (int i = 0; i < 16; i++) { munmap(fill.back(), page); fill.pop_back(); }
        for (int i = 0; i < 40; i++) alloc_one((1 << 20) + (i % 5) * (3 << 20), i, false);
        for (int i = 0; i < 200; i++) free(malloc(100 + i)); // small path keeps working
        report("maxmap(exhausted)");
        free_all();
        for (void *p : fill) munmap(p, page);
        fill.clear();
        work(6, true); // and recovers
        free_all();
    } else if (mode == "emfile") {
        work(2, true); // pool created while descriptors are available
        std::vector<int> fds;
        for (;;) {
            int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (fd < 0) break;
            fds.push_back(fd);
        }
        CHECK(errno == EMFILE);
        work(8, true); // dedicated files need a descriptor: fallback, logged
        report("emfile(exhausted)");
        free_all();
        for (int fd : fds) close(fd);
        work(4, true);
        free_all();
    } else if (mode == "rmdir" || mode == "readonly") {
        work(4, true);
        std::string dir = spill_dir();
        if (mode == "rmdir") CHECK(system(("rm -rf '" + dir + "'").c_str()) == 0);
        else CHECK(chmod(dir.c_str(), 0500) == 0);
        work(8, true); // new files cannot be created: fallback, logged
        free_all();
        if (mode == "readonly") chmod(dir.c_str(), 0700);
    } else if (mode == "config-gone") {
        const char *cfg = getenv("SPILLWAY_CONFIG");
        CHECK(cfg && active && active());
        work(2, true);
        CHECK(unlink(cfg) == 0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            // A fork child (no exec) keeps the parent's settings.
            work(2, true);
            free_all();
            pid_t gc = fork();
            if (gc == 0) { execl("/bin/echo", "echo", "exec-child-ran", (char *)nullptr); _exit(126); }
            int st = 0;
            waitpid(gc, &st, 0);
            fprintf(stderr, "faultprog: exec'ed child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
            _exit(0);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        free_all();
    } else {
        fprintf(stderr, "faultprog: unknown mode %s\n", mode.c_str());
        return 2;
    }
    report(mode.c_str());
    return 0;
}
