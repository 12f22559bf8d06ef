/* fork_snapshot.c — a fork child must see its memory as it was at the fork,
 * whatever the parent does after: POSIX gives a child a copy of the
 * parent's address space. A KNOWN DEFECT of the shim (docs/limitations.md,
 * "fork"): the child maps the parent's spill file or memfd privately, so
 * it sees the parent's later writes to every page it has not written
 * itself, and zeros where the parent frees a region of a pool. meson runs
 * this with should_fail until that is fixed; the fix turns it into a pass.
 *
 *   fork_snapshot overwrite|free   exits 0 when the child saw the snapshot
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define kRegion (8u << 20)

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "overwrite") && strcmp(argv[1], "free"))) {
        fputs("usage: fork_snapshot overwrite|free\n", stderr);
        return 2;
    }
    int overwrite = strcmp(argv[1], "overwrite") == 0;
    unsigned char *volatile region = malloc(kRegion); /* volatile: the child reads memory, not what the compiler knows */
    if (!region) return 2;
    memset(region, 'A', kRegion);
    int go[2];
    if (pipe(go) != 0) return 2;
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        char byte;
        close(go[1]);
        if (read(go[0], &byte, 1) != 1) _exit(2); /* the parent has done its part */
        size_t changed = 0;
        for (size_t i = 0; i < kRegion; i++) changed += region[i] != 'A';
        printf("fork_snapshot %s: the child sees %zu of %u bytes changed by the parent after the fork\n", argv[1], changed,
               kRegion);
        fflush(stdout);
        _exit(changed ? 1 : 0);
    }
    close(go[0]);
    if (overwrite) {
        memset(region, 'P', kRegion);
    } else {
        free(region);
        unsigned char *next = malloc(kRegion); /* may reuse the freed range of the pool */
        if (next) memset(next, 'N', kRegion);
        usleep(300 * 1000); /* the reaper has punched the freed range */
    }
    if (write(go[1], "g", 1) != 1) return 2;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 2;
    return WEXITSTATUS(status);
}
