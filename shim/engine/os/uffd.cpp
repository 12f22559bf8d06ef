// uffd.cpp — see uffd.h.
#include "os/uffd.h"

#include "fd_policy.h"
#include "log.h"
#include "pagemap_walk.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace spillway::uffd {

namespace {

// The PAGEMAP_SCAN ioctl on /proc/<pid>/pagemap: pagemap_scan.h, and the
// walk over its answer, pagemap_walk.h.
using pagemap::kPageIsWritten;
using pagemap::kScanCheckWpAsync;
using pagemap::kScanWpMatching;
constexpr int kUserModeOnly = 1; // UFFD_USER_MODE_ONLY

constexpr uint64_t kFullFeatures = kFeatureWpAsync | kFeatureWpUnpopulated | kFeatureWpShmem | kFeatureEventRemap |
                                   kFeatureMinorShmem | kFeatureMissingShmem;
constexpr uint64_t kTrackingFeatures = kFeatureWpAsync | kFeatureWpUnpopulated | kFeatureWpShmem;

std::atomic<int> g_level{-1};

int ioctl_rc(int fd, unsigned long req, void *arg) { return ioctl(fd, req, arg) == 0 ? 0 : -errno; }

// The features a context here would be granted, or -errno.
int64_t supported(bool user_only) {
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | (user_only ? kUserModeOnly : 0));
    if (fd < 0) return -errno;
    uffdio_api api{};
    api.api = UFFD_API;
    int rc = ioctl_rc(fd, UFFDIO_API, &api);
    close(fd);
    return rc < 0 ? rc : (int64_t)api.features;
}

// Whether a seccomp filter is installed on this process (/proc/self/status).
bool under_seccomp_filter() {
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true; // cannot tell: assume one
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return true;
    buf[n] = 0;
    const char *at = strstr(buf, "\nSeccomp:");
    return !at || strtol(at + 9, nullptr, 10) != 0;
}

int child_asks(void *arg) {
    auto *got = (int64_t *)arg;
    got[0] = supported(false);
    got[1] = supported(true);
    return 0;
}

// A seccomp filter may kill a process that makes a call it forbids
// (SECCOMP_RET_KILL_*: systemd's SystemCallFilter= without
// SystemCallErrorNumber=) instead of failing the call. Under a filter the
// first calls are made by a child sharing this process's memory
// (CLONE_VM | CLONE_VFORK: no fork handler runs, no SIGCHLD is sent; this
// thread waits until it is gone), whose death says so. False: killed.
bool child_survives_asking() {
    constexpr size_t kStack = 64 << 10;
    void *stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return false;
    int64_t got[2] = {0, 0};
    pid_t pid = clone(child_asks, (char *)stack + kStack, CLONE_VM | CLONE_VFORK, got);
    int status = 0;
    bool survived = pid > 0 && waitpid(pid, &status, __WCLONE) == pid && WIFEXITED(status);
    munmap(stack, kStack);
    return survived;
}

// One page of anonymous memory, write-protected, written, scanned: the
// whole chain works here (a kernel without PAGEMAP_SCAN fails it).
bool tracking_works(bool user_only) {
    int fd = open_context(kTrackingFeatures, user_only);
    if (fd < 0) return false;
    int pagemap = open_pagemap();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bool ok = false;
    if (pagemap >= 0 && p != MAP_FAILED && register_range(fd, (uintptr_t)p, page, kModeWp) == 0 &&
        write_protect(fd, (uintptr_t)p, page) == 0) {
        std::vector<Range> before, after;
        ok = scan_written(pagemap, (uintptr_t)p, page, true, before) == 0 && before.empty();
        *(volatile char *)p = 1;
        ok = ok && scan_written(pagemap, (uintptr_t)p, page, true, after) == 0 && after.size() == 1;
    }
    if (p != MAP_FAILED) munmap(p, page);
    if (pagemap >= 0) close(pagemap);
    close(fd);
    return ok;
}

Level probe() {
    if (under_seccomp_filter() && !child_survives_asking()) {
        SPW_LOG(warn, "userfaultfd is forbidden here by a seccomp filter that kills the caller; a read(2) or "
                      "recv(2) into a region while spillway moves it (spill, export, tiering) can fail with "
                      "EFAULT or return short while each 16 MiB chunk is read-only for its copy "
                      "(milliseconds): allow the userfaultfd system call to make moves invisible to system calls");
        return Level::none;
    }
    int64_t full = supported(false);
    if (full >= 0 && (full & kFullFeatures) == kFullFeatures && tracking_works(false)) return Level::full;
    int64_t user = full >= 0 ? full : supported(true);
    bool user_ok = user >= 0 && (user & kTrackingFeatures) == kTrackingFeatures && tracking_works(true);
    int why = full < 0 ? (int)-full : 0;
    if (user_ok) {
        SPW_LOG(warn, "userfaultfd here takes faults of user code only (%s); a read(2) or recv(2) into a "
                      "region while spillway moves it (spill, export, tiering) can fail with EFAULT or return "
                      "short while each 16 MiB chunk's last written pages are copied: set "
                      "vm.unprivileged_userfaultfd=1 or grant CAP_SYS_PTRACE to close that window",
                why ? strerror(why) : "the kernel lacks a feature for kernel faults");
        return Level::user_only;
    }
    SPW_LOG(warn, "userfaultfd is not available here (%s); a read(2) or recv(2) into a region while spillway "
                  "moves it (spill, export, tiering) can fail with EFAULT or return short while each 16 MiB "
                  "chunk is read-only for its copy (milliseconds): allow the userfaultfd system call "
                  "(seccomp profile) on Linux 6.7 or later to make moves invisible to system calls",
            why ? strerror(why) : full >= 0 ? "the kernel predates asynchronous write protection" : "unknown");
    return Level::none;
}

} // namespace

Level level() {
    int l = g_level.load(std::memory_order_acquire);
    if (l < 0) {
        // Two first movers may both probe; each logs the same line once at most.
        static std::atomic<bool> probing{false};
        if (probing.exchange(true)) {
            while ((l = g_level.load(std::memory_order_acquire)) < 0) usleep(100);
            return (Level)l;
        }
        l = (int)probe();
        g_level.store(l, std::memory_order_release);
        probing.store(false);
    }
    return (Level)l;
}

const char *level_name(Level l) {
    switch (l) {
    case Level::full: return "userfaultfd";
    case Level::user_only: return "userfaultfd (user faults only)";
    default: return "read-only chunks";
    }
}

void forget_level() { g_level.store(-1); }

int open_context(uint64_t features, bool user_only) {
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | (user_only ? kUserModeOnly : 0));
    if (fd < 0) return -errno;
    fd = move_high(fd);
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = features;
    if (int rc = ioctl_rc(fd, UFFDIO_API, &api)) {
        close(fd);
        return rc;
    }
    return fd;
}

int register_range(int fd, uintptr_t at, size_t len, uint64_t modes) {
    uffdio_register r{};
    r.range.start = at;
    r.range.len = len;
    r.mode = modes;
    return ioctl_rc(fd, UFFDIO_REGISTER, &r);
}

int unregister_range(int fd, uintptr_t at, size_t len) {
    uffdio_range r{at, len};
    if (int rc = ioctl_rc(fd, UFFDIO_UNREGISTER, &r)) return rc;
    // UFFDIO_UNREGISTER wakes the range's waiters first and takes the range
    // out of the context after. A CPU fault handled under the per-VMA lock
    // (Linux 6.6+) does not wait for the mmap_lock UFFDIO_UNREGISTER holds:
    // one that began before the VMA's write lock was taken finds the range
    // still registered, can enqueue itself after that wake, and sleeps until
    // the next wake of its address: for a pull, the context's close when the
    // whole move ends (a test that joins the thread first hangs). Once
    // UFFDIO_UNREGISTER has returned, every such fault is enqueued (the
    // VMA's write lock waited for its read lock, held until it is): this
    // wake reaches it, and its retry finds the range unregistered.
    return wake(fd, at, len);
}

int write_protect(int fd, uintptr_t at, size_t len) {
    uffdio_writeprotect w{};
    w.range.start = at;
    w.range.len = len;
    w.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    return ioctl_rc(fd, UFFDIO_WRITEPROTECT, &w);
}

int wake(int fd, uintptr_t at, size_t len) {
    uffdio_range r{at, len};
    return ioctl_rc(fd, UFFDIO_WAKE, &r);
}

int read_messages(int fd, std::vector<uintptr_t> *faults, unsigned *remaps) {
    uffd_msg msgs[16];
    int total = 0;
    for (;;) {
        ssize_t got = read(fd, msgs, sizeof msgs);
        if (got < 0) {
            if (errno == EINTR) continue;
            return total ? total : -errno;
        }
        size_t n = (size_t)got / sizeof msgs[0];
        for (size_t i = 0; i < n; i++) {
            if (faults && msgs[i].event == UFFD_EVENT_PAGEFAULT) faults->push_back((uintptr_t)msgs[i].arg.pagefault.address);
            if (remaps && msgs[i].event == UFFD_EVENT_REMAP) ++*remaps;
        }
        total += (int)n;
        if (n < sizeof msgs / sizeof msgs[0]) return total;
    }
}

int open_pagemap() {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : move_high(fd);
}

int scan_written(int pagemap, uintptr_t at, size_t len, bool reprotect, std::vector<Range> &out, bool entries_only) {
    pagemap::PageRegion vec[128];
    pagemap::ScanRequest request;
    request.start = at;
    request.end = at + len;
    request.flags = kScanCheckWpAsync | (reprotect ? kScanWpMatching : 0);
    request.category_mask = kPageIsWritten;
    request.return_mask = kPageIsWritten;
    // A page with no entry and no marker is written to the kernel (both
    // paths, Linux 6.18): only pages with an entry are asked for.
    if (entries_only) request.anyof_mask = pagemap::kPageIsPresent | pagemap::kPageIsSwapped;
    return pagemap::walk_runs(pagemap, request, vec, sizeof vec / sizeof vec[0], [&](const pagemap::PageRegion &run) {
        if (!out.empty() && out.back().end == run.start) out.back().end = run.end;
        else out.push_back({(uintptr_t)run.start, (uintptr_t)run.end});
        return true;
    });
}

int protect_listing_copies(int pagemap, uintptr_t at, size_t len, std::vector<Range> &copies) {
    pagemap::PageRegion vec[128];
    pagemap::ScanRequest request;
    request.start = at;
    request.end = at + len;
    request.flags = kScanCheckWpAsync | kScanWpMatching;
    request.anyof_mask = pagemap::kPageIsPresent | pagemap::kPageIsSwapped;
    request.return_mask = pagemap::kPageIsPresent | pagemap::kPageIsFile | pagemap::kPageIsSwapped;
    return pagemap::walk_runs(pagemap, request, vec, sizeof vec / sizeof vec[0], [&](const pagemap::PageRegion &run) {
        const bool own = (run.categories & pagemap::kPageIsSwapped) ||
                         ((run.categories & pagemap::kPageIsPresent) && !(run.categories & pagemap::kPageIsFile));
        if (!own) return true;
        if (!copies.empty() && copies.back().end == run.start) copies.back().end = run.end;
        else copies.push_back({(uintptr_t)run.start, (uintptr_t)run.end});
        return true;
    });
}

} // namespace spillway::uffd
