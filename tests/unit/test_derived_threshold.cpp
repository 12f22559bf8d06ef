// test_derived_threshold.cpp — the threshold a job gets when it names none:
// limit -> threshold (fraction, floor, ceiling), the user's setting winning,
// no limit -> the 64 MiB default, the limit read from cgroup v1 and v2 files
// (a fake tree), the tightest ancestor binding; and the words the "active:"
// line gives for each origin.
#include "derived_threshold.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

using namespace spillway;

namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

void put(const std::string &path, const std::string &text) {
    std::string dir = path.substr(0, path.rfind('/'));
    REQUIRE(std::system(("mkdir -p '" + dir + "'").c_str()) == 0);
    std::ofstream(path) << text;
}

struct FakeRoot {
    std::string root;
    FakeRoot() {
        char tmpl[] = "/tmp/spillway-derived.XXXXXX";
        REQUIRE(mkdtemp(tmpl));
        root = tmpl;
    }
    ~FakeRoot() { (void)std::system(("rm -rf '" + root + "'").c_str()); }
};

std::string origin_text(ThresholdOrigin origin, uint64_t limit) {
    char out[160];
    int n = describe_threshold_origin(out, sizeof out, origin, limit);
    REQUIRE(n > 0);
    REQUIRE((size_t)n < sizeof out);
    return out;
}

} // namespace

TEST_CASE("derived threshold: an eighth of the limit, whole MiB, between 16 MiB and the default") {
    CHECK(threshold_for_limit(384 * MiB) == 48 * MiB); // XGBoost's limit (tests/bench/JOBS.md)
    CHECK(threshold_for_limit(256 * MiB) == 32 * MiB);
    CHECK(threshold_for_limit(300 * MiB) == 37 * MiB); // 37.5 MiB, rounded down
    CHECK(threshold_for_limit(511 * MiB) == 63 * MiB);
    CHECK(threshold_for_limit(512 * MiB) == kDefaultThreshold); // from here on: today's default
    CHECK(threshold_for_limit(640 * MiB) == kDefaultThreshold);
    CHECK(threshold_for_limit(64 * GiB) == kDefaultThreshold);
    CHECK(threshold_for_limit(128 * MiB) == kDerivedThresholdFloor);
    CHECK(threshold_for_limit(100 * MiB) == kDerivedThresholdFloor);
    CHECK(threshold_for_limit(4096) == kDerivedThresholdFloor);
    CHECK(kDerivedThresholdFloor >= kMinThreshold); // a derived threshold is always a valid one
}

TEST_CASE("derived threshold: no limit is the default") {
    CHECK(threshold_for_limit(0) == kDefaultThreshold);
}

TEST_CASE("derived threshold: the user's threshold wins, from the config or the environment") {
    CHECK(effective_threshold(ThresholdOrigin::environment, 128 * MiB, 384 * MiB) == 128 * MiB);
    CHECK(effective_threshold(ThresholdOrigin::config, 1 * MiB, 384 * MiB) == 1 * MiB);
    CHECK(effective_threshold(ThresholdOrigin::config, kDefaultThreshold, 256 * MiB) == kDefaultThreshold);
    CHECK(effective_threshold(ThresholdOrigin::not_given, kDefaultThreshold, 384 * MiB) == 48 * MiB);
    CHECK(effective_threshold(ThresholdOrigin::not_given, kDefaultThreshold, 0) == kDefaultThreshold);
}

TEST_CASE("memory limit: cgroup v2, memory.max of the job's cgroup") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "0::/job\n");
    put(f.root + "/sys/fs/cgroup/job/memory.max", "402653184\n");
    put(f.root + "/sys/fs/cgroup/memory.max", "max\n");
    CHECK(read_memory_limit(f.root.c_str()) == 384 * MiB);
}

TEST_CASE("memory limit: cgroup v2, the tightest ancestor binds; max is no limit") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "0::/pod/job/step\n");
    put(f.root + "/sys/fs/cgroup/pod/job/step/memory.max", "max\n");
    put(f.root + "/sys/fs/cgroup/pod/job/memory.max", "1073741824\n");
    put(f.root + "/sys/fs/cgroup/pod/memory.max", "268435456\n");
    CHECK(read_memory_limit(f.root.c_str()) == 256 * MiB);
}

TEST_CASE("memory limit: cgroup v1, the memory controller's line, v1's unlimited ignored") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n");
    put(f.root + "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "402653184\n");
    put(f.root + "/sys/fs/cgroup/memory/docker/memory.limit_in_bytes", "9223372036854771712\n");
    put(f.root + "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    // A unified hierarchy listed too (a hybrid host): v1's memory controller binds.
    put(f.root + "/sys/fs/cgroup/memory.max", "1048576\n");
    CHECK(read_memory_limit(f.root.c_str()) == 384 * MiB);
}

TEST_CASE("memory limit: cgroup v1, a parent's limit tighter than the job's") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "4:memory:/batch/job\n");
    put(f.root + "/sys/fs/cgroup/memory/batch/job/memory.limit_in_bytes", "9223372036854771712\n");
    put(f.root + "/sys/fs/cgroup/memory/batch/memory.limit_in_bytes", "536870912\n");
    CHECK(read_memory_limit(f.root.c_str()) == 512 * MiB);
}

TEST_CASE("memory limit: none anywhere, or nothing readable, is 0") {
    FakeRoot f;
    CHECK(read_memory_limit(f.root.c_str()) == 0); // no /proc/self/cgroup
    put(f.root + "/proc/self/cgroup", "0::/\n");
    CHECK(read_memory_limit(f.root.c_str()) == 0); // no memory.max
    put(f.root + "/sys/fs/cgroup/memory.max", "max\n");
    CHECK(read_memory_limit(f.root.c_str()) == 0);
    put(f.root + "/sys/fs/cgroup/memory.max", "garbage\n");
    CHECK(read_memory_limit(f.root.c_str()) == 0);
    put(f.root + "/proc/self/cgroup", "3:cpu:/x\n"); // neither v1's memory nor v2's line
    CHECK(read_memory_limit(f.root.c_str()) == 0);
}

TEST_CASE("memory limit: a cgroup path too long for the reader's buffer is no limit") {
    FakeRoot f;
    std::string path = "/" + std::string(1100, 'p');
    put(f.root + "/proc/self/cgroup", "0::" + path + "\n");
    put(f.root + "/sys/fs/cgroup/memory.max", "1048576\n");
    CHECK(read_memory_limit(f.root.c_str()) == 0);
}

TEST_CASE("memory limit: this machine's own files can be read") {
    uint64_t limit = read_memory_limit(""); // limited or not, never a crash
    CHECK(threshold_for_limit(limit) >= kDerivedThresholdFloor);
    CHECK(threshold_for_limit(limit) <= kDefaultThreshold);
}

TEST_CASE("derived threshold: the active line says where the threshold came from") {
    CHECK(origin_text(ThresholdOrigin::environment, 384 * MiB) == "SPILLWAY_THRESHOLD");
    CHECK(origin_text(ThresholdOrigin::config, 384 * MiB) == "the config file");
    CHECK(origin_text(ThresholdOrigin::not_given, 0) == "the default, no memory limit");
    CHECK(origin_text(ThresholdOrigin::not_given, 384 * MiB) == "1/8 of the 384MiB memory limit");
    CHECK(origin_text(ThresholdOrigin::not_given, 2 * GiB) ==
          "the default, 1/8 of the 2GiB memory limit is above it");
    CHECK(origin_text(ThresholdOrigin::not_given, 96 * MiB) ==
          "the 16MiB floor, 1/8 of the 96MiB memory limit is below it");
    CHECK(origin_text(ThresholdOrigin::not_given, 128 * MiB) == "1/8 of the 128MiB memory limit");
}
