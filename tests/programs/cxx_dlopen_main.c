/* cxx_dlopen_main.c — a C program (like python3) that dlopens a C++ library
 * under the shim: the library's large new[] and std::vector must be disk
 * regions (SPILLWAY_DISK = 1), and its operator new must be the shim's.
 * Usage: cxx_dlopen_main LIBRARY */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "check.h"


int main(int argc, char **argv) {
    CHECK(argc == 2);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) fprintf(stderr, "dlopen: %s\n", dlerror());
    CHECK(lib != NULL);
    int (*new_array)(void) = (int (*)(void))dlsym(lib, "cxx_new_array_backing");
    int (*vector)(void) = (int (*)(void))dlsym(lib, "cxx_vector_backing");
    void *(*new_address)(void) = (void *(*)(void))dlsym(lib, "cxx_operator_new_address");
    CHECK(new_array && vector && new_address);

    Dl_info info;
    CHECK(dladdr(new_address(), &info) && info.dli_fname);
    printf("operator new of the C++ library resolves to %s\n", info.dli_fname);
    CHECK(strstr(info.dli_fname, "libspillway") != NULL);

    int a = new_array(), v = vector();
    printf("backing of new char[256 MiB]: %d, of std::vector<float>(1 << 26): %d (1 = disk)\n", a, v);
    CHECK(a == 1);
    CHECK(v == 1);
    CHECK(dlclose(lib) == 0);
    return 0;
}
