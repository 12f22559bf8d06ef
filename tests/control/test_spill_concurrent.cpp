// test_spill_concurrent.cpp — proves spillway_spill is safe while other
// threads use the region: writer threads that never stop writing lose no
// write (every value each one wrote last is there afterwards), a reader
// never sees a value go back or land in the wrong place, and the region ends
// on disk at the same address. Also under two conditions real programs
// create: another library replaced the SIGSEGV handler after an earlier
// spill, and a thread writes into the region through a system call (read(2),
// recv(2)...), where the kernel, not the CPU, does the store: with
// userfaultfd such a call completes in full (docs/moves.md), and in the
// fallbacks (forced with a seccomp filter) it fails at worst with EFAULT or
// a short count, nothing lost. Every scenario runs in a fork child, so a
// crash is a failed check, not a dead test program. Runs with
// SPILLWAY_POLICY=anon (malloc gives anonymous regions).
#include "spillway.h"
#include "support.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace control_test;

namespace {

enum Outcome {
    kOk = 0,
    kSpillFailed = 10,
    kNotOnDisk = 11,
    kLostWrite = 12,
    kReaderSawRegression = 13,
    kOtherHandlerRan = 14,
    kSyscallFailed = 15,
    kSyscallDataWrong = 16,
};

void wait_for(const std::function<bool()> &pred) {
    while (!pred()) std::this_thread::yield();
}

// Writers, a reader and one spill on a 256 MiB anonymous region.
// Writer t owns words [t*S, (t+1)*S) and stores k+1 into word t*S + k%S for
// k = 0, 1, 2, ...: the last value of every word is known from the count.
int writers_and_reader_across_a_spill() {
    constexpr int kWriters = 3;
    const size_t size = 256 * MiB, words = size / 8, S = words / kWriters;
    uint64_t *w = (uint64_t *)calloc(1, size);
    if (spillway_backing(w) != SPILLWAY_ANON) return kSpillFailed;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> progress[kWriters];
    for (auto &p : progress) p.store(0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kWriters; t++)
        threads.emplace_back([&, t] {
            uint64_t *mine = w + (size_t)t * S;
            uint64_t k = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int burst = 0; burst < 4096; burst++, k++)
                    __atomic_store_n(&mine[k % S], k + 1, __ATOMIC_RELAXED);
                progress[t].store(k, std::memory_order_relaxed);
            }
        });
    std::atomic<uint64_t> regressions{0};
    std::thread reader([&] {
        constexpr size_t kSamples = 4096;
        std::vector<uint64_t> last(kSamples, 0);
        while (!stop.load(std::memory_order_relaxed))
            for (size_t i = 0; i < kSamples; i++) {
                size_t slot = (i * 7919) % (S * kWriters);
                uint64_t v = __atomic_load_n(&w[slot], __ATOMIC_RELAXED);
                bool misplaced = v && (v - 1) % S != slot % S;
                if (v < last[i] || misplaced) regressions.fetch_add(1);
                last[i] = v;
            }
    });
    // Every word written once, then the spill, then every word written again.
    wait_for([&] {
        for (auto &p : progress)
            if (p.load() < S) return false;
        return true;
    });
    int rc = spillway_spill(w);
    uint64_t at_spill[kWriters];
    for (int t = 0; t < kWriters; t++) at_spill[t] = progress[t].load();
    wait_for([&] {
        for (int t = 0; t < kWriters; t++)
            if (progress[t].load() < at_spill[t] + S) return false;
        return true;
    });
    stop.store(true);
    for (auto &th : threads) th.join();
    reader.join();
    if (rc != 0) return kSpillFailed;
    if (spillway_backing(w) != SPILLWAY_DISK) return kNotOnDisk;
    for (int t = 0; t < kWriters; t++) {
        uint64_t count = progress[t].load(); // writes done: k ran from 0 to count-1
        for (size_t j = 0; j < S; j++) {
            uint64_t k = j + S * ((count - 1 - j) / S); // the last k with k % S == j
            if (w[(size_t)t * S + j] != k + 1) return kLostWrite;
        }
    }
    if (regressions.load()) return kReaderSawRegression;
    free(w);
    return kOk;
}

// A fork child of the test program inherits the test framework's SIGSEGV
// handler; start each scenario from the default, as a fresh program would.
int fresh(int (*scenario)()) {
    signal(SIGSEGV, SIG_DFL);
    return scenario();
}

void other_library_handler(int) {
    const char msg[] = "control test: another library's SIGSEGV handler ran\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(kOtherHandlerRan);
}

} // namespace

TEST_CASE("writers lose nothing and a reader sees no regression across a spill") {
    int status = in_fork_child([] { return fresh(writers_and_reader_across_a_spill); });
    CHECK(status == kOk);
}

TEST_CASE("a spill is still safe after another library replaced the SIGSEGV handler") {
    // Regression test for control-shim-bugs.md#5 (fixed in f1b8c9a): the
    // shim used to install its SIGSEGV handler once per process. A library
    // that installs its own handler for a while and then restores the one it
    // found (a test framework, a crash reporter, a JIT) removed the shim's
    // for good, and the next spill under concurrent writers killed the
    // process.
    int status = in_fork_child([] {
              signal(SIGSEGV, SIG_DFL);
              struct sigaction scoped {}, saved{};
              scoped.sa_handler = other_library_handler;
              sigemptyset(&scoped.sa_mask);
              sigaction(SIGSEGV, &scoped, &saved);
              char *first = (char *)malloc(16 * MiB);
              fill(first, 0, 16 * MiB, 1);
              if (spillway_spill(first) != 0) return (int)kSpillFailed;
              sigaction(SIGSEGV, &saved, nullptr); // the other library's scope ends
              return writers_and_reader_across_a_spill();
          });
    INFO("exit status " << status << (status == 128 + SIGSEGV ? " (killed by SIGSEGV)" : ""));
    CHECK(status == kOk);
}

namespace {

enum SyscallOutcome {
    kEfault = 17,      // a call failed with EFAULT where no call may fail
    kShortCount = 18,  // a call came back short where none may
    kWrongPlace = 19,  // the region was not placed where the scenario needs it
};

// The probe (docs/moves.md is the contract it checks): a thread
// pread(2)s 1 MiB from a file into the last MiB of a 256 MiB region, over
// and over, while spillway_spill moves the region to disk; `spills` times,
// each on a fresh region (anonymous: malloc under SPILLWAY_POLICY=anon; or
// a memfd: spillway_alloc(SPILLWAY_PREFER_MEMORY)). Every call must come
// back whole, failed with EFAULT, or short, and the bytes must all be right
// at the end (nothing lost); with userfaultfd for kernel faults (level 2)
// none may fail or come back short. Prints the counts.
int syscalls_across_spills(bool memfd, int spills, int level) {
    const size_t size = 256 * MiB, chunk = 1 * MiB;
    std::string src = spill_dir() + "/syscall-source";
    std::vector<char> bytes(chunk);
    fill(bytes.data(), 0, chunk, 3);
    int fd = open(src.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, bytes.data(), chunk) != (ssize_t)chunk) return kSyscallFailed;
    unlink(src.c_str());
    uint64_t calls = 0, efaults = 0, shorts = 0, others = 0;
    for (int s = 0; s < spills; s++) {
        char *p = (char *)(memfd ? spillway_alloc(size, SPILLWAY_PREFER_MEMORY) : malloc(size));
        if (!p || spillway_backing(p) != (memfd ? SPILLWAY_MEMORY : SPILLWAY_ANON)) return kWrongPlace;
        fill(p, 0, size, 10 + (uint64_t)s);
        std::atomic<bool> stop{false};
        std::atomic<uint64_t> n{0}, efault{0}, shrt{0}, other{0};
        std::thread io([&] {
            while (!stop.load()) {
                ssize_t got = pread(fd, p + size - chunk, chunk, 0);
                if (got < 0 && errno == EFAULT) efault++;
                else if (got < 0) other++;
                else if (got != (ssize_t)chunk) shrt++;
                n++;
            }
            // The last call is after the spill: the bytes it leaves are final.
            if (pread(fd, p + size - chunk, chunk, 0) != (ssize_t)chunk) other++;
        });
        wait_for([&] { return n.load() >= 20; });
        int rc = spillway_spill(p);
        uint64_t at_spill = n.load();
        wait_for([&] { return n.load() >= at_spill + 20; });
        stop.store(true);
        io.join();
        calls += n, efaults += efault, shorts += shrt, others += other;
        if (rc != 0) return kSpillFailed;
        if (spillway_backing(p) != SPILLWAY_DISK) return kNotOnDisk;
        if (first_mismatch(p, 0, size - chunk, 10 + (uint64_t)s) != SIZE_MAX) return kLostWrite;
        if (memcmp(p + size - chunk, bytes.data(), chunk) != 0) return kSyscallDataWrong;
        free(p);
    }
    close(fd);
    fprintf(stderr,
            "control test: %d spills of a 256 MiB %s region (userfaultfd level %d): %llu pread(2) calls, "
            "%llu EFAULT, %llu short, %llu other errors\n",
            spills, memfd ? "memfd" : "anonymous", level, (unsigned long long)calls, (unsigned long long)efaults,
            (unsigned long long)shorts, (unsigned long long)others);
    if (others) return kSyscallFailed;
    if (level == 2 && efaults) return kEfault;
    if (level == 2 && shorts) return kShortCount;
    return kOk;
}

const char *outcome_name(int status) {
    switch (status) {
    case kSyscallFailed: return " (a pread failed otherwise than with EFAULT)";
    case kEfault: return " (a pread failed with EFAULT)";
    case kShortCount: return " (a pread came back short)";
    case kLostWrite: return " (bytes lost)";
    case kSyscallDataWrong: return " (the pread's bytes are wrong)";
    default: return "";
    }
}

} // namespace

// With userfaultfd (shim/engine/tiering/move_tracked.h): a system call into the
// region completes in full, whatever the move is doing. Where this machine
// refuses userfaultfd the same run is the fallback's (the next test cases).
TEST_CASE("a system call writing into the region during a spill completes in full (anonymous, memfd)") {
    int level = userfaultfd_level();
    for (bool memfd : {false, true}) {
        int status = in_fork_child([&] {
            signal(SIGSEGV, SIG_DFL);
            return syscalls_across_spills(memfd, 10, level);
        });
        INFO((memfd ? "memfd" : "anonymous") << " region, userfaultfd level " << level << ", exit status "
                                            << status << outcome_name(status));
        CHECK(status == kOk);
    }
}

// The fallbacks, forced with a seccomp filter as a container's profile (or
// vm.unprivileged_userfaultfd=0) would: no userfaultfd at all, and
// userfaultfd for faults of user code only. A call may then fail with
// EFAULT or come back short (docs/moves.md says why no mechanism without
// userfaultfd can prevent it), but nothing is lost and nothing else fails.
TEST_CASE("without userfaultfd a spill still loses nothing, and a system call only fails with EFAULT or short") {
    for (bool user_only : {false, true}) {
        for (bool memfd : {false, true}) {
            int status = in_fork_child([&] {
                signal(SIGSEGV, SIG_DFL);
                if (!refuse_userfaultfd(user_only)) return 20;
                int level = userfaultfd_level();
                if (level != (user_only ? 1 : 0)) return 21;
                return syscalls_across_spills(memfd, 5, level);
            });
            INFO((user_only ? "user faults only" : "no userfaultfd") << ", " << (memfd ? "memfd" : "anonymous")
                                                                     << " region, exit status " << status
                                                                     << outcome_name(status));
            CHECK(status == kOk);
        }
    }
}
