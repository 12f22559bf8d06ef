/* libc-diag.h — spillway stand-in for glibc's internal warning-control
   macros (the version argument is ignored: our compiler is known). */
#ifndef SPILLWAY_LIBC_DIAG_H
#define SPILLWAY_LIBC_DIAG_H
#define SPW_DIAG_STR(x) #x
#define DIAG_PUSH_NEEDS_COMMENT _Pragma ("GCC diagnostic push")
#define DIAG_POP_NEEDS_COMMENT _Pragma ("GCC diagnostic pop")
#define DIAG_IGNORE_NEEDS_COMMENT(version, option) \
  _Pragma (SPW_DIAG_STR (GCC diagnostic ignored option))
#endif
