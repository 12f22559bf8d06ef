// test_fd_policy.cpp — where the shim's descriptors land: its own above the
// two numbers kept for libunwind's pipe, the pipe on them, a full table
// falling back to 3 and up, and the table grown without a descriptor left.
#include "fd_policy.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

using namespace spillway;

namespace {
int fresh() { return open("/dev/null", O_RDONLY | O_CLOEXEC); }
bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }
} // namespace

TEST_CASE("fd_policy: the shim's descriptors sit above libunwind's two numbers") {
    int floor = high_fd_floor();
    REQUIRE(floor >= 3);
    REQUIRE(!is_open(floor));
    REQUIRE(!is_open(floor + 1));
    int low = fresh();
    REQUIRE(low >= 0);
    REQUIRE(low < floor);
    int moved = move_high(low);
    CHECK(moved >= floor + kUnwindPipeSlots);
    CHECK(!is_open(low)); // the low number is given back
    CHECK((fcntl(moved, F_GETFD) & FD_CLOEXEC));
    int pipe_end = move_to_unwind_slots(fresh());
    CHECK(pipe_end == floor);
    int other_end = move_to_unwind_slots(fresh());
    CHECK(other_end == floor + 1);
    close(moved);
    close(pipe_end);
    close(other_end);
}

TEST_CASE("fd_policy: a descriptor already high, or none, is left as it is") {
    CHECK(move_high(-1) == -1);
    int high = fcntl(0, F_DUPFD_CLOEXEC, high_fd_floor() + 40);
    REQUIRE(high >= 0);
    CHECK(move_high(high) == high);
    close(high);
}

TEST_CASE("fd_policy: grow_fd_table leaves no descriptor open") {
    REQUIRE(!is_open(high_fd_floor()));
    grow_fd_table();
    CHECK(!is_open(high_fd_floor()));
}
