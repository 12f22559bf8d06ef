/* seccomp_fail.c — runs a command with chosen system calls failing, at the
 * system-call level (libspillway calls fallocate through its own interposed
 * wrapper and the raw syscall, so an LD_PRELOAD fault library cannot reach
 * its reservations; a seccomp filter can).
 *
 *   seccomp_fail RULE... -- COMMAND ARGS...
 *   RULE: reserve=ERRNO   fallocate(fd, mode 0, ...) fails (reservation;
 *                         punching holes, mode != 0, still works)
 *         tmpfile=ERRNO   openat(..., O_TMPFILE ...) fails
 *         memfd=ERRNO     memfd_create fails
 *         mremap=ERRNO    mremap fails
 *         mapshared=ERRNO mmap(..., MAP_SHARED ...) fails
 *         getrandom=ERRNO getrandom fails
 *         userfaultfd=ERRNO userfaultfd fails (a container's default profile)
 *         userfaultfd-kernel=ERRNO userfaultfd fails unless it asks for
 *                         UFFD_USER_MODE_ONLY (vm.unprivileged_userfaultfd=0
 *                         without CAP_SYS_PTRACE)
 *   ERRNO: a number or one of ENOSPC EDQUOT EIO ENOMEM EMFILE EROFS EACCES
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int parse_errno(const char *s) {
    static const struct { const char *n; int v; } names[] = {
        {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EIO", EIO}, {"ENOMEM", ENOMEM},
        {"EMFILE", EMFILE}, {"EROFS", EROFS}, {"EACCES", EACCES}, {"EPERM", EPERM}, {"ENOSYS", ENOSYS}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].n)) return names[i].v;
    return atoi(s);
}

#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
static struct sock_filter prog[256];
static int len = 0;
static void emit(struct sock_filter f) { prog[len++] = f; }

/* if (nr == NR && (arg[a] & mask) op) return ERRNO(err); mask==0: unconditional */
static void rule(int nr, int arg, unsigned mask, int want_zero, int err) {
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
    if (!mask) {
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
        emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)));
        return;
    }
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 3));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)));
    if (want_zero) /* (arg & mask) == 0 */
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0));
    else
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)));
}

int main(int argc, char **argv) {
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) { fprintf(stderr, "seccomp_fail: bad rule %s\n", argv[i]); return 2; }
        *eq = 0;
        int err = parse_errno(eq + 1);
        if (!strcmp(argv[i], "reserve")) rule(SYS_fallocate, 1, 0xffffffffu, 1, err);
        else if (!strcmp(argv[i], "tmpfile")) rule(SYS_openat, 2, 020000000u /* __O_TMPFILE */, 0, err);
        else if (!strcmp(argv[i], "memfd")) rule(SYS_memfd_create, 0, 0, 0, err);
        else if (!strcmp(argv[i], "mremap")) rule(SYS_mremap, 0, 0, 0, err);
        else if (!strcmp(argv[i], "getrandom")) rule(SYS_getrandom, 0, 0, 0, err);
        else if (!strcmp(argv[i], "userfaultfd")) rule(SYS_userfaultfd, 0, 0, 0, err);
        else if (!strcmp(argv[i], "userfaultfd-kernel")) rule(SYS_userfaultfd, 0, 1 /* UFFD_USER_MODE_ONLY */, 1, err);
        else if (!strcmp(argv[i], "mapshared")) rule(SYS_mmap, 3, MAP_SHARED, 0, err);
        else { fprintf(stderr, "seccomp_fail: unknown rule %s\n", argv[i]); return 2; }
    }
    if (i + 1 >= argc) { fprintf(stderr, "usage: seccomp_fail RULE... -- COMMAND...\n"); return 2; }
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    struct sock_fprog fp = {.len = (unsigned short)len, .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp)) {
        perror("seccomp_fail: installing the filter");
        return 2;
    }
    execvp(argv[i + 1], argv + i + 1);
    perror("seccomp_fail: exec");
    return 127;
}
