// test_uffd.cpp — the userfaultfd probe agrees with what the kernel grants
// this process, PAGEMAP_SCAN finds exactly the pages written since they
// were write-protected: by the CPU and by the kernel (pread into them), on
// anonymous memory, a memfd and a file of the spill directory's filesystem;
// on a private mapping of a file, the step that starts tracking lists
// exactly the process's own copies and later scans skip pages with no
// entry; and unregistering a range leaves no thread waiting in it.
#include "threads_progress.h"
#include "shim_fixture.h"

#include "os/uffd.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace spillway;

namespace {

// What the kernel grants, asked independently of uffd.cpp.
uffd::Level granted() {
    auto features = [](int flags) -> int64_t {
        int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | flags);
        if (fd < 0) return -1;
        uffdio_api api{};
        api.api = UFFD_API;
        int rc = ioctl(fd, UFFDIO_API, &api);
        close(fd);
        return rc == 0 ? (int64_t)api.features : -1;
    };
    const uint64_t tracking = uffd::kFeatureWpAsync | uffd::kFeatureWpUnpopulated | uffd::kFeatureWpShmem;
    const uint64_t full = tracking | uffd::kFeatureEventRemap | uffd::kFeatureMinorShmem | uffd::kFeatureMissingShmem;
    int64_t f = features(0);
    if (f >= 0 && ((uint64_t)f & full) == full) return uffd::Level::full;
    if (f < 0) f = features(1 /* UFFD_USER_MODE_ONLY */);
    return f >= 0 && ((uint64_t)f & tracking) == tracking ? uffd::Level::user_only : uffd::Level::none;
}

// True when the kernel grants no write tracking here; the probe must then
// say none (a case with nothing to scan with checks only that).
bool nothing_to_scan_with() {
    if (granted() != uffd::Level::none) return false;
    CHECK(uffd::level() == uffd::Level::none);
    return true;
}

// A write-tracking context with [p, p+n) registered for write protection,
// and a pagemap descriptor to scan with; both closed at the end.
struct Tracking {
    int context = -1, pagemap = -1;
    Tracking(const void *p, size_t n) {
        context = uffd::open_context(uffd::kFeatureWpAsync | uffd::kFeatureWpUnpopulated | uffd::kFeatureWpShmem,
                                     uffd::level() != uffd::Level::full);
        REQUIRE(context >= 0);
        pagemap = uffd::open_pagemap();
        REQUIRE(pagemap >= 0);
        REQUIRE(uffd::register_range(context, (uintptr_t)p, n, uffd::kModeWp) == 0);
    }
    ~Tracking() {
        if (pagemap >= 0) close(pagemap);
        if (context >= 0) close(context);
    }
};

std::string pages(const std::vector<uffd::Range> &v, uintptr_t base) {
    std::string s;
    for (auto &r : v)
        s += std::to_string((r.start - base) / 4096) + "-" + std::to_string((r.end - base) / 4096 - 1) + " ";
    return s;
}

} // namespace

TEST_CASE("the userfaultfd probe says what the kernel grants this process") {
    uffd::forget_level();
    CHECK(uffd::level() == granted());
    CHECK(std::string(uffd::level_name(uffd::level())).size() > 0);
}

TEST_CASE("under a seccomp filter that kills a caller of userfaultfd, the probe survives and says none") {
    // systemd's SystemCallFilter= without SystemCallErrorNumber= kills; the
    // probe asks from a child first (uffd.cpp child_survives_asking).
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        sock_filter prog[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog fp = {4, prog};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp)) _exit(3);
        uffd::forget_level();
        _exit(uffd::level() == uffd::Level::none ? 0 : 4);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("status " << status);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("PAGEMAP_SCAN finds every page written since write protection, CPU and kernel stores alike") {
    test::bring_up();
    if (nothing_to_scan_with()) return;
    const size_t page = 4096, n = 64 * page;
    int src = open(test::settings().spill_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(src >= 0);
    std::vector<char> bytes(2 * page, 7);
    REQUIRE(pwrite(src, bytes.data(), bytes.size(), 0) == (ssize_t)bytes.size());
    for (int kind = 0; kind < 3; kind++) {
        INFO((kind == 0 ? "anonymous" : kind == 1 ? "memfd" : "file in the spill directory"));
        int fd = kind == 1 ? memfd_create("test_uffd", MFD_CLOEXEC)
                 : kind == 2 ? open(test::settings().spill_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)
                             : -1;
        if (kind) REQUIRE(fallocate(fd, 0, 0, n) == 0);
        char *p = (char *)mmap(nullptr, n, PROT_READ | PROT_WRITE, kind ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
        REQUIRE((void *)p != MAP_FAILED); // (void *): Catch2 would print a char * as a string
        for (size_t i = 0; i < n; i += 2 * page) p[i] = 1; // half the pages populated, half never touched
        Tracking t(p, n);
        const int u = t.context, pm = t.pagemap;
        REQUIRE(uffd::write_protect(u, (uintptr_t)p, n) == 0);
        std::vector<uffd::Range> none, first, second;
        REQUIRE(uffd::scan_written(pm, (uintptr_t)p, n, true, none) == 0);
        CHECK(none.empty());
        p[3 * page] = 2;                 // populated before (page 3: odd, never touched)
        p[10 * page + 5] = 2;            // populated
        REQUIRE(pread(src, p + 20 * page, 2 * page, 0) == (ssize_t)(2 * page)); // the kernel's stores
        REQUIRE(uffd::scan_written(pm, (uintptr_t)p, n, true, first) == 0);
        CHECK(pages(first, (uintptr_t)p) == "3-3 10-10 20-21 ");
        REQUIRE(uffd::scan_written(pm, (uintptr_t)p, n, false, second) == 0);
        CHECK(second.empty()); // written pages were protected again by the first scan
        p[40 * page] = 3;
        second.clear();
        REQUIRE(uffd::scan_written(pm, (uintptr_t)p, n, false, second) == 0);
        CHECK(pages(second, (uintptr_t)p) == "40-40 ");
        munmap(p, n);
        if (fd >= 0) close(fd);
    }
    close(src);
}

TEST_CASE("on a private file mapping, the protecting scan lists exactly the copies, and later scans the pages written") {
    test::bring_up();
    if (nothing_to_scan_with()) return;
    const size_t page = 4096, n = 64 * page;
    for (int kind = 1; kind < 3; kind++) {
        INFO((kind == 1 ? "memfd" : "file in the spill directory"));
        int fd = kind == 1 ? memfd_create("test_uffd", MFD_CLOEXEC)
                           : open(test::settings().spill_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        std::vector<char> bytes(n, 7);
        REQUIRE(pwrite(fd, bytes.data(), n, 0) == (ssize_t)n);
        char *p = (char *)mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        REQUIRE((void *)p != MAP_FAILED); // (void *): Catch2 would print a char * as a string
        volatile char sink = 0;
        for (size_t i = 0; i < 16 * page; i += page) sink = sink + p[i]; // pages 0-15: the file's, mapped
        p[4 * page] = 1;                                                  // copies: 4, 20-21, 40
        p[20 * page] = 1;
        p[21 * page] = 1;
        p[40 * page] = 1;                                                 // pages 41-63: no entry
        Tracking t(p, n);
        const int pm = t.pagemap;
        std::vector<uffd::Range> copies, none, written;
        REQUIRE(uffd::protect_listing_copies(pm, (uintptr_t)p, n, copies) == 0);
        CHECK(pages(copies, (uintptr_t)p) == "4-4 20-21 40-40 ");
        REQUIRE(uffd::scan_written(pm, (uintptr_t)p, n, true, none, true) == 0);
        CHECK(none.empty()); // every page with an entry was protected; the others are not reported
        p[2 * page] = 2;                                                           // a mapped file page: a copy now
        p[4 * page] = 2;                                                           // a copy written again
        p[50 * page] = 2;                                                          // no entry before
        REQUIRE(pread(fd, p + 30 * page, page, 0) == (ssize_t)page);               // the kernel's store
        sink = sink + p[60 * page];                                                // a read: the file's page
        REQUIRE(uffd::scan_written(pm, (uintptr_t)p, n, true, written, true) == 0);
        // Page 60, mapped by its read with no protection, may count as
        // written (copying the file's own bytes back is harmless): measured
        // both ways on Linux 6.18.
        const std::string got = pages(written, (uintptr_t)p);
        INFO("written: " << got);
        CHECK((got == "2-2 4-4 30-30 50-50 " || got == "2-2 4-4 30-30 50-50 60-60 "));
        munmap(p, n);
        close(fd);
    }
}

TEST_CASE("unregistering a range wakes every thread waiting in it, one whose fault began meanwhile too") {
    // A CPU fault handled under the per-VMA lock can enqueue itself after
    // UFFDIO_UNREGISTER's own wake and sleep on; unregister_range wakes
    // again (uffd.cpp). Threads read random pages of a memfd range while it
    // is registered for minor and missing faults and then released 64 KiB
    // at a time, as a pull releases its batches, round after round; after
    // each round every thread must get on.
    test::bring_up();
    if (nothing_to_scan_with()) return;
    const size_t n = size_t(4) << 20, batch = size_t(64) << 10;
    int fd = memfd_create("test_uffd_wake", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(fallocate(fd, 0, 0, (off_t)n) == 0);
    char *p = (char *)mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE((void *)p != MAP_FAILED); // (void *): Catch2 would print a char * as a string
    memset(p, 1, n);
    // User faults are all this needs: a context for those only where that is all there is.
    int u = uffd::open_context(uffd::kFeatureMinorShmem | uffd::kFeatureMissingShmem, granted() != uffd::Level::full);
    REQUIRE(u >= 0);
    constexpr int kThreads = 4;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> progress[kThreads] = {};
    std::vector<std::thread> readers;
    for (int t = 0; t < kThreads; t++)
        readers.emplace_back([&, t] {
            uint64_t x = 0x9E3779B97F4A7C15ull * (t + 1);
            while (!stop.load(std::memory_order_relaxed)) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                (void)*(volatile char *)(p + (x % (n / 4096)) * 4096);
                progress[t].fetch_add(1, std::memory_order_relaxed);
            }
        });
    // Drains the fault messages, as a mover's helper does (a full queue changes nothing, but be faithful).
    std::thread drain([&] {
        std::vector<uintptr_t> faults;
        while (!stop.load()) {
            faults.clear();
            if (uffd::read_messages(u, &faults) <= 0) usleep(50);
        }
    });
    // Rounds for 3 s (hundreds): the old code left a thread waiting in
    // 8 runs of 10 here (load 5 to 7), after 1 to 708 rounds.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    int rounds = 0, stuck = 0, err = 0;
    while (std::chrono::steady_clock::now() < until && stuck == 0 && err == 0) {
        // (No REQUIRE while the threads run: their std::thread must be joined.)
        err = uffd::register_range(u, (uintptr_t)p, n, uffd::kModeMinor | uffd::kModeMissing);
        if (err == 0 && madvise(p, n, MADV_DONTNEED) != 0) err = -errno; // every access faults again
        for (size_t off = 0; off < n && err == 0; off += batch) {
            auto spin = std::chrono::steady_clock::now() + std::chrono::microseconds(10); // a batch's copy
            while (std::chrono::steady_clock::now() < spin) {
            }
            err = uffd::unregister_range(u, (uintptr_t)p + off, batch);
        }
        rounds++;
        // Nothing is registered now: every thread gets on (threads_progress.h).
        stuck += test::threads_stuck(progress);
    }
    uffd::unregister_range(u, (uintptr_t)p, n);
    uffd::wake(u, (uintptr_t)p, n); // a thread left waiting (the failure) gets on, to be joined
    stop = true;
    for (auto &r : readers) r.join();
    drain.join();
    INFO(rounds << " rounds of " << n / batch << " releases; threads still waiting after the last: " << stuck);
    CHECK(err == 0);
    CHECK(stuck == 0);
    close(u);
    munmap(p, n);
    close(fd);
}
