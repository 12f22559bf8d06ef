// without_cachestat.cpp — runs a command as on a kernel before Linux 6.5:
// cachestat(2) answers ENOSYS (a seccomp filter, which its children and
// whatever it execs inherit). top.sh runs a job under it to check the
// fallback a stock Debian 12 kernel (6.1) takes: no page cache figure in
// the live snapshot, and top saying it counts mapped pages only.
//
// Invariant: only cachestat is refused (number 451 on every architecture,
// shim/common/cachestat.h); every other call is allowed. Exits 125 when
// the filter cannot be installed (a test bug, not a skip).
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: without_cachestat COMMAND...\n");
        return 125;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 451, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        fprintf(stderr, "without_cachestat: cannot install the filter: %s\n", strerror(errno));
        return 125;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "without_cachestat: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
