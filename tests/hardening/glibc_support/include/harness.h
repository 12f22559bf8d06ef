/* harness.h — spillway's own stand-in for the subset of glibc's internal
   test library (support/, libc-diag.h, array_length.h, malloc-size.h) that
   glibc's public-API malloc tests use, so those tests can be compiled from
   Debian's glibc-source against the installed libc and run under the shim
   (tests/hardening/glibc_malloc.sh). Written for spillway, not copied from
   glibc: only the behaviour the tests rely on is reproduced:
     - a failed check prints "error: FILE:LINE: ..." and is recorded in a
       counter shared across fork, so the test exits 1 even if do_test
       returns 0 (glibc's support_record_failure);
     - x* wrappers exit with status 1 on failure;
     - the driver runs do_test in a forked child under a timeout. */
#ifndef SPILLWAY_GLIBC_HARNESS_H
#define SPILLWAY_GLIBC_HARNESS_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

enum { EXIT_UNSUPPORTED = 77, DEFAULT_TIMEOUT = 20 };

/* Failure bookkeeping. */
void support_record_failure (void);
int support_record_failure_count (void);
__attribute__ ((noreturn, format (printf, 4, 5)))
void support_fail_exit (int status, const char *file, int line, const char *fmt, ...);
void support_verify_failed (const char *file, int line, const char *expr, int exit_now);
void support_compare_failed (const char *file, int line, const char *left, long long lval,
                             const char *right, long long rval, int exit_now);

#define FAIL_EXIT(status, ...) support_fail_exit (status, __FILE__, __LINE__, __VA_ARGS__)
#define FAIL_EXIT1(...) support_fail_exit (1, __FILE__, __LINE__, __VA_ARGS__)
#define FAIL_UNSUPPORTED(...) support_fail_exit (EXIT_UNSUPPORTED, __FILE__, __LINE__, __VA_ARGS__)
#define TEST_VERIFY(expr)                                             \
  ((expr) ? (void) 0 : support_verify_failed (__FILE__, __LINE__, #expr, 0))
#define TEST_VERIFY_EXIT(expr)                                        \
  ((expr) ? (void) 0 : support_verify_failed (__FILE__, __LINE__, #expr, 1))
/* Integers only (all the chosen tests compare sizes and statuses). */
#define TEST_COMPARE(left, right)                                     \
  do {                                                                \
    long long spw_l_ = (long long) (left), spw_r_ = (long long) (right); \
    if (spw_l_ != spw_r_)                                             \
      support_compare_failed (__FILE__, __LINE__, #left, spw_l_, #right, spw_r_, 0); \
  } while (0)

/* Allocation and process wrappers: exit 1 with a message on failure. */
void *xmalloc (size_t size);
void *xcalloc (size_t count, size_t size);
void *xrealloc (void *p, size_t size);
char *xstrdup (const char *s);
pid_t xfork (void);
int xopen (const char *path, int flags, mode_t mode);
void xclose (int fd);
void *xmmap (void *addr, size_t length, int prot, int flags, int fd);
void xmunmap (void *addr, size_t length);
long xsysconf (int name);
sighandler_t xsignal (int sig, sighandler_t handler);
void write_message (const char *message);
/* Memory shared with forked children (MAP_SHARED | MAP_ANONYMOUS). */
void *support_shared_allocate (size_t size);
void support_shared_free (void *p);
/* mkstemp in $TMPDIR (or /tmp); *name (if asked for) is malloc'ed and
   belongs to the caller; the file is removed when the test ends. */
int create_temp_file (const char *base, char **name);

pthread_t xpthread_create (pthread_attr_t *attr, void *(*fn) (void *), void *arg);
void *xpthread_join (pthread_t thr);
void xpthread_barrier_init (pthread_barrier_t *b, pthread_barrierattr_t *attr, unsigned count);
int xpthread_barrier_wait (pthread_barrier_t *b);
void xpthread_barrier_destroy (pthread_barrier_t *b);
void xpthread_barrierattr_init (pthread_barrierattr_t *a);
void xpthread_barrierattr_setpshared (pthread_barrierattr_t *a, int pshared);
void xpthread_barrierattr_destroy (pthread_barrierattr_t *a);
void xpthread_kill (pthread_t thr, int sig);

/* Driver entry (support.c): runs test(argc, argv) in a forked child with
   a timeout of timeout_s * $TIMEOUTFACTOR seconds and returns the exit
   status the test program should have. */
int support_run_test (int (*test) (int, char **), int argc, char **argv, int timeout_s);

#endif
