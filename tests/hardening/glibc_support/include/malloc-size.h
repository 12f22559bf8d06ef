/* malloc-size.h — spillway stand-in. glibc's value is its chunk alignment;
   the promise any malloc must keep (C11 7.22.3) is alignof(max_align_t),
   16 on x86-64 as in glibc, and that is what the shim is held to. */
#ifndef SPILLWAY_MALLOC_SIZE_H
#define SPILLWAY_MALLOC_SIZE_H
#include <stddef.h>
#define MALLOC_ALIGNMENT _Alignof (max_align_t)
#define MALLOC_ALIGN_MASK (MALLOC_ALIGNMENT - 1)
#endif
