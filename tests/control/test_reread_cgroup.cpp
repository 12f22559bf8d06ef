// test_reread_cgroup.cpp — a re-read of more buffers than the memory limit,
// in order (issue 26's live job, small), while the detector pages out what
// the reader passed, each buffer whole once the reader has left it
// (shim/engine/access/sampler.cpp, page_out_left; prefetch_worker.h,
// drop_from), and the writeback pacer leaves out the buffers nothing
// touched since it wrote them (tiering/writeback.h): every word must come
// back as written. Runs tiering_job's "reread" in a fresh 192 MiB cgroup:
// 12 buffers of 64 MiB, all on disk.
//
// What is cached behind the reader and ahead of it is printed, not
// asserted: it depends on when the detector's thread (SCHED_BATCH) gets a
// CPU. Measured at load 12 on 2 cores: the buffers passed still cached
// after the pause were 0, 70 and 136 MiB in 3 runs with these rules (0, 64
// and 65 MiB in 3 before them); the last buffer cached when the reader
// reached it 4-64 MiB in 11 runs with them (8-64 MiB in 10 before).
// tests/bench/live_phases.sh measures the effect at 8 GiB in 1 GiB
// (bytes read back from the device).
#include "memcg.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <unistd.h>

using namespace control_test;

TEST_CASE("reading back 4x the limit in order while what the reader passed is paged out: every word intact") {
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    REQUIRE(cg);
    REQUIRE(cg->set_limit(192 * MiB));
    SpawnOptions o;
    o.program = job_path();
    o.set_env = {"SPILLWAY_LOG=info"};
    std::string procs = cg->procs_file();
    o.before_exec = [procs] {
        if (!join_cgroup(procs.c_str())) _exit(3);
    };
    int status = -1;
    std::string out = run_helper({"reread", "12", "64"}, &status, o);
    INFO(out);
    REQUIRE(status == 0); // not OOM-killed: 768 MiB live in 192 MiB
    auto k = keys(out);
    CHECK(k["disk"] == "1");
    CHECK(k["intact"] == "1");
    CHECK(!k["passed_resident_mib"].empty());
}
