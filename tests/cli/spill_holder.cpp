// spill_holder.cpp — makes a real spill file for the cli tests: run under
// the shim, it allocates SIZE_MIB MiB (a disk region at the test's 1 MiB
// threshold), fills it, exports it with spillway_export, prints the path,
// then either keeps it mapped until stdin closes ("hold") or frees it and
// exits ("drop"), leaving the exported file in the spill directory with
// its pages still in the page cache.
//
// Invariant: the control API is found with dlsym, as aware code would;
// without the shim the program says so and exits 3 (a test bug, not a skip).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

using export_fn = int (*)(const void *, char *, size_t);
using backing_fn = int (*)(const void *);

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "hold") && strcmp(argv[1], "drop"))) {
        fprintf(stderr, "usage: spill_holder hold|drop SIZE_MIB\n");
        return 2;
    }
    auto spill_export = (export_fn)dlsym(RTLD_DEFAULT, "spillway_export");
    auto backing = (backing_fn)dlsym(RTLD_DEFAULT, "spillway_backing");
    if (!spill_export || !backing) {
        fprintf(stderr, "spill_holder: libspillway is not preloaded\n");
        return 3;
    }
    size_t size = (size_t)atol(argv[2]) << 20;
    char *p = (char *)malloc(size);
    if (!p) return 4;
    memset(p, 0x5a, size); // dirty every page: the release test must write them back
    char path[512];
    int rc = spill_export(p, path, sizeof path);
    if (rc != 0) {
        fprintf(stderr, "spill_holder: spillway_export failed: %s (backing %d)\n", strerror(-rc), backing(p));
        return 5;
    }
    printf("%s\n", path);
    fflush(stdout);
    if (strcmp(argv[1], "hold") == 0) {
        char c;
        while (read(0, &c, 1) > 0) {
        }
    }
    free(p);
    return 0;
}
