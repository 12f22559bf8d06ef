/* test-skeleton.c — spillway stand-in for glibc's legacy skeleton. Older
   tests #include "../test-skeleton.c"; with -I glibc_support/include that
   resolves to this file. They expect these headers to be already included. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <paths.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <support/check.h>
#include <support/support.h>
#include <support/temp_file.h>
#include <support/xsignal.h>
#include <support/test-driver.c>
