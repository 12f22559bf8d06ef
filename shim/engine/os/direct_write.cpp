// direct_write.cpp — see direct_write.h.
#include "os/direct_write.h"

#include "fd_policy.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

DirectWriter::DirectWriter(int fd) : fd_(fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    direct_fd_ = above_stdio(open(path, O_WRONLY | O_DIRECT | O_CLOEXEC));
    if (direct_fd_ < 0) return;
#ifdef STATX_DIOALIGN
    // The file's own alignment (Linux 6.1+); 0 means it takes no direct I/O.
    struct statx sx;
    if (statx(direct_fd_, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0) {
            close(direct_fd_);
            direct_fd_ = -1;
            return;
        }
        mem_align_ = sx.stx_dio_mem_align;
        off_align_ = sx.stx_dio_offset_align;
    }
#endif
}

DirectWriter::~DirectWriter() {
    if (direct_fd_ >= 0) close(direct_fd_);
}

int DirectWriter::write(const char *src, size_t n, off_t off) {
    while (n) {
        bool aligned = (uintptr_t)src % mem_align_ == 0 && (size_t)off % off_align_ == 0 && n % off_align_ == 0;
        int to = direct_fd_ >= 0 && aligned ? direct_fd_ : fd_;
        ssize_t w = pwrite(to, src, n, off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && to == direct_fd_ && (errno == EINVAL || errno == EOPNOTSUPP)) {
            close(direct_fd_); // refused after all: the page cache from now on
            direct_fd_ = -1;
            continue;
        }
        if (w <= 0) return w < 0 ? -errno : -EIO;
        (to == direct_fd_ ? direct_bytes_ : buffered_bytes_) += (size_t)w;
        src += w;
        off += w;
        n -= (size_t)w;
    }
    return 0;
}

} // namespace spillway
