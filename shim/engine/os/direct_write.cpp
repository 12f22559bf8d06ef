// direct_write.cpp — see direct_write.h.
#include "os/direct_write.h"

#include "fd_policy.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace spillway {

DirectWriter::DirectWriter(int fd) : fd_(fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    direct_fd_ = move_high(open(path, O_WRONLY | O_DIRECT | O_CLOEXEC));
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
    // Without AIO (seccomp, fs.aio-max-nr reached) queue() writes at once.
    if (syscall(SYS_io_setup, kSlots, &ctx_) != 0) ctx_ = 0;
}

DirectWriter::~DirectWriter() {
    drain();
    if (ctx_) syscall(SYS_io_destroy, ctx_);
    if (direct_fd_ >= 0) close(direct_fd_);
}

int DirectWriter::queue(const char *src, size_t n, off_t off, uint64_t batch) {
    bool aligned = (uintptr_t)src % mem_align_ == 0 && (size_t)off % off_align_ == 0 && n % off_align_ == 0;
    if (!ctx_ || direct_fd_ < 0 || !aligned || n == 0) return write(src, n, off);
    Slot *free_slot = nullptr;
    for (Slot &s : slots_)
        if (!s.busy) {
            free_slot = &s;
            break;
        }
    if (!free_slot) return write(src, n, off); // the queue is full: this one now
    Slot &s = *free_slot;
    s = Slot{};
    s.src = src, s.n = n, s.off = off, s.batch = batch, s.busy = true;
    s.cb.aio_data = (uint64_t)(&s - slots_);
    s.cb.aio_lio_opcode = IOCB_CMD_PWRITE;
    s.cb.aio_fildes = (uint32_t)direct_fd_;
    s.cb.aio_buf = (uint64_t)(uintptr_t)src;
    s.cb.aio_nbytes = n;
    s.cb.aio_offset = off;
    struct iocb *one = &s.cb;
    long rc;
    do rc = syscall(SYS_io_submit, ctx_, 1, &one);
    while (rc < 0 && errno == EINTR);
    if (rc != 1) { // not taken (EAGAIN, or refused): written now instead
        s.busy = false;
        return write(src, n, off);
    }
    in_flight_++;
    queued_bytes_ += n;
    return 0;
}

int DirectWriter::reap(bool block) {
    struct io_event events[kSlots];
    long got;
    struct timespec zero = {0, 0};
    do got = syscall(SYS_io_getevents, ctx_, block ? 1 : 0, kSlots, events, block ? nullptr : &zero);
    while (got < 0 && errno == EINTR);
    if (got < 0) return -errno;
    for (long i = 0; i < got; i++) {
        Slot &s = slots_[events[i].data];
        s.done = true;
        s.result = events[i].res;
        in_flight_--;
    }
    return 0;
}

int DirectWriter::settle_slot(Slot &s) {
    s.busy = s.done = false;
    if (s.result == (int64_t)s.n) {
        direct_bytes_ += s.n;
        return 0;
    }
    // Refused (EINVAL: the filesystem takes no direct I/O after all) or cut
    // short: the whole range again, synchronously (write() falls back to
    // the page cache on EINVAL).
    if (s.result == -EINVAL || s.result == -EOPNOTSUPP) {
        if (direct_fd_ >= 0) close(direct_fd_); // as write() does: the page cache from now on
        direct_fd_ = -1;
    }
    return write(s.src, s.n, s.off);
}

int DirectWriter::finish(uint64_t batch) {
    int rc = 0;
    for (;;) {
        bool pending = false;
        for (Slot &s : slots_) {
            if (!s.busy || s.batch != batch) continue;
            if (!s.done) {
                pending = true;
                continue;
            }
            if (int w = settle_slot(s); w != 0 && rc == 0) rc = w;
        }
        if (!pending) return rc;
        if (int w = reap(true)) { // cannot wait: what was queued may not have landed
            drain();
            return w;
        }
    }
}

void DirectWriter::drain() {
    while (in_flight_ > 0)
        if (reap(true) != 0) {
            // Cannot wait for events (never seen): io_destroy waits for every
            // write in flight, and nothing is queued from now on.
            syscall(SYS_io_destroy, ctx_);
            ctx_ = 0;
            in_flight_ = 0;
        }
    for (Slot &s : slots_) s.busy = s.done = false;
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
