// test_readahead_window.cpp — the device read-ahead lookup: a whole disk, a
// partition (its disk's queue), a bdi-only device, nothing known; and the
// real file system under /var/tmp against what sysfs says.
#include "test_tmp.h"
#include "os/readahead_window.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

using namespace spillway;

namespace {
struct FakeSysfs {
    std::string root;
    FakeSysfs() {
        char tmpl[] = "/tmp/spillway-unit-sysfs.XXXXXX";
        root = mkdtemp(tmpl);
    }
    ~FakeSysfs() { std::system(("rm -rf '" + root + "'").c_str()); }
    void mkdirs(const std::string &rel) { std::system(("mkdir -p '" + root + "/" + rel + "'").c_str()); }
    void write(const std::string &rel, const char *text) {
        FILE *f = fopen((root + "/" + rel).c_str(), "w");
        REQUIRE(f);
        fputs(text, f);
        fclose(f);
    }
    void link(const std::string &target, const std::string &rel) {
        REQUIRE(symlink(target.c_str(), (root + "/" + rel).c_str()) == 0);
    }
};
} // namespace

TEST_CASE("read-ahead of a whole disk, a partition, a bdi, and an unknown device", "[readahead_window]") {
    FakeSysfs fs;
    // As sysfs lays them out: /sys/dev/block/M:m links into /sys/devices,
    // a partition's directory sits inside its disk's.
    fs.mkdirs("devices/virtual/block/loop3/queue");
    fs.write("devices/virtual/block/loop3/queue/read_ahead_kb", "128\n");
    fs.mkdirs("devices/pci/virtio1/block/vda/vda1");
    fs.mkdirs("devices/pci/virtio1/block/vda/queue");
    fs.write("devices/pci/virtio1/block/vda/queue/read_ahead_kb", "8192\n");
    fs.mkdirs("dev/block");
    fs.link(fs.root + "/devices/virtual/block/loop3", "dev/block/7:3");
    fs.link(fs.root + "/devices/pci/virtio1/block/vda/vda1", "dev/block/254:1");
    fs.mkdirs("class/bdi/0:52");
    fs.write("class/bdi/0:52/read_ahead_kb", "4096\n");

    CHECK(read_ahead_kb_of_dev(makedev(7, 3), fs.root.c_str()) == 128);
    CHECK(read_ahead_kb_of_dev(makedev(254, 1), fs.root.c_str()) == 8192); // the disk's queue
    CHECK(read_ahead_kb_of_dev(makedev(0, 52), fs.root.c_str()) == 4096);
    CHECK(read_ahead_kb_of_dev(makedev(0, 99), fs.root.c_str()) == 0); // unknown: 0, never a guess
    // The sampler's choice follows the figure.
    CHECK(read_ahead_kb_of_dev(makedev(254, 1), fs.root.c_str()) >= kKernelStreamMinKb);
    CHECK(read_ahead_kb_of_dev(makedev(7, 3), fs.root.c_str()) < kKernelStreamMinKb);
}

TEST_CASE("read-ahead of a real file agrees with the device's sysfs entry", "[readahead_window]") {
    std::string path = test::tmp_template("spillway-unit-ra");
    int fd = mkstemp(path.data());
    REQUIRE(fd >= 0);
    unlink(path.c_str());
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    uint64_t got = read_ahead_kb_of_fd(fd);
    char queue[128];
    snprintf(queue, sizeof queue, "/sys/dev/block/%u:%u/queue/read_ahead_kb", major(st.st_dev), minor(st.st_dev));
    if (access(queue, R_OK) != 0)
        snprintf(queue, sizeof queue, "/sys/dev/block/%u:%u/../queue/read_ahead_kb", major(st.st_dev),
                 minor(st.st_dev));
    FILE *f = fopen(queue, "r");
    if (f) {
        unsigned long want = 0;
        REQUIRE(fscanf(f, "%lu", &want) == 1);
        fclose(f);
        CHECK(got == want);
    } else {
        CHECK(got == 0); // overlay or no sysfs: unknown, reported as 0
    }
    close(fd);
    CHECK(read_ahead_kb_of_fd(-1) == 0);
}
