/* support/test-driver.c — spillway stand-in for glibc's test driver: a
   test #includes it after defining do_test (and maybe TEST_FUNCTION,
   TEST_FUNCTION_ARGV or TIMEOUT); it supplies main. The work is done by
   support_run_test in ../../support.c. Driver hooks the chosen tests do not
   use are refused at compile time rather than silently ignored. */
#include "../harness.h"

#if defined PREPARE || defined CLEANUP_HANDLER || defined CMDLINE_PROCESS \
    || defined EXPECTED_SIGNAL || defined EXPECTED_STATUS
# error "spillway's glibc harness does not implement this driver hook"
#endif
#ifndef TIMEOUT
# define TIMEOUT DEFAULT_TIMEOUT
#endif

static int
spw_test_function (int argc, char **argv)
{
  (void) argc;
  (void) argv;
#if defined TEST_FUNCTION_ARGV
  return TEST_FUNCTION_ARGV (argc, argv);
#elif defined TEST_FUNCTION
  return TEST_FUNCTION;
#else
  return do_test ();
#endif
}

int
main (int argc, char **argv)
{
  return support_run_test (spw_test_function, argc, argv, TIMEOUT);
}
