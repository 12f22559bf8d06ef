// many_regions.cpp — ten thousand live spill regions at once cost a handful
// of descriptors (pool files), not one each, and all keep their bytes.
// Run with SPILLWAY_THRESHOLD=1MiB and a disk SPILLWAY_DIR.
#include "check.h"
#include "spillway.h"

#include <dirent.h>
#include <dlfcn.h>
#include <vector>

static size_t open_fds() {
    size_t n = 0;
    if (DIR *d = opendir("/proc/self/fd")) {
        while (struct dirent *e = readdir(d))
            if (e->d_name[0] != '.') n++;
        closedir(d);
    }
    return n;
}

int main() {
    auto backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(backing);
    const size_t count = 10000, size = (1 << 20) + 4096;
    std::vector<unsigned char *> regions(count);
    for (size_t i = 0; i < count; i++) {
        regions[i] = (unsigned char *)malloc(size);
        CHECK(regions[i]);
        regions[i][0] = (unsigned char)i;
        regions[i][size - 1] = (unsigned char)(i >> 8);
    }
    CHECK(backing(regions[0]) == SPILLWAY_DISK);
    CHECK(backing(regions[count - 1]) == SPILLWAY_DISK);
    CHECK(open_fds() < 16);
    for (size_t i = 0; i < count; i++) {
        CHECK(regions[i][0] == (unsigned char)i);
        CHECK(regions[i][size - 1] == (unsigned char)(i >> 8));
        free(regions[i]);
    }
    printf("many_regions: ok (%zu live regions, %zu descriptors open)\n", count, open_fds());
    return 0;
}
