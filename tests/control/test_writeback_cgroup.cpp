// test_writeback_cgroup.cpp — the writeback pacer unmaps live disk regions
// and writes them back while other threads write, realloc and free them
// (shim/engine/tiering/writeback.cpp): every page must still hold what was written. Runs
// a helper in a fresh 160 MiB memory cgroup, where 8 threads keep about
// 500 MiB of regions live, so reclaim runs and the pacer's passes are due.
// And a 256 MiB buffer zeroed and then filled by two threads in a 768 MiB
// cgroup, after the pacer left its dirty zeros unwritten
// (tiering/zero_extents.h): every store must be there, and the zeros must
// have been left unwritten where the machine allows it (userfaultfd for
// kernel faults, the spill directory on ext4).
#include "memcg.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <sys/vfs.h>
#include <unistd.h>

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

TEST_CASE("a buffer zeroed, then filled by two threads, in a small cgroup: the pacer leaves zeros unwritten and loses no store") {
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    REQUIRE(cg);
    // Room for the 128 MiB source and the 256 MiB of zeros, twice over: the
    // pacer's pass is due (the room left is under twice the dirty bytes)
    // long before reclaim wakes the kernel's flushers, which would write the
    // zeros first. In 512 MiB, the prefetch worker's reads ahead brought
    // reclaim near: 32 MiB zeroed in 1 of 6 runs; in 768 MiB, 250-256 of
    // 256 in 4 of 4 beside a CI run.
    REQUIRE(cg->set_limit(768 * MiB));
    std::string stats = spill_dir() + "/../zero-then-fill.jsonl";
    unlink(stats.c_str());
    std::string procs = cg->procs_file();
    SpawnOptions opts;
    opts.set_env = {"SPILLWAY_STATS=" + stats};
    opts.before_exec = [&] {
        if (!join_cgroup(procs.c_str())) _exit(3);
    };
    int status = -1;
    std::string out = run_helper({"zero-then-fill", "128"}, &status, opts);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(out.find("intact=1") != std::string::npos);
    std::ifstream f(stats);
    std::stringstream s;
    s << f.rdbuf();
    std::string line = s.str();
    INFO(line);
    size_t at = line.find("\"zeroed_bytes\":");
    REQUIRE(at != std::string::npos);
    unsigned long long zeroed = strtoull(line.c_str() + at + 15, nullptr, 10);
    struct statfs fs;
    REQUIRE(statfs(spill_dir().c_str(), &fs) == 0);
    if (userfaultfd_level() == 2 && fs.f_type == 0xEF53) CHECK(zeroed > 0);
    else CHECK(zeroed == 0);
    unlink(stats.c_str());
}
