// test_random_access_cgroup.cpp — proves spillway_alloc(SPILLWAY_RANDOM_ACCESS)
// decides by the cgroup's headroom: memory while the limit leaves room for
// the buffer plus the reserve, disk (the logged fallback) when it does not.
// Each case runs a helper process in a fresh memory cgroup with a limit.
#include "memcg.h"
#include "support.h"

#include "spillway.h"

#include <catch2/catch.hpp>

using namespace control_test;

static std::string alloc_random_in_cgroup(uint64_t limit, size_t size) {
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    REQUIRE(cg);
    REQUIRE(cg->set_limit(limit));
    std::string procs = cg->procs_file();
    SpawnOptions opts;
    opts.before_exec = [&] {
        if (!join_cgroup(procs.c_str())) _exit(3);
    };
    int status = -1;
    std::string out = run_helper({"alloc-random", std::to_string(size)}, &status, opts);
    REQUIRE(status == 0);
    return out;
}

TEST_CASE("random access goes to memory while the cgroup has headroom") {
    // 8 GiB limit, 1 GiB buffer: room for it and the 256 MiB reserve.
    CHECK(alloc_random_in_cgroup(8 * GiB, 1 * GiB) == "backing=2\n");
}

TEST_CASE("random access falls back to disk when the cgroup has no headroom") {
    // 512 MiB limit, 1 GiB buffer: memory cannot hold it.
    CHECK(alloc_random_in_cgroup(512 * MiB, 1 * GiB) == "backing=1\n");
}
