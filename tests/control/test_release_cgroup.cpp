// test_release_cgroup.cpp — proves release is visible where a memory limit
// looks: a process in a fresh memory cgroup writes a 1 GiB disk region (the
// cgroup's own usage figure rises by about 1 GiB: page cache is charged),
// releases it, and the usage figure falls by at least 90% of the region,
// with the data intact afterwards. v1 reads memory.usage_in_bytes, v2
// memory.current. The cgroup is removed afterwards.
#include "memcg.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <sstream>

using namespace control_test;

static std::map<std::string, long long> parse_fields(const std::string &line) {
    std::map<std::string, long long> out;
    std::istringstream in(line);
    std::string word;
    while (in >> word) {
        size_t eq = word.find('=');
        if (eq != std::string::npos) out[word.substr(0, eq)] = std::stoll(word.substr(eq + 1));
    }
    return out;
}

TEST_CASE("releasing a written 1 GiB region lowers the cgroup's usage by at least 90% of it") {
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    REQUIRE(cg);
    const size_t size = 1 * GiB;
    std::string procs = cg->procs_file();
    SpawnOptions opts;
    opts.before_exec = [&] {
        if (!join_cgroup(procs.c_str())) _exit(3);
    };
    int status = -1;
    std::string out = run_helper({"cgroup-release", std::to_string(size), cg->usage_file()}, &status, opts);
    INFO("cgroup " << cg->dir() << (cg->v2() ? " (v2)" : " (v1)") << "; helper said: " << out);
    REQUIRE(status == 0);
    auto f = parse_fields(out);
    CHECK(f["backing"] == 1);
    CHECK(f["rc"] == 0);
    CHECK(f["intact"] == 1);
    CHECK(f["res_written"] > (long long)(size * 9 / 10));
    CHECK(f["res_released"] < (long long)(size / 20));
    // The writing charged this cgroup (the pages are its page cache)...
    CHECK(f["written"] - f["before"] >= (long long)(size * 9 / 10));
    // ...and the release took the charge back off.
    CHECK(f["written"] - f["released"] >= (long long)(size * 9 / 10));
}
