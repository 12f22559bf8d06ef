/* deepbind_main.c — memory crossing the boundary of a library opened with
 * RTLD_NOW | RTLD_DEEPBIND, in both directions, small and large: the library
 * mallocs and main frees, main mallocs and the library frees or reallocs.
 * Under a shim that let the flag through, the two sides use different
 * allocators and this crashes (SIGSEGV). The library is opened by its bare
 * name through this program's RUNPATH, so it also checks that the shim's
 * dlopen keeps the caller's identity; then again with dlmopen(LM_ID_BASE).
 * Usage: deepbind_main LIBRARY_SONAME */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"


static void cross(void *lib) {
    void *(*lib_malloc)(size_t) = (void *(*)(size_t))dlsym(lib, "lib_malloc");
    void *(*lib_realloc)(void *, size_t) = (void *(*)(void *, size_t))dlsym(lib, "lib_realloc");
    void (*lib_free)(void *) = (void (*)(void *))dlsym(lib, "lib_free");
    CHECK(lib_malloc && lib_realloc && lib_free);
    size_t sizes[] = {16, 4000, 200000, 3 << 20, 24 << 20};
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            size_t n = sizes[i];
            char *p = lib_malloc(n); /* the library allocates, main frees */
            CHECK(p && p[n - 1] == 0x11);
            free(p);
            p = malloc(n); /* main allocates, the library frees */
            CHECK(p);
            memset(p, 0x22, n);
            lib_free(p);
            p = malloc(n); /* main allocates, the library grows it, main frees */
            CHECK(p);
            p[0] = 0x33;
            p = lib_realloc(p, 2 * n);
            CHECK(p && p[0] == 0x33);
            free(p);
            p = lib_malloc(n); /* the library allocates, main grows it, the library frees */
            CHECK(p);
            p = realloc(p, n + 2000000);
            CHECK(p && p[n - 1] == 0x11);
            lib_free(p);
        }
    }
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
    if (!lib) fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
    CHECK(lib != NULL);
    cross(lib);
    CHECK(dlclose(lib) == 0);

    lib = dlmopen(LM_ID_BASE, argv[1], RTLD_NOW | RTLD_DEEPBIND);
    if (!lib) fprintf(stderr, "dlmopen(%s): %s\n", argv[1], dlerror());
    CHECK(lib != NULL);
    cross(lib);
    CHECK(dlclose(lib) == 0);
    printf("deepbind_main: memory crossed the RTLD_DEEPBIND boundary both ways, small and large\n");
    return 0;
}
