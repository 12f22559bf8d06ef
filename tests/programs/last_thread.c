/* last_thread.c — a process whose own threads have all ended exits, as
 * glibc makes it (exit(0) in the last thread), although spillway's
 * threads still run (shim/engine/os/background_thread.h,
 * exit_if_only_ours_left). Run by last_thread.sh under a timeout that
 * kills; every mode exits 0 or prints the failed check and exits 1.
 *
 *   last_thread main-exit     main makes a region, then pthread_exit
 *   last_thread main-waits    main calls pthread_exit while a thread of the
 *                             program still works 1.5 s: the process ends
 *                             after that thread, not before (it prints
 *                             "worker done" last)
 *   last_thread fork-thread   a thread forks; the child makes a region and
 *                             its one thread returns: the child exits 0
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define kBytes (64 << 20)

static void region(void) {
    char *p = malloc(kBytes);
    if (!p) {
        fputs("last_thread: FAIL: malloc returned NULL\n", stderr);
        exit(1);
    }
    memset(p, 1, kBytes);
    __asm__ volatile("" ::"r"(p) : "memory"); /* kept: the compiler may not drop it */
    free(p);
    usleep(300 * 1000); /* the shim's threads have started */
}

static void *worker(void *arg) {
    (void)arg;
    usleep(1500 * 1000);
    puts("worker done");
    fflush(stdout);
    return NULL;
}

static void *forker(void *arg) {
    (void)arg;
    pid_t pid = fork();
    if (pid < 0) {
        perror("last_thread: fork");
        exit(1);
    }
    if (pid == 0) {
        region();
        return NULL; /* the child's only thread ends here */
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "last_thread: FAIL: the child ended with status %#x, not exit 0\n", status);
        exit(1);
    }
    puts("child exited 0");
    fflush(stdout);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    pthread_t t;
    if (strcmp(mode, "main-exit") == 0) {
        region();
        puts("main: pthread_exit");
        fflush(stdout);
        pthread_exit(NULL);
    }
    if (strcmp(mode, "main-waits") == 0) {
        region();
        if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
        puts("main: pthread_exit");
        fflush(stdout);
        pthread_exit(NULL);
    }
    if (strcmp(mode, "fork-thread") == 0) {
        region(); /* the parent's threads run too */
        if (pthread_create(&t, NULL, forker, NULL) != 0) return 1;
        pthread_join(t, NULL);
        return 0;
    }
    fprintf(stderr, "usage: last_thread main-exit|main-waits|fork-thread\n");
    return 2;
}
