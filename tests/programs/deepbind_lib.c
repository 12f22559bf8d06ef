/* deepbind_lib.c — a library the test opens with RTLD_DEEPBIND: its malloc
 * and free are whatever its own lookup scope finds first (glibc's, unless
 * the shim clears the flag). */
#include <stdlib.h>
#include <string.h>

__attribute__((visibility("default"))) void *lib_malloc(size_t size) {
    char *p = malloc(size);
    if (p) memset(p, 0x11, size);
    return p;
}

__attribute__((visibility("default"))) void *lib_realloc(void *p, size_t size) { return realloc(p, size); }

__attribute__((visibility("default"))) void lib_free(void *p) { free(p); }
