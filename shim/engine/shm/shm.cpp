// shm.cpp — see shm.h.
#include "shm/shm.h"

#include "backing/backing.h"
#include "log.h"
#include "spill_dir_check.h"
#include "spilldir.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mimalloc.h>
#include <new>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace spillway {

namespace {

constexpr const char kShmDir[] = "/dev/shm/";
constexpr size_t kShmDirLen = sizeof kShmDir - 1;
constexpr int kMaxTrackedFd = 1 << 16;

struct Tracked {
    dev_t dev;
    ino_t ino;
    char path[256]; // the /dev/shm path the program opened
};

bool g_active = false;
uint64_t g_min_size = 64ull << 20;
std::atomic<Tracked *> *g_table = nullptr; // indexed by descriptor number

long raw_openat(int dirfd, const char *path, int flags, mode_t mode) {
    return syscall(SYS_openat, dirfd, path, flags, mode);
}

// The absolute /dev/shm path of (dirfd, path), or "" when it is not one.
std::string shm_path_of(int dirfd, const char *path) {
    if (!path) return "";
    if (path[0] == '/') return strncmp(path, kShmDir, kShmDirLen) == 0 ? std::string(path) : "";
    if (dirfd == AT_FDCWD || !fd_may_be_on_ram_filesystem(dirfd)) return "";
    char link[64], target[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) return "";
    target[n] = 0;
    std::string full = std::string(target) + "/" + path;
    return full.compare(0, kShmDirLen, kShmDir) == 0 ? full : "";
}

void track(int fd, const std::string &path) {
    if (fd < 0 || fd >= kMaxTrackedFd || path.size() >= sizeof(Tracked::path)) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    void *mem = mi_malloc(sizeof(Tracked));
    if (!mem) return;
    Tracked *t = new (mem) Tracked();
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    memcpy(t->path, path.c_str(), path.size() + 1);
    Tracked *old = g_table[fd].exchange(t, std::memory_order_acq_rel);
    if (old) mi_free(old);
}

int open_redirect(const std::string &shm_path, int flags) {
    std::string name = shm_redirect_name(shm_path.c_str());
    int f = (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOFOLLOW | O_CLOEXEC;
    if (!(flags & O_CLOEXEC)) f &= ~O_CLOEXEC;
    return (int)raw_openat(spill_dir_fd(), name.c_str(), f, 0);
}

bool redirect_exists(const std::string &shm_path) {
    struct stat st;
    std::string name = shm_redirect_name(shm_path.c_str());
    return fstatat(spill_dir_fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

} // namespace

void shm_init(const Settings &s) {
    g_min_size = s.shm_min;
    if (!s.shm_redirect || !disk_usable()) return;
    void *table = mmap(nullptr, sizeof(std::atomic<Tracked *>) * kMaxTrackedFd, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED) return;
    g_table = static_cast<std::atomic<Tracked *> *>(table);
    g_active = true;
}

bool shm_active() { return g_active; }

std::string shm_redirect_name(const char *shm_path) {
    std::string name = kShmPrefix;
    for (const char *c = shm_path + kShmDirLen; *c; c++) name += (*c == '/') ? '%' : *c;
    return name;
}

int shm_open_path(const char *path, int flags, mode_t mode, int dirfd) {
    if (!g_active) return (int)raw_openat(dirfd, path, flags, mode);
    std::string shm_path = shm_path_of(dirfd, path);
    if (shm_path.empty()) return (int)raw_openat(dirfd, path, flags, mode);
    // A name redirected earlier (by us or a sibling under the shim): the
    // marker must still exist, unless the caller is creating it afresh.
    bool exclusive = (flags & O_CREAT) && (flags & O_EXCL);
    if (!exclusive && redirect_exists(shm_path)) {
        struct stat st;
        if (stat(shm_path.c_str(), &st) == 0) {
            int fd = open_redirect(shm_path, flags);
            if (fd >= 0) {
                if (flags & O_TRUNC) syscall(SYS_ftruncate, fd, 0);
                return fd;
            }
        }
    }
    int fd = (int)raw_openat(dirfd, path, flags, mode);
    if (fd >= 0 && (flags & O_CREAT) && (flags & O_ACCMODE) != O_RDONLY) {
        int saved = errno;
        track(fd, shm_path);
        errno = saved;
    }
    return fd;
}

int shm_resize(int fd, off_t size, bool truncate_call, int mode, off_t offset) {
    auto real = [&]() -> int {
        return truncate_call ? (int)syscall(SYS_ftruncate, fd, size)
                             : (int)syscall(SYS_fallocate, fd, mode, offset, size);
    };
    off_t end = truncate_call ? size : offset + size;
    if (!g_active || fd < 0 || fd >= kMaxTrackedFd || (uint64_t)end < g_min_size) return real();
    Tracked *t = g_table[fd].load(std::memory_order_acquire);
    if (!t) return real();
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != t->dev || st.st_ino != t->ino) return real(); // reused number
    if (st.st_size != 0) return real(); // already sized in /dev/shm: leave it be
    int saved = errno;
    std::string name = shm_redirect_name(t->path);
    int dir = spill_dir_fd();
    syscall(SYS_unlinkat, dir, name.c_str(), 0); // a stale one from a crashed run
    int spill = (int)raw_openat(dir, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int err = spill < 0 ? errno : 0;
    if (!err) make_spill_file_write_in_place(spill);
    if (!err && syscall(SYS_fallocate, spill, 0, (off_t)0, end) != 0) err = errno;
    if (err) {
        if (spill >= 0) {
            close(spill);
            syscall(SYS_unlinkat, dir, name.c_str(), 0);
        }
        SPW_LOG(warn, "shared-memory segment %s (%lld bytes) stays in /dev/shm: could not reserve it "
                      "in %s (%s), so it takes RAM (and room in /dev/shm, 64 MiB in Docker by "
                      "default) and is NOT protected from the memory limit: %s",
                t->path, (long long)end, spill_dir_path().c_str(), strerror(err),
                fallback_remedy(disk_usable() ? fallback_from_errno(err) : Fallback::no_spill_dir));
        errno = saved;
        return real();
    }
    int fd_flags = fcntl(fd, F_GETFD);
    int status_flags = fcntl(fd, F_GETFL);
    fcntl(spill, F_SETFL, status_flags & (O_APPEND | O_NONBLOCK));
    if (dup3(spill, fd, (fd_flags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
        err = errno;
        close(spill);
        syscall(SYS_unlinkat, dir, name.c_str(), 0);
        SPW_LOG(warn, "could not redirect %s (%s); it stays in /dev/shm, in RAM and NOT protected "
                      "from the memory limit (a race with a thread closing the descriptor): nothing "
                      "to do unless it repeats, then set shm.redirect = false and report it",
                t->path, strerror(err));
        errno = saved;
        return real();
    }
    close(spill);
    SPW_LOG(info, "shared-memory segment %s (%lld bytes) redirected to %s/%s", t->path, (long long)end,
            spill_dir_path().c_str(), name.c_str());
    g_table[fd].store(nullptr, std::memory_order_release);
    mi_free(t);
    errno = saved;
    return real(); // sets the exact size (fallocate above already reserved it)
}

int shm_unlink_path(const char *path, int dirfd, int flags) {
    int rc = (int)syscall(SYS_unlinkat, dirfd, path, flags);
    if (!g_active || (flags & AT_REMOVEDIR)) return rc;
    int saved = errno;
    std::string shm_path = shm_path_of(dirfd, path);
    if (!shm_path.empty()) {
        std::string name = shm_redirect_name(shm_path.c_str());
        if (syscall(SYS_unlinkat, spill_dir_fd(), name.c_str(), 0) == 0 && rc != 0) rc = 0;
    }
    errno = saved;
    return rc;
}

} // namespace spillway
