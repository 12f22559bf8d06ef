// test_probe_hold.cpp — the page probes' hold (registry/probe_hold.h): a
// wait on a region not held returns at once, a wait on the held one
// returns only once the hold ends, and a fork child starts with nothing
// held whatever the parent's probe was doing.
#include "registry/probe_hold.h"
#include "registry/region.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <ctime>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace spillway;

namespace {
void sleep_ms(long ms) {
    timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}
} // namespace

TEST_CASE("probe hold: a changer of the held region waits for its end, others do not") {
    Region held, other;
    probe_hold_begin();
    probe_hold_publish(&held);
    CHECK(probe_held() == &held);
    std::atomic<bool> other_done{false}, held_done{false};
    std::thread t_other([&] {
        wait_out_probes(&other);
        other_done = true;
    });
    t_other.join(); // would hang if it waited on the hold
    CHECK(other_done);
    std::thread t_held([&] {
        wait_out_probes(&held);
        held_done = true;
    });
    sleep_ms(100); // ample time to return, had it not waited
    CHECK_FALSE(held_done);
    probe_hold_end();
    t_held.join();
    CHECK(held_done);
    CHECK(probe_held() == nullptr);
    wait_out_probes(&held); // nothing held: at once
    wait_out_probes(nullptr);
}

TEST_CASE("probe hold: a published nullptr (the check failed) holds nothing") {
    Region r;
    probe_hold_begin();
    probe_hold_publish(&r);
    probe_hold_publish(nullptr);
    std::atomic<bool> done{false};
    std::thread t([&] {
        wait_out_probes(&r);
        done = true;
    });
    t.join();
    CHECK(done);
    probe_hold_end();
}

TEST_CASE("probe hold: a fork child starts with nothing held and a free hold lock") {
    Region r;
    probe_hold_begin();
    probe_hold_publish(&r); // the parent's probe is in the middle of its calls
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10); // a wait on the parent's hold would never end: killed, the test fails
        probe_hold_after_fork_child();
        bool ok = probe_held() == nullptr;
        wait_out_probes(&r);
        probe_hold_begin(); // the child's own sampler can probe
        probe_hold_end();
        _exit(ok ? 0 : 1);
    }
    REQUIRE(pid > 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(probe_held() == &r); // the parent's hold is untouched
    probe_hold_end();
}
