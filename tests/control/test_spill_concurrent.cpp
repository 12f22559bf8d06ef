// test_spill_concurrent.cpp — proves spillway_spill is safe while other
// threads use the region: writer threads that never stop writing lose no
// write (every value each one wrote last is there afterwards), a reader
// never sees a value go back or land in the wrong place, and the region ends
// on disk at the same address. Also under two conditions real programs
// create: another library replaced the SIGSEGV handler after an earlier
// spill, and a thread writes into the region through a system call (read(2),
// recv(2)...), where the kernel, not the CPU, does the store. Every scenario
// runs in a fork child, so a crash is a failed check, not a dead test
// program. Runs with SPILLWAY_POLICY=anon (malloc gives anonymous regions).
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

// KNOWN LIMITATION (documented in spillway.h and shim/engine/tiering/rehome.h): the kernel's
// own stores into a region being moved fail with EFAULT instead of waiting;
// only userfaultfd write-protection could fix it, and container seccomp
// profiles forbid userfaultfd. The move is chunked (16 MiB read-only at a
// time) and does not start a chunk while a thread is blocked reading into
// it, so whether this test's pread(2) calls meet the window is a race: the
// test holds what is promised either way. A failed call fails with EFAULT
// and nothing else, the spill succeeds, and every byte ends right (the next
// call rewrites what a failed one left). It prints how many calls failed.
TEST_CASE("a system call writing into the region during a spill fails with EFAULT at worst, and loses nothing") {
    int status = in_fork_child([] {
              signal(SIGSEGV, SIG_DFL);
              const size_t size = 256 * MiB, chunk = 64 * KiB;
              char *p = (char *)malloc(size);
              fill(p, 0, size, 2);
              std::string src = spill_dir() + "/syscall-source";
              std::vector<char> bytes(chunk);
              fill(bytes.data(), 0, chunk, 3);
              int fd = open(src.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
              if (fd < 0 || write(fd, bytes.data(), chunk) != (ssize_t)chunk) return (int)kSyscallFailed;
              unlink(src.c_str());
              std::atomic<bool> stop{false};
              std::atomic<uint64_t> calls{0}, failures{0}, other_errors{0};
              std::thread io([&] {
                  while (!stop.load()) {
                      // Into the last 64 KiB, rewritten with the same bytes each time.
                      ssize_t got = pread(fd, p + size - chunk, chunk, 0);
                      if (got < 0 && errno == EFAULT) failures.fetch_add(1);
                      else if (got != (ssize_t)chunk) other_errors.fetch_add(1);
                      calls.fetch_add(1);
                  }
                  // The last call is after the spill: the bytes it leaves are final.
                  if (pread(fd, p + size - chunk, chunk, 0) != (ssize_t)chunk) other_errors.fetch_add(1);
              });
              wait_for([&] { return calls.load() >= 100; });
              int rc = spillway_spill(p);
              uint64_t at_spill = calls.load();
              wait_for([&] { return calls.load() >= at_spill + 100; });
              stop.store(true);
              io.join();
              close(fd);
              if (rc != 0) return (int)kSpillFailed;
              fprintf(stderr, "control test: %llu of %llu pread(2) calls into the region failed with "
                              "EFAULT during the spill (the documented limitation)\n",
                      (unsigned long long)failures.load(), (unsigned long long)calls.load());
              if (other_errors.load()) return (int)kSyscallFailed;
              if (spillway_backing(p) != SPILLWAY_DISK) return (int)kNotOnDisk;
              if (first_mismatch(p, 0, size - chunk, 2) != SIZE_MAX) return (int)kLostWrite;
              if (memcmp(p + size - chunk, bytes.data(), chunk) != 0) return (int)kSyscallDataWrong;
              return (int)kOk;
          });
    INFO("exit status " << status << (status == kSyscallFailed ? " (a pread failed otherwise than with EFAULT)" : ""));
    CHECK(status == kOk);
}
