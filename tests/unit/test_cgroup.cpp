// test_cgroup.cpp — headroom from cgroup v1 and v2 files (a fake tree), the
// tightest ancestor binding, reclaimable page cache not counted as used.
#include "os/cgroup.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace spillway;

static void put(const std::string &path, const std::string &text) {
    std::string dir = path.substr(0, path.rfind('/'));
    std::system(("mkdir -p " + dir).c_str());
    std::ofstream(path) << text;
}

struct FakeRoot {
    std::string root;
    FakeRoot() {
        char tmpl[] = "/tmp/spillway-cgroup.XXXXXX";
        root = mkdtemp(tmpl);
        cgroup_set_root_for_tests(root.c_str());
    }
    ~FakeRoot() {
        cgroup_set_root_for_tests(nullptr);
        std::system(("rm -rf " + root).c_str());
    }
};

TEST_CASE("cgroup v2: limit minus unreclaimable usage") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "0::/job/step\n");
    put(f.root + "/sys/fs/cgroup/job/step/memory.max", "max\n");
    put(f.root + "/sys/fs/cgroup/job/step/memory.current", "100\n");
    put(f.root + "/sys/fs/cgroup/job/memory.max", "1000\n");
    put(f.root + "/sys/fs/cgroup/job/memory.current", "600\n");
    put(f.root + "/sys/fs/cgroup/job/memory.stat", "anon 300\nfile 250\nshmem 50\n");
    MemoryFigures m = read_memory_figures();
    REQUIRE(m.limited);
    CHECK(m.limit == 1000);
    CHECK(m.usage == 600);
    CHECK(m.reclaimable == 200); // file minus shmem: memfd is not reclaimable
    CHECK(m.where.find("/sys/fs/cgroup/job") != std::string::npos);
    CHECK(m.unreclaimable() == 400);
    CHECK(m.room() == 600);
}

TEST_CASE("cgroup: the tightest ancestor binds, by room left, not by limit") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "0::/job/step\n");
    // The step has the lower limit but more room: its parent binds.
    put(f.root + "/sys/fs/cgroup/job/step/memory.max", "800\n");
    put(f.root + "/sys/fs/cgroup/job/step/memory.current", "100\n");
    put(f.root + "/sys/fs/cgroup/job/step/memory.stat", "file 0\nshmem 0\n");
    put(f.root + "/sys/fs/cgroup/job/memory.max", "1000\n");
    put(f.root + "/sys/fs/cgroup/job/memory.current", "900\n");
    put(f.root + "/sys/fs/cgroup/job/memory.stat", "file 100\nshmem 0\n");
    MemoryFigures m = read_memory_figures();
    REQUIRE(m.limited);
    CHECK(m.limit == 1000);
    CHECK(m.room() == 200);
}

TEST_CASE("cgroup: room and unreclaimable at their edges") {
    MemoryFigures over{true, 100, 150, 20, "x"}; // over its limit (v1 may report it)
    CHECK(over.unreclaimable() == 130);
    CHECK(over.room() == 0);
    MemoryFigures odd{true, 100, 10, 40, "x"}; // figures read at different instants
    CHECK(odd.unreclaimable() == 0);
    CHECK(odd.room() == 100);
    CHECK(MemoryFigures{}.room() == UINT64_MAX); // no limit
}

TEST_CASE("cgroup v1: memory controller line, total_cache and total_shmem") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "5:cpu:/\n4:memory:/docker/abc\n0::/\n");
    std::string dir = f.root + "/sys/fs/cgroup/memory/docker/abc";
    put(dir + "/memory.limit_in_bytes", "536870912\n");
    put(dir + "/memory.usage_in_bytes", "436870912\n");
    put(dir + "/memory.stat", "cache 1\ntotal_cache 100000000\ntotal_shmem 0\n");
    put(f.root + "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    MemoryFigures m = read_memory_figures();
    REQUIRE(m.limited);
    CHECK(m.limit == 536870912);
    CHECK(m.reclaimable == 100000000);
    CHECK(m.room() == 200000000);
}

TEST_CASE("no limit anywhere means unlimited") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "0::/\n");
    put(f.root + "/sys/fs/cgroup/memory.max", "max\n");
    CHECK_FALSE(read_memory_figures().limited);
}

TEST_CASE("this machine's own figures can be read") {
    MemoryFigures m = read_memory_figures(); // real /proc: limited or not, never a crash
    if (m.limited) CHECK(m.usage >= m.reclaimable);
    CHECK(memory_headroom() > 0);
}

TEST_CASE("this process's anonymous memory: resident less shared pages of statm") {
    FakeRoot fake;
    put(fake.root + "/proc/self/statm", "5000 400 100 5 0 300 0\n");
    CHECK(process_anon_bytes() == 300 * (uint64_t)sysconf(_SC_PAGESIZE));
    put(fake.root + "/proc/self/statm", "garbage\n");
    CHECK(process_anon_bytes() == 0);
}

TEST_CASE("this process's anonymous memory counts pages written, not a file's pages read") {
    constexpr size_t kLen = 64 << 20;
    const uint64_t before = process_anon_bytes();
    REQUIRE(before > 0);
    auto *anon = (char *)mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(anon != MAP_FAILED);
    memset(anon, 1, kLen);
    const uint64_t written = process_anon_bytes();
    CHECK(written >= before + kLen - (8 << 20)); // other threads may free a little meanwhile
    char tmpl[] = "/tmp/spillway-statm.XXXXXX";
    int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    unlink(tmpl);
    REQUIRE(ftruncate(fd, kLen) == 0);
    auto *file = (const char *)mmap(nullptr, kLen, PROT_READ, MAP_SHARED, fd, 0);
    REQUIRE(file != MAP_FAILED);
    unsigned sum = 0;
    for (size_t i = 0; i < kLen; i += 4096) sum += (unsigned char)file[i];
    CHECK(sum == 0);
    CHECK(process_anon_bytes() < written + (8 << 20)); // page cache: shared, not anonymous
    munmap((void *)file, kLen);
    close(fd);
    munmap(anon, kLen);
}

TEST_CASE("cgroup v2 pressure: memory.events counters and memory.pressure PSI") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "0::/job\n");
    std::string dir = f.root + "/sys/fs/cgroup/job";
    put(dir + "/memory.max", "1073741824\n");
    put(dir + "/memory.current", "900000000\n");
    put(dir + "/memory.stat", "anon 800000000\nfile 100000000\nshmem 0\n");
    put(dir + "/memory.events", "low 0\nhigh 3\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n");
    put(dir + "/memory.pressure", "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\n"
                                  "full avg10=4.25 avg60=1.00 avg300=0.00 total=45\n");
    MemoryFigures m = read_memory_figures();
    REQUIRE(m.limited);
    PressureSignals p = read_pressure_signals(m.where);
    CHECK(p.readable);
    CHECK(p.high == 3);
    CHECK(p.max == 17);
    CHECK(p.oom == 1);
    CHECK(p.oom_kill == 1);
    CHECK(p.some_avg10 == Approx(12.5));
    CHECK(p.full_avg10 == Approx(4.25));
}

TEST_CASE("cgroup v1 has no pressure files: only usage against the limit is used") {
    FakeRoot f;
    put(f.root + "/proc/self/cgroup", "4:memory:/job\n");
    std::string dir = f.root + "/sys/fs/cgroup/memory/job";
    put(dir + "/memory.limit_in_bytes", "1073741824\n");
    put(dir + "/memory.usage_in_bytes", "100\n");
    put(dir + "/memory.stat", "total_cache 0\ntotal_shmem 0\n");
    MemoryFigures m = read_memory_figures();
    REQUIRE(m.limited);
    CHECK_FALSE(read_pressure_signals(m.where).readable);
    CHECK_FALSE(read_pressure_signals("").readable);
}
