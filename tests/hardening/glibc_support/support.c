/* support.c — the functions declared in include/harness.h: spillway's own
   small replacement for the part of glibc's support/ library that glibc's
   public-API malloc tests call. Linked into every test program built by
   tests/hardening/glibc_malloc.sh. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* --- failures: counted in memory shared with every forked descendant --- */

static volatile int *failure_count;

static void
ensure_failure_counter (void)
{
  if (failure_count != NULL)
    return;
  void *p = mmap (NULL, sizeof (int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    {
      printf ("error: harness: cannot map the failure counter: %m\n");
      exit (1);
    }
  failure_count = p;
}

void
support_record_failure (void)
{
  ensure_failure_counter ();
  __atomic_add_fetch (failure_count, 1, __ATOMIC_RELAXED);
}

int
support_record_failure_count (void)
{
  return failure_count ? __atomic_load_n (failure_count, __ATOMIC_RELAXED) : 0;
}

void
support_fail_exit (int status, const char *file, int line, const char *fmt, ...)
{
  int saved = errno; /* the message may use %m */
  if (status != EXIT_UNSUPPORTED)
    support_record_failure ();
  printf ("%s: %s:%d: ", status == EXIT_UNSUPPORTED ? "warning" : "error", file, line);
  va_list ap;
  va_start (ap, fmt);
  errno = saved;
  vprintf (fmt, ap);
  va_end (ap);
  putchar ('\n');
  exit (status);
}

void
support_verify_failed (const char *file, int line, const char *expr, int exit_now)
{
  support_record_failure ();
  printf ("error: %s:%d: not true: %s\n", file, line, expr);
  if (exit_now)
    exit (1);
}

void
support_compare_failed (const char *file, int line, const char *left, long long lval,
                        const char *right, long long rval, int exit_now)
{
  support_record_failure ();
  printf ("error: %s:%d: numeric comparison failure\n"
          "   left: %lld (0x%llx); from: %s\n  right: %lld (0x%llx); from: %s\n",
          file, line, lval, (unsigned long long) lval, left, rval, (unsigned long long) rval, right);
  if (exit_now)
    exit (1);
}

/* --- x* wrappers --- */

void *
xmalloc (size_t size)
{
  void *p = malloc (size);
  if (p == NULL && size != 0)
    FAIL_EXIT1 ("malloc (%zu): %m", size);
  return p;
}

void *
xcalloc (size_t count, size_t size)
{
  void *p = calloc (count, size);
  if (p == NULL && count != 0 && size != 0)
    FAIL_EXIT1 ("calloc (%zu, %zu): %m", count, size);
  return p;
}

void *
xrealloc (void *old, size_t size)
{
  void *p = realloc (old, size);
  if (p == NULL && size != 0)
    FAIL_EXIT1 ("realloc (%p, %zu): %m", old, size);
  return p;
}

char *
xstrdup (const char *s)
{
  char *p = strdup (s);
  if (p == NULL)
    FAIL_EXIT1 ("strdup: %m");
  return p;
}

pid_t
xfork (void)
{
  pid_t pid = fork ();
  if (pid < 0)
    FAIL_EXIT1 ("fork: %m");
  return pid;
}

int
xopen (const char *path, int flags, mode_t mode)
{
  int fd = open (path, flags, mode);
  if (fd < 0)
    FAIL_EXIT1 ("open (\"%s\", 0x%x, 0%o): %m", path, flags, (unsigned) mode);
  return fd;
}

void
xclose (int fd)
{
  if (close (fd) != 0 && errno != EINTR)
    FAIL_EXIT1 ("close (%d): %m", fd);
}

void *
xmmap (void *addr, size_t length, int prot, int flags, int fd)
{
  void *p = mmap (addr, length, prot, flags, fd, 0);
  if (p == MAP_FAILED)
    FAIL_EXIT1 ("mmap (%p, %zu, 0x%x, 0x%x, %d): %m", addr, length, prot, flags, fd);
  return p;
}

void
xmunmap (void *addr, size_t length)
{
  if (munmap (addr, length) != 0)
    FAIL_EXIT1 ("munmap (%p, %zu): %m", addr, length);
}

long
xsysconf (int name)
{
  errno = 0;
  long v = sysconf (name);
  if (v == -1 && errno != 0)
    FAIL_EXIT1 ("sysconf (%d): %m", name);
  return v;
}

sighandler_t
xsignal (int sig, sighandler_t handler)
{
  sighandler_t old = signal (sig, handler);
  if (old == SIG_ERR)
    FAIL_EXIT1 ("signal (%d): %m", sig);
  return old;
}

void
write_message (const char *message)
{
  int saved = errno;
  size_t len = strlen (message);
  while (len > 0)
    {
      ssize_t n = write (STDOUT_FILENO, message, len);
      if (n <= 0)
        break;
      message += n;
      len -= (size_t) n;
    }
  errno = saved;
}

void *
support_shared_allocate (size_t size)
{
  /* A size header in front, so support_shared_free knows what to unmap. */
  size_t total = size + 64;
  char *p = mmap (NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    FAIL_EXIT1 ("shared mmap (%zu): %m", total);
  *(size_t *) p = total;
  return p + 64;
}

void
support_shared_free (void *p)
{
  char *base = (char *) p - 64;
  xmunmap (base, *(size_t *) base);
}

/* --- temporary files: removed at exit by the process that made them --- */

enum { max_temp_files = 16 };
static char temp_paths[max_temp_files][4096]; /* static: no malloc of ours to track */
static int temp_count;
static pid_t temp_owner;

static void
remove_temp_files (void)
{
  if (getpid () != temp_owner)
    return; /* a forked child exiting: the files are not its to remove */
  for (int i = 0; i < temp_count; ++i)
    unlink (temp_paths[i]);
}

int
create_temp_file (const char *base, char **name)
{
  const char *dir = getenv ("TMPDIR");
  if (dir == NULL || *dir == '\0')
    dir = "/tmp";
  if (temp_count == max_temp_files)
    FAIL_EXIT1 ("harness: more than %d temporary files", max_temp_files);
  char *path = temp_paths[temp_count];
  if (snprintf (path, sizeof temp_paths[0], "%s/%sXXXXXX", dir, base) >= (int) sizeof temp_paths[0])
    FAIL_EXIT1 ("harness: temporary file name too long");
  int fd = mkstemp (path);
  if (fd < 0)
    {
      printf ("error: mkstemp (\"%s\"): %m\n", path);
      return -1;
    }
  if (temp_owner != getpid ())
    {
      temp_owner = getpid ();
      atexit (remove_temp_files);
    }
  ++temp_count;
  if (name != NULL)
    *name = xstrdup (path);
  return fd;
}

/* --- pthread wrappers: a nonzero result is the error number --- */

static void
check_pthread (int ret, const char *what)
{
  if (ret != 0)
    {
      errno = ret;
      FAIL_EXIT1 ("%s: %m", what);
    }
}

pthread_t
xpthread_create (pthread_attr_t *attr, void *(*fn) (void *), void *arg)
{
  pthread_t thr;
  check_pthread (pthread_create (&thr, attr, fn, arg), "pthread_create");
  return thr;
}

void *
xpthread_join (pthread_t thr)
{
  void *result;
  check_pthread (pthread_join (thr, &result), "pthread_join");
  return result;
}

void
xpthread_barrier_init (pthread_barrier_t *b, pthread_barrierattr_t *attr, unsigned count)
{
  check_pthread (pthread_barrier_init (b, attr, count), "pthread_barrier_init");
}

int
xpthread_barrier_wait (pthread_barrier_t *b)
{
  int ret = pthread_barrier_wait (b);
  if (ret != PTHREAD_BARRIER_SERIAL_THREAD)
    check_pthread (ret, "pthread_barrier_wait");
  return ret;
}

void
xpthread_barrier_destroy (pthread_barrier_t *b)
{
  check_pthread (pthread_barrier_destroy (b), "pthread_barrier_destroy");
}

void
xpthread_barrierattr_init (pthread_barrierattr_t *a)
{
  check_pthread (pthread_barrierattr_init (a), "pthread_barrierattr_init");
}

void
xpthread_barrierattr_setpshared (pthread_barrierattr_t *a, int pshared)
{
  check_pthread (pthread_barrierattr_setpshared (a, pshared), "pthread_barrierattr_setpshared");
}

void
xpthread_barrierattr_destroy (pthread_barrierattr_t *a)
{
  check_pthread (pthread_barrierattr_destroy (a), "pthread_barrierattr_destroy");
}

void
xpthread_kill (pthread_t thr, int sig)
{
  check_pthread (pthread_kill (thr, sig), "pthread_kill");
}

/* --- the driver --- */

static volatile sig_atomic_t timed_out;

static void
on_alarm (int sig)
{
  (void) sig;
  timed_out = 1;
}

int
support_run_test (int (*test) (int, char **), int argc, char **argv, int timeout_s)
{
  /* Unbuffered, as in glibc's driver: the tests fork, and a buffered line
     would be printed once per child. */
  setvbuf (stdout, NULL, _IONBF, 0);
  ensure_failure_counter ();
  const char *factor_env = getenv ("TIMEOUTFACTOR");
  long factor = factor_env ? strtol (factor_env, NULL, 10) : 1;
  if (factor < 1)
    factor = 1;

  pid_t child = fork ();
  if (child < 0)
    {
      printf ("error: harness: cannot fork the test: %m\n");
      return 1;
    }
  if (child == 0)
    {
      /* Its own process group, so a timeout kills the helpers it forks. */
      setpgid (0, 0);
      struct rlimit no_core = { 0, 0 };
      setrlimit (RLIMIT_CORE, &no_core);
      exit (test (argc, argv));
    }

  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid must return EINTR */
  sigaction (SIGALRM, &sa, NULL);
  alarm ((unsigned) (timeout_s * factor));
  int status;
  pid_t got;
  while ((got = waitpid (child, &status, 0)) < 0 && errno == EINTR && !timed_out)
    ;
  if (got < 0)
    {
      printf ("error: harness: test timed out after %ld s; killed\n", timeout_s * factor);
      kill (-child, SIGKILL);
      kill (child, SIGKILL);
      waitpid (child, &status, 0);
      return 1;
    }
  alarm (0);
  kill (-child, SIGKILL); /* helpers the test forked and left behind */

  int result;
  if (WIFEXITED (status))
    result = WEXITSTATUS (status);
  else if (WIFSIGNALED (status))
    {
      printf ("error: harness: test killed by signal %d (%s)\n", WTERMSIG (status),
              strsignal (WTERMSIG (status)));
      result = 1;
    }
  else
    result = 1;
  int failures = support_record_failure_count ();
  if (failures > 0)
    {
      printf ("error: %d test failure%s\n", failures, failures == 1 ? "" : "s");
      if (result == 0 || result == EXIT_UNSUPPORTED)
        result = 1;
    }
  return result;
}
