// engine_calls.cpp — see engine_calls.h; and the exported spillway_*
// control API, each the engine's answer (engine_api.h) or, when no engine
// could be loaded, a shim's that is not routing.
#include "engine_calls.h"
#include "engine_loader.h"
#include "small_alloc.h"
#include "spill_dir_check.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace spillway {

namespace {

// Whether (dirfd, path) may name a file under /dev/shm: shm.cpp's test,
// without allocating.
bool may_be_shm(int dirfd, const char *path) {
    if (!path) return false;
    if (path[0] == '/') return strncmp(path, "/dev/shm/", 9) == 0;
    if (dirfd == AT_FDCWD || !fd_may_be_on_ram_filesystem(dirfd)) return false;
    char link[64], target[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) return false;
    target[n] = 0;
    return strncmp(target, "/dev/shm", 8) == 0 && (target[8] == '\0' || target[8] == '/');
}

} // namespace

// Without a routing engine mimalloc serves everything.
void *engine_allocate(size_t size, size_t align, bool zero) {
    // Above the floor but below the threshold derived now: the small path's.
    if (size < derive_threshold_if_pending() && align <= kSmallAlignMax) return small_alloc(size, align, zero);
    if (const EngineApi *e = engine_routing()) return e->large_allocate(size, align, zero);
    return small_alloc(size, align, zero);
}

// Only arena pointers get here, and only a routing engine makes them (a fork
// child left without one keeps its inherited regions mapped).
void engine_free(void *p) {
    if (const EngineApi *e = engine_if_routing()) e->large_free(p);
}

void *engine_realloc(void *p, size_t size) {
    if (const EngineApi *e = engine_if_routing()) return e->large_realloc(p, size);
    errno = ENOMEM;
    return nullptr;
}

size_t engine_usable_size(const void *p) {
    const EngineApi *e = engine_if_routing();
    return e ? e->large_usable_size(p) : 0;
}

int engine_shm_open(const char *path, int flags, mode_t mode, int dirfd) {
    const EngineApi *e = engine_if_routing();
    if (!e && may_be_shm(dirfd, path)) e = engine_routing();
    if (e) return e->shm_open_path(path, flags, mode, dirfd);
    return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

// A descriptor the engine tracks was opened after it started (above).
int engine_shm_resize(int fd, off_t size, bool truncate_call, int mode, off_t offset) {
    if (const EngineApi *e = engine_if_routing()) return e->shm_resize(fd, size, truncate_call, mode, offset);
    return truncate_call ? (int)syscall(SYS_ftruncate, fd, size)
                         : (int)syscall(SYS_fallocate, fd, mode, offset, size);
}

int engine_shm_unlink(const char *path, int dirfd, int flags) {
    const EngineApi *e = engine_if_routing();
    if (!e && !(flags & AT_REMOVEDIR) && may_be_shm(dirfd, path)) e = engine_routing();
    if (e) return e->shm_unlink_path(path, dirfd, flags);
    return (int)syscall(SYS_unlinkat, dirfd, path, flags);
}

} // namespace spillway

// --- The control API (spillway.h): the engine's answer, or a shim's that
// is not routing when no engine could be loaded. ---
#define SPW_CONTROL_STUB(ret, name, params, args, unavailable)                                 \
    extern "C" __attribute__((visibility("default"))) ret name params {                        \
        const spillway::EngineApi *e = spillway::engine_for_control();                         \
        if (!e) return unavailable;                                                            \
        return e->name args;                                                                   \
    }
SPW_CONTROL_API(SPW_CONTROL_STUB)
#undef SPW_CONTROL_STUB
