// preload.cpp — the whole interposition surface, in one readable place:
// the malloc family (with the other names libmimalloc.so.2 exports for it),
// then the calls that create and size /dev/shm segments. Siblings:
// cxx_new.cpp (operator new/delete) and dlopen_guard.cpp (RTLD_DEEPBIND).
//
// Every entry point starts with the size check: below the threshold it is
// a direct call into mimalloc and nothing else (no lock, no TLS, no call-site
// work). Ownership of a pointer is one comparison (arena::owns,
// front_state.h). Large requests go to the engine (engine_calls.h). Before
// start-up has finished the threshold is SIZE_MAX (or the default, while
// the engine waits for its first use), so nothing can recurse.
// Without this, glibc's headers rename ftruncate to ftruncate64 (and so on)
// and both could not be defined here; on 64-bit Linux they are the same call.
#undef _FILE_OFFSET_BITS

#include "engine_calls.h"
#include "front_state.h"
#include "small_alloc.h"
#include "surface.h"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <fcntl.h>
#include <cstdint>
#include <cstring>
#include <mimalloc.h>
#include <unistd.h>

#define SPW_EXPORT extern "C" __attribute__((visibility("default")))
#define SPW_LIKELY(x) __builtin_expect(!!(x), 1)

using namespace spillway;

namespace spillway {

void *alloc_aligned(size_t align, size_t size) {
    if (align < kMinAlign) align = kMinAlign; // as glibc: never less than malloc's
    if (SPW_LIKELY(size < g_large_threshold && align <= kSmallAlignMax))
        return mi_malloc_aligned(aligned_request(size), align); // mimalloc's fast path
    return engine_allocate(size, align, false);
}

} // namespace spillway

namespace {

bool is_power_of_two(size_t x) { return x && !(x & (x - 1)); }

// Not a function-local static: its guard would need libstdc++ (engine_api.h).
// Racing first calls store the same value.
std::atomic<size_t> g_page{0};
size_t page_size() {
    size_t page = g_page.load(std::memory_order_relaxed);
    if (!page) g_page.store(page = (size_t)sysconf(_SC_PAGESIZE), std::memory_order_relaxed);
    return page;
}

} // namespace

SPW_EXPORT void *malloc(size_t size) {
    if (SPW_LIKELY(size < g_large_threshold)) return mi_malloc(aligned_request(size));
    return engine_allocate(size, 0, false);
}

SPW_EXPORT void free(void *p) {
    int saved = errno; // glibc promises free() keeps errno; so do we
    if (SPW_LIKELY(!arena::owns(p))) mi_free(p);
    else engine_free(p);
    errno = saved;
}

SPW_EXPORT void cfree(void *p) { free(p); }

SPW_EXPORT void *calloc(size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return nullptr;
    }
    if (SPW_LIKELY(total < g_large_threshold)) return mi_zalloc(aligned_request(total));
    return engine_allocate(total, 0, true);
}

SPW_EXPORT void *realloc(void *p, size_t size) {
    if (!p) return malloc(size);
    if (size == 0) { // glibc: free and return NULL
        free(p);
        return nullptr;
    }
    if (arena::owns(p)) return engine_realloc(p, size);
    if (SPW_LIKELY(size < g_large_threshold)) return mi_realloc(p, aligned_request(size));
    void *q = engine_allocate(size, 0, false);
    if (!q) return nullptr; // p is left untouched, as realloc requires
    size_t old = mi_usable_size(p);
    memcpy(q, p, old < size ? old : size);
    mi_free(p);
    return q;
}

SPW_EXPORT void *reallocarray(void *p, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return nullptr;
    }
    return realloc(p, total);
}

SPW_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
    if (!is_power_of_two(align) || align % sizeof(void *) != 0) return EINVAL;
    // errno: untouched on success; ENOMEM on failure, as glibc leaves it
    // (its own tst-malloc-thread-fail checks errno after a failed call).
    int saved = errno;
    void *p = alloc_aligned(align, size);
    if (!p) {
        errno = ENOMEM;
        return ENOMEM;
    }
    errno = saved;
    *out = p;
    return 0;
}

SPW_EXPORT void *aligned_alloc(size_t align, size_t size) {
    if (!is_power_of_two(align)) {
        errno = EINVAL;
        return nullptr;
    }
    return alloc_aligned(align, size);
}

SPW_EXPORT void *memalign(size_t align, size_t size) {
    if (align < sizeof(void *)) align = sizeof(void *);
    if (!is_power_of_two(align)) { // glibc rounds a bad alignment up
        if (align > (SIZE_MAX >> 1) + 1) {
            errno = EINVAL;
            return nullptr;
        }
        align = size_t(1) << (64 - __builtin_clzll(align));
    }
    return alloc_aligned(align, size);
}

SPW_EXPORT void *valloc(size_t size) { return alloc_aligned(page_size(), size); }

SPW_EXPORT void *pvalloc(size_t size) {
    size_t page = page_size();
    size_t rounded = (size + page - 1) & ~(page - 1);
    if (rounded < size) {
        errno = ENOMEM;
        return nullptr;
    }
    return alloc_aligned(page, rounded ? rounded : page);
}

SPW_EXPORT size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    if (arena::owns(p)) return engine_usable_size(p);
    return mi_usable_size(p);
}

// --- The other names libmimalloc.so.2 exports for the same family ---
// We depend on libmimalloc.so.2, so it is in every process we are in. Any
// allocator name it exports and we do not would bind to it and hand out
// memory that bypasses the threshold (tests/programs/binding_audit.sh
// checks that nothing binds there). glibc's __libc_* aliases come first.

SPW_EXPORT void *__libc_malloc(size_t size) { return malloc(size); }
SPW_EXPORT void *__libc_calloc(size_t count, size_t size) { return calloc(count, size); }
SPW_EXPORT void *__libc_realloc(void *p, size_t size) { return realloc(p, size); }
SPW_EXPORT void __libc_free(void *p) { free(p); }
SPW_EXPORT void __libc_cfree(void *p) { free(p); }
SPW_EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign(align, size); }
SPW_EXPORT void *__libc_valloc(size_t size) { return valloc(size); }
SPW_EXPORT void *__libc_pvalloc(size_t size) { return pvalloc(size); }
SPW_EXPORT int __posix_memalign(void **out, size_t align, size_t size) {
    return posix_memalign(out, align, size);
}

// BSD, macOS and Windows spellings (mimalloc's semantics, which is what a
// caller got before this library exported them).
SPW_EXPORT void vfree(void *p) { free(p); }
SPW_EXPORT size_t malloc_size(const void *p) { return malloc_usable_size(const_cast<void *>(p)); }
SPW_EXPORT size_t malloc_good_size(size_t size) {
    if (size < g_large_threshold) return mi_good_size(aligned_request(size));
    size_t page = page_size(), rounded = (size + page - 1) & ~(page - 1);
    return rounded < size ? size : rounded;
}
SPW_EXPORT void *reallocf(void *p, size_t size) { // frees p when it fails
    void *q = realloc(p, size);
    if (!q && size) free(p);
    return q;
}
SPW_EXPORT int reallocarr(void *pointer_to_p, size_t count, size_t size) { // NetBSD
    if (!pointer_to_p) return errno = EINVAL;
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) return errno = EOVERFLOW;
    void **op = static_cast<void **>(pointer_to_p);
    void *q = realloc(*op, total ? total : 1); // mimalloc keeps a block for 0
    if (!q) return errno;
    *op = q;
    return 0;
}
SPW_EXPORT void *_aligned_malloc(size_t size, size_t align) { // Windows argument order
    if (!is_power_of_two(align)) {
        errno = EINVAL;
        return nullptr;
    }
    return alloc_aligned(align, size);
}

// --- Shared-memory segments (engine/shm/shm.h): creating and sizing /dev/shm files ---
// Pass-through raw system calls unless the path is under /dev/shm or the
// descriptor is a /dev/shm file being given a large size.

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

SPW_EXPORT int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return engine_shm_open(path, flags, mode, AT_FDCWD);
}

SPW_EXPORT int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return engine_shm_open(path, flags | O_LARGEFILE, mode, AT_FDCWD);
}

SPW_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return engine_shm_open(path, flags, mode, dirfd);
}

SPW_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return engine_shm_open(path, flags | O_LARGEFILE, mode, dirfd);
}

// _FORTIFY_SOURCE variants (no mode: O_CREAT is rejected by the fortify check).
SPW_EXPORT int __open_2(const char *path, int flags) { return engine_shm_open(path, flags, 0, AT_FDCWD); }
SPW_EXPORT int __open64_2(const char *path, int flags) {
    return engine_shm_open(path, flags | O_LARGEFILE, 0, AT_FDCWD);
}

SPW_EXPORT int shm_open(const char *name, int flags, mode_t mode) {
    // glibc's shm_open opens "/dev/shm/NAME" with O_NOFOLLOW|O_CLOEXEC through
    // an internal call we cannot see, so it is interposed by name.
    while (*name == '/') name++;
    if (!*name || strchr(name, '/')) {
        errno = EINVAL;
        return -1;
    }
    char path[4096];
    if (snprintf(path, sizeof path, "/dev/shm/%s", name) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return engine_shm_open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode, AT_FDCWD);
}

SPW_EXPORT int shm_unlink(const char *name) {
    while (*name == '/') name++;
    char path[4096];
    if (!*name || snprintf(path, sizeof path, "/dev/shm/%s", name) >= (int)sizeof path) {
        errno = ENOENT;
        return -1;
    }
    return engine_shm_unlink(path, AT_FDCWD, 0);
}

SPW_EXPORT int ftruncate(int fd, off_t size) { return engine_shm_resize(fd, size, true, 0, 0); }
SPW_EXPORT int ftruncate64(int fd, off_t size) { return engine_shm_resize(fd, size, true, 0, 0); }
SPW_EXPORT int fallocate(int fd, int mode, off_t offset, off_t len) {
    return engine_shm_resize(fd, len, false, mode, offset);
}
SPW_EXPORT int fallocate64(int fd, int mode, off_t offset, off_t len) {
    return engine_shm_resize(fd, len, false, mode, offset);
}
SPW_EXPORT int unlink(const char *path) { return engine_shm_unlink(path, AT_FDCWD, 0); }
SPW_EXPORT int unlinkat(int dirfd, const char *path, int flags) {
    return engine_shm_unlink(path, dirfd, flags);
}

