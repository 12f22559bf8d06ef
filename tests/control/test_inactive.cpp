// test_inactive.cpp — proves the control API degrades to harmless answers
// in a process where libspillway is loaded but not routing (here: the
// address-space limit leaves no room for its arena, so start-up gives up
// with a warning): spillway_is_active is 0, nothing is a region, the calls
// that act on a region refuse with -EINVAL, spillway_alloc still returns
// usable memory (plain malloc) and spillway_map refuses with ENOSYS.
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <sys/resource.h>

using namespace control_test;

TEST_CASE("with the shim loaded but inactive, every call is a harmless refusal") {
    SpawnOptions limited;
    limited.before_exec = [] {
        // Room for the process and its engine (about 41 MB) and two 8 MiB
        // blocks, not for the arena's first 32 MiB step as well (measured:
        // inactive from 52 to 72 MB, active at 80).
        struct rlimit as = {size_t(60) << 20, size_t(60) << 20};
        setrlimit(RLIMIT_AS, &as);
    };
    int status = -1;
    std::string out = run_helper({"inactive"}, &status, limited);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(out == "active=0\n"
                 "backing=0\n"
                 "disk=0\n"
                 "release=-22\n"
                 "spill=-22\n"
                 "export=-22\n"
                 "alloc=usable\n"
                 "alloc_backing=0\n"
                 "map=null errno=38\n");
}

TEST_CASE("with the shim inactive, REQUIRE_DISK and the reference API's queries refuse") {
    SpawnOptions limited;
    limited.before_exec = [] {
        // Room for the process and its engine (about 41 MB) and two 8 MiB
        // blocks, not for the arena's first 32 MiB step as well (measured:
        // inactive from 52 to 72 MB, active at 80).
        struct rlimit as = {size_t(60) << 20, size_t(60) << 20};
        setrlimit(RLIMIT_AS, &as);
    };
    int status = -1;
    std::string out = run_helper({"inactive-queries"}, &status, limited);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(out == "require_disk=null errno=38\n"
                 "threshold_is_max=1\n"
                 "can_spill=0\n"
                 "memory_fits=-38\n"
                 "region=-22\n");
}
