// direct_write.h — writing a region's bytes into a spill file past the page
// cache (O_DIRECT), for a demotion: bytes that must leave RAM.
//
// Why: written through the page cache, a demotion first copies the bytes
// into new page cache (charged to the cgroup, which is near its limit by
// then), then writes them back and drops them: 0.8 s of the mover's CPU for
// 600 MiB, measured. A mover that gets a small share of a busy machine's
// CPU then moved 46 MiB/s while the job grew at 200-300 MiB/s, and the job
// was OOM-killed mid-move (integration scenario 14 under a CPU hog). A
// direct write sends the region's own pages to the disk: 0.1 s of CPU for
// the same 600 MiB, no page cache, nothing to reclaim.
//
// Invariant: every byte reaches the file. A range a direct write cannot
// take (misaligned, or a filesystem that refuses O_DIRECT with EINVAL) is
// written through the page cache instead, and the caller's writeback of the
// range (sync_file_range, POSIX_FADV_DONTNEED) still covers it. The writer
// never changes the file's size or its other descriptors.
#pragma once

#include <cstddef>
#include <sys/types.h>

namespace spillway {

class DirectWriter {
  public:
    // fd: the destination, open for writing. Reopens it O_DIRECT (through
    // /proc/self/fd, which also reaches an unnamed O_TMPFILE file).
    explicit DirectWriter(int fd);
    ~DirectWriter();
    DirectWriter(const DirectWriter &) = delete;
    DirectWriter &operator=(const DirectWriter &) = delete;

    // Writes n bytes from src at off: directly when src, off and n meet the
    // file's direct-I/O alignment, else (or when refused) through the page
    // cache. 0 or -errno.
    int write(const char *src, size_t n, off_t off);

    bool direct() const { return direct_fd_ >= 0; } // false: every write is buffered
    size_t direct_bytes() const { return direct_bytes_; }
    size_t buffered_bytes() const { return buffered_bytes_; }

  private:
    int fd_;
    int direct_fd_ = -1;
    size_t mem_align_ = 4096, off_align_ = 4096;
    size_t direct_bytes_ = 0, buffered_bytes_ = 0;
};

} // namespace spillway
