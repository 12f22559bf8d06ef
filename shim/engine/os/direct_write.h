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
//
// Queued writes: a demotion's chunk is written, then remapped and its old
// pages freed, and the disk sat idle through the second half (a 16 MiB
// direct write took 67-76 ms here, the whole chunk 110-200 ms under load:
// 80-145 MiB/s, while a job grew at 300 MiB/s and was OOM-killed). So the
// next chunk's write is queued (Linux AIO on the O_DIRECT descriptor: no
// thread to schedule, the disk works while the mover waits for a CPU) before
// the mover waits for this one. Two 16 MiB direct writes in flight also
// wrote 470 MB/s here where one stream wrote 210-390.
// Invariant: a queued write is finished (landed, or written again
// synchronously from its source) before finish() of its batch returns, and
// none is in flight after drain() or the destructor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <linux/aio_abi.h>
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

    // Starts writing n bytes from src at off and returns without waiting,
    // when the range can go direct and the kernel takes asynchronous I/O;
    // otherwise writes them now, as write() does. src must stay mapped
    // until finish(batch) (the caller's: a number naming a group of
    // writes) has returned. 0 or -errno (an error of a write made now).
    int queue(const char *src, size_t n, off_t off, uint64_t batch);
    // Returns once every write queued in batch has landed. One the device
    // refused or cut short is written again, synchronously, from its
    // source (bytes as new as the first attempt's, or newer). 0 or -errno.
    int finish(uint64_t batch);
    // Waits for every queued write and forgets their outcome: for a move
    // that stops early (nothing may land after it).
    void drain();
    bool queues() const { return ctx_ != 0; } // false: queue() writes at once
    size_t queued_bytes() const { return queued_bytes_; } // bytes that went through the queue

  private:
    static constexpr unsigned kSlots = 16;
    struct Slot {
        struct iocb cb;
        const char *src = nullptr;
        size_t n = 0;
        off_t off = 0;
        uint64_t batch = 0;
        bool busy = false, done = false;
        int64_t result = 0;
    };
    int reap(bool block); // collects finished writes into their slots; -errno on a failed wait
    int settle_slot(Slot &s); // a finished slot: 0, or its rewrite's result

    int fd_;
    int direct_fd_ = -1;
    size_t mem_align_ = 4096, off_align_ = 4096;
    size_t direct_bytes_ = 0, buffered_bytes_ = 0, queued_bytes_ = 0;
    aio_context_t ctx_ = 0;
    Slot slots_[kSlots];
    unsigned in_flight_ = 0;
};

} // namespace spillway
