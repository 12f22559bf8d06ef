/* closed_fds.c — a program that closes every descriptor it did not open
 * (close_range(3, ~0U), as daemons clean up) and then opens files of its
 * own: the shim's spill files, spill directory, pagemap reader and
 * libunwind's pipe had those low numbers, and the shim then punched holes
 * in the program's files, mapped them as regions and wrote memory bytes
 * into them (shim/common/fd_policy.h). Run by closed_fds.sh; exits 0, or
 * prints what was wrong and exits 1.
 *
 * Second round (x86-64): libunwind checks memory through its pipe when it
 * walks a frame without unwind information (here an assembly trampoline) in
 * a thread's first walk. After the clean-up the shim's next descriptor took
 * the pipe's old number, and libunwind read its bytes from that file; after
 * another, finding nothing there, it made a new pipe at the lowest free
 * numbers (3 and 4 here), which the program's next clean-up gives to its
 * files: libunwind's code would then read a byte of one and, the read
 * having succeeded, write a byte of memory into the other.
 * Now the pipe's two numbers are kept for it (shim/common/fd_policy.h), and
 * every pipe libunwind makes lands on them (front/unwind_pipe.cpp).
 *
 *   closed_fds DIR   writes its files in DIR
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define kFiles 24
#define kFileBytes (4 << 20)
#define kRegion (16 << 20)

/* A large allocation at a new call site each time (the shim names it with
 * libunwind), filled and freed (the reaper gives its pages back). */
__attribute__((noinline)) static void region(int v) {
    unsigned char *p = malloc(kRegion);
    if (!p) {
        fputs("closed_fds: FAIL: malloc returned NULL\n", stderr);
        exit(1);
    }
    memset(p, v, kRegion);
    __asm__ volatile("" ::"r"(p) : "memory");
    free(p);
}
#define TEN(x) x x x x x x x x x x

#if defined(__x86_64__)
/* Calls fn(v) from a frame that has no unwind information. */
void no_cfi_call(void (*fn)(int), int v);
__asm__(".text\n.globl no_cfi_call\n.hidden no_cfi_call\n.type no_cfi_call, @function\nno_cfi_call:\n"
        "    push %rbp\n    mov %rsp, %rbp\n    mov %rdi, %rax\n    mov %esi, %edi\n    call *%rax\n"
        "    pop %rbp\n    ret\n.size no_cfi_call, .-no_cfi_call\n");
static void *region_behind_no_cfi(void *v) {
    no_cfi_call(region, (int)(intptr_t)v);
    return NULL;
}
/* A region made by a new thread (its first walk), behind the trampoline. */
static void region_in_new_thread(int v) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, region_behind_no_cfi, (void *)(intptr_t)v) != 0) {
        fputs("closed_fds: FAIL: pthread_create\n", stderr);
        exit(1);
    }
    pthread_join(thread, NULL);
}
#endif

static void close_from_3(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
    for (int fd = 3; fd < 4096; fd++) close(fd);
}

static unsigned char pattern[kFileBytes], back[kFileBytes];

/* Opens kFiles files named ROUND-NN in dir, each filled with its letter. */
static void open_files(const char *dir, int round, int *fds) {
    for (int i = 0; i < kFiles; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/round%d-file%02d", dir, round, i);
        fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fds[i] < 0) {
            fprintf(stderr, "closed_fds: FAIL: open %s: %s\n", path, strerror(errno));
            exit(1);
        }
        memset(pattern, 'a' + i, sizeof pattern);
        if (write(fds[i], pattern, sizeof pattern) != (ssize_t)sizeof pattern) {
            fprintf(stderr, "closed_fds: FAIL: write %s: %s\n", path, strerror(errno));
            exit(1);
        }
    }
}

/* Returns 0 when every file still holds its letter and nothing more. */
static int files_intact(int round, const int *fds) {
    int bad = 0;
    for (int i = 0; i < kFiles; i++) {
        ssize_t n = pread(fds[i], back, sizeof back, 0);
        long wrong = 0;
        for (ssize_t j = 0; j < n; j++) wrong += back[j] != 'a' + i;
        off_t size = lseek(fds[i], 0, SEEK_END);
        if (n != (ssize_t)sizeof back || wrong || size != kFileBytes) {
            fprintf(stderr, "closed_fds: FAIL: round %d, the program's file %d (descriptor %d): read %zd bytes, %ld wrong, size %lld\n",
                    round, i, fds[i], n, wrong, (long long)size);
            bad = 1;
        }
    }
    if (!bad) printf("closed_fds: round %d: %d files on descriptors %d-%d intact\n", round, kFiles, fds[0], fds[kFiles - 1]);
    return bad;
}

/* Returns 0 when no pipe sits on a descriptor from 3 to 511: the program
 * makes none, so one there is libunwind's, made low. */
static int no_low_pipe(int round) {
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return 0;
    int bad = 0;
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        int fd = atoi(entry->d_name);
        if (fd < 3 || fd >= 512 || fd == dirfd(dir)) continue;
        char path[64], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0 && (target[n] = 0, strncmp(target, "pipe:", 5) == 0)) {
            fprintf(stderr, "closed_fds: FAIL: round %d: a pipe the program did not make sits on descriptor %d (%s)\n", round, fd, target);
            bad = 1;
        }
    }
    closedir(dir);
    return bad;
}

/* Returns 0 when the two numbers kept for libunwind's pipe (512 and 513
 * with a soft descriptor limit of 1024 or more) hold one pipe: after a
 * clean-up the shim's own files must not take them, or libunwind reads its
 * bytes from one of those files and keeps it. */
static int unwind_pipe_high(int round) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur < 1024) return 0;
    char targets[2][256];
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", 512 + i);
        ssize_t n = readlink(path, targets[i], sizeof targets[i] - 1);
        targets[i][n > 0 ? n : 0] = 0;
    }
    if (strncmp(targets[0], "pipe:", 5) != 0 || strcmp(targets[0], targets[1]) != 0) {
        fprintf(stderr, "closed_fds: FAIL: round %d: descriptors 512 and 513 are \"%s\" and \"%s\", not libunwind's pipe\n",
                round, targets[0], targets[1]);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fputs("usage: closed_fds DIR\n", stderr);
        return 2;
    }
    TEN(region(1);)
    usleep(300 * 1000); /* the shim's threads and descriptors are all there */
    close_from_3();
    int fds[kFiles];
    open_files(argv[1], 1, fds);
    TEN(region(2);) /* new call sites: libunwind checks memory through its pipe */
    TEN(region(3);)
    usleep(1500 * 1000); /* the reaper has given the regions back */
    int bad = files_intact(1, fds);
#if defined(__x86_64__)
    close_from_3();
    region_in_new_thread(4); /* libunwind finds its pipe closed and makes another */
    bad |= no_low_pipe(2) | unwind_pipe_high(2);
    close_from_3();
    open_files(argv[1], 2, fds);
    region_in_new_thread(5); /* ... and checks memory through it, a byte read and one written */
    usleep(1500 * 1000);
    bad |= files_intact(2, fds);
#endif
    return bad;
}
