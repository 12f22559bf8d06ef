// fork_isolation.cpp — a fork child gets a private copy-on-write view of
// every spill and memfd region: its writes never reach the parent, it can
// free inherited regions without touching the parent's files, and it can
// make new regions of its own. Run with SPILLWAY_THRESHOLD=1MiB.
#include "check.h"
#include "spillway.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

static const size_t MiB = 1 << 20;

int main() {
    auto alloc = (void *(*)(size_t, unsigned))dlsym(RTLD_DEFAULT, "spillway_alloc");
    auto backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(alloc && backing);
    struct Case {
        unsigned flags;
        int expect;
        size_t size;
    } cases[] = {{SPILLWAY_PREFER_DISK, SPILLWAY_DISK, 8 * MiB},     // pool file
                 {SPILLWAY_PREFER_DISK, SPILLWAY_DISK, 300 * MiB},   // dedicated file
                 {SPILLWAY_PREFER_MEMORY, SPILLWAY_MEMORY, 8 * MiB}, // memfd pool
                 {0, SPILLWAY_ANON, 512 * 1024}};                    // see make()
    // An anonymous region: below the threshold (1 MiB here) with an
    // alignment mimalloc refuses (over 1 MiB), the shim makes one whatever
    // the policy. The others through spillway_alloc with their flags.
    auto make = [&](const Case &c, size_t size) {
        return (unsigned char *)(c.expect == SPILLWAY_ANON ? aligned_alloc(2 * MiB, size) : alloc(size, c.flags));
    };
    for (const Case &c : cases) {
        unsigned char *p = make(c, c.size);
        CHECK(p && backing(p) == c.expect);
        memset(p, 'P', c.size);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            // Child: sees the parent's bytes, writes its own, frees, allocates anew.
            if (p[0] != 'P' || p[c.size - 1] != 'P') _exit(10);
            memset(p, 'C', c.size);
            if (p[c.size / 2] != 'C') _exit(11);
            size_t mine_size = c.expect == SPILLWAY_ANON ? c.size : 4 * MiB;
            unsigned char *mine = make(c, mine_size);
            if (!mine || backing(mine) != c.expect) _exit(12);
            memset(mine, 'M', mine_size);
            free(p);
            free(mine);
            _exit(0);
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        for (size_t i = 0; i < c.size; i += 4096) CHECK(p[i] == 'P');
        CHECK(p[c.size - 1] == 'P');
        // The parent's region still works as before after the child freed its view.
        memset(p, 'Q', c.size);
        CHECK(p[c.size / 3] == 'Q');
        free(p);
    }
    puts("fork_isolation: ok");
    return 0;
}
