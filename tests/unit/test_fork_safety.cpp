// test_fork_safety.cpp — the fork handlers take the shim's locks unless the
// forking thread holds them, never wait for themselves, release exactly what
// they took, restore the signal mask, and make a child whose fork
// interrupted the shim untrusted (its large path off, inherited regions
// left alone) while a normal child keeps a working large path, even when
// the parent's page probe held a region at the fork.
#include "fork_safety.h"
#include "large/large.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "tiering/rehome.h"
#include "registry/arena.h"
#include "backing/backing.h"
#include "backing/reaper.h"
#include "spillway.h"
#include "shim_fixture.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <ctime>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace spillway;

namespace {

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

bool locked_elsewhere(std::mutex &m) {
    bool got = false;
    std::thread([&] {
        got = m.try_lock();
        if (got) m.unlock();
    }).join();
    return !got;
}

// fork without glibc's atfork handlers: the test plays prepare/parent/child
// itself (the unit-test binary has no constructor registering them).
pid_t bare_fork() { return _Fork(); }

} // namespace

TEST_CASE("prepare takes the large lock, parent releases it and restores the signal mask") {
    test::bring_up();
    sigset_t before, during, after;
    pthread_sigmask(SIG_SETMASK, nullptr, &before);
    fork_prepare();
    pthread_sigmask(SIG_SETMASK, nullptr, &during);
    CHECK(sigismember(&during, SIGUSR1) == 1);
    CHECK(sigismember(&during, SIGALRM) == 1);
    CHECK(locked_elsewhere(large_lock()));
    fork_parent();
    pthread_sigmask(SIG_SETMASK, nullptr, &after);
    CHECK_FALSE(locked_elsewhere(large_lock()));
    CHECK(sigismember(&after, SIGUSR1) == sigismember(&before, SIGUSR1));
    CHECK(sigismember(&after, SIGALRM) == sigismember(&before, SIGALRM));
}

TEST_CASE("a fork that interrupted the large lock's holder does not wait for it") {
    test::bring_up();
    large_lock().lock(); // as a signal handler that interrupted large_alloc sees it
    double t0 = now_s();
    fork_prepare();
    CHECK(now_s() - t0 < 1.0);
    pid_t pid = bare_fork();
    if (pid == 0) {
        fork_child();
        // Untrusted: a large request is refused to the small path and the
        // lock is usable again.
        bool use_small = false;
        void *p = large_alloc(8 << 20, 0, 0, &use_small);
        bool ok = fork_child_untrusted() && !p && use_small && large_lock().try_lock();
        _exit(ok ? 0 : 1);
    }
    fork_parent();
    // The parent's lock is still the interrupted frame's: not released by parent.
    CHECK(locked_elsewhere(large_lock()));
    large_lock().unlock();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a normal fork child keeps a working large path and a private copy of regions") {
    test::bring_up();
    bool use_small = false;
    auto *inherited = (unsigned char *)large_alloc(4 << 20, 0, 0, &use_small);
    REQUIRE(inherited);
    memset(inherited, 7, 4 << 20);
    // Another thread holds the large lock for a while: prepare must wait.
    std::atomic<bool> holding{false};
    std::thread holder([&] {
        std::lock_guard<std::mutex> guard(large_lock());
        holding = true;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, nullptr);
    });
    while (!holding) std::this_thread::yield();
    fork_prepare();
    pid_t pid = bare_fork();
    if (pid == 0) {
        fork_child();
        inherited[0] = 9; // private: the parent keeps 7
        bool small = false;
        void *p = large_alloc(4 << 20, 0, 0, &small);
        bool ok = !fork_child_untrusted() && p && !small;
        if (p) large_free(p);
        large_free(inherited);
        _exit(ok ? 0 : 1);
    }
    fork_parent();
    holder.join();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(inherited[0] == 7);
    large_free(inherited);
}

TEST_CASE("an untrusted fork child moves no region; a trusted one knows which regions it inherited") {
    test::bring_up();
    bool use_small = false;
    auto *inherited = (unsigned char *)large_alloc(4 << 20, 0, 0, &use_small);
    REQUIRE(inherited);
    memset(inherited, 9, 4 << 20);
    Region *r = arena::region_at(inherited);
    REQUIRE(r);
    // Untrusted: the fork interrupted the large lock's holder on this thread.
    large_lock().lock();
    fork_prepare();
    pid_t pid = bare_fork();
    if (pid == 0) {
        fork_child();
        SpillFile *dest = nullptr;
        bool ok = fork_child_untrusted() && new_dedicated_disk_file(r->map_len, &dest) == 0 &&
                  rehome_region(r, dest) == -EPERM && r->backing != Backing::none &&
                  inherited[0] == 9 && inherited[(4 << 20) - 1] == 9;
        _exit(ok ? 0 : 1);
    }
    fork_parent();
    large_lock().unlock();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(last_fork_ns() > r->born_ns); // the parent knows it forked after the region's birth
    // Trusted: the tiering controller skips regions born before the fork.
    fork_prepare();
    pid = bare_fork();
    if (pid == 0) {
        fork_child();
        bool ok = !fork_child_untrusted() && forked_at_ns() > r->born_ns && last_fork_ns() == 0;
        _exit(ok ? 0 : 1);
    }
    fork_parent();
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    large_free(inherited);
}

TEST_CASE("a fork while a page probe holds a region: the child frees it without waiting for the probe") {
    test::bring_up();
    bool use_small = false;
    auto *inherited = (unsigned char *)large_alloc(4 << 20, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(inherited);
    memset(inherited, 5, 4 << 20);
    Region *r = arena::region_at(inherited);
    probe_hold_begin(); // the sampler's probe, in the middle of its calls
    {
        std::lock_guard<std::mutex> guard(large_lock());
        probe_hold_publish(r);
    }
    fork_prepare();
    pid_t pid = bare_fork();
    if (pid == 0) {
        alarm(20); // a wait on the parent's hold would never end: killed, the test fails
        fork_child();
        bool ok = !fork_child_untrusted() && probe_held() == nullptr;
        large_free(inherited); // retired inline (the child has no reaper thread yet)
        reaper_drain();
        ok = ok && arena::region_at(inherited) != r;
        _exit(ok ? 0 : 1);
    }
    fork_parent();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(probe_held() == r);
    probe_hold_end();
    CHECK(inherited[0] == 5);
    large_free(inherited);
    reaper_drain();
}
