/* probe.h — proves nothing by itself: lets scenario programs ask the shim,
 * through dlsym (so the same binary runs without it), whether it is active
 * and where a pointer's bytes live, and read the container's memory usage
 * from its cgroup (v1 or v2). Header-only; one concern: observation. */
#ifndef SPILLWAY_INT_PROBE_H
#define SPILLWAY_INT_PROBE_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Backing names as in spillway.h (SPILLWAY_NONE..SPILLWAY_ANON). */
static inline const char *probe_backing_name(int b) {
    static const char *const names[] = {"none", "disk", "memory", "anon"};
    return (b >= 0 && b <= 3) ? names[b] : "?";
}

/* 1 when libspillway is preloaded and routing, 0 otherwise. */
static inline int probe_shim_active(void) {
    int (*fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "spillway_is_active");
    return fn ? fn() : 0;
}

/* The shim's backing for p (0 = none, also when the shim is absent). */
static inline int probe_backing(const void *p) {
    int (*fn)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    return fn ? fn(p) : 0;
}

/* Bytes the container's memory cgroup is charged right now (page cache
 * included), from cgroup v2 memory.current or v1 memory.usage_in_bytes;
 * -1 when neither file can be read. */
static inline long long probe_cgroup_usage(void) {
    static const char *const paths[] = {"/sys/fs/cgroup/memory.current",
                                        "/sys/fs/cgroup/memory/memory.usage_in_bytes"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "r");
        if (!f) continue;
        long long v = -1;
        int ok = fscanf(f, "%lld", &v) == 1;
        fclose(f);
        if (ok) return v;
    }
    return -1;
}

/* splitmix64: the deterministic pattern every writer uses, so a reader can
 * recompute what must be there without keeping a copy in memory. */
static inline unsigned long long probe_mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#endif
