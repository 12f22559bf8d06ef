// test_writeback_cgroup.cpp — the writeback pacer unmaps live disk regions
// and writes them back while other threads write, realloc and free them
// (shim/engine/tiering/writeback.cpp): every page must still hold what was written. Runs
// a helper in a fresh 160 MiB memory cgroup, where 8 threads keep about
// 500 MiB of regions live, so reclaim runs and the pacer's passes are due.
#include "memcg.h"
#include "support.h"

#include <catch2/catch.hpp>

using namespace control_test;

TEST_CASE("regions written by 8 threads in a small cgroup stay intact while the pacer unmaps and writes them") {
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    REQUIRE(cg);
    REQUIRE(cg->set_limit(160 * MiB));
    std::string procs = cg->procs_file();
    SpawnOptions opts;
    opts.before_exec = [&] {
        if (!join_cgroup(procs.c_str())) _exit(3);
    };
    int status = -1;
    std::string out = run_helper({"write-churn", "40"}, &status, opts);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(out.find("writeback_thread=1") != std::string::npos); // the pacer ran
    CHECK(out.find("intact=1") != std::string::npos);
}
