// check.h — a tiny assertion for programs that run under the shim: prints
// the failed condition with file and line and exits 1 (no test framework,
// so the program's own allocations are exactly what it shows). C and C++.
#pragma once
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)
