// shm_calls.cpp — the interposed shared-memory calls keep every behaviour a
// program relies on while large segments move to reserved spill files:
// O_EXCL collisions, the fd number, fstat size, ftruncate grow and shrink,
// a second open of the name seeing the same bytes, unlink while mapped, and
// small segments left in /dev/shm untouched. Run under the shim with a
// private SPILLWAY_DIR; [shm] min_size defaults to 64 MiB.
#include "check.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

static const off_t MiB = 1 << 20;

static bool on_tmpfs(int fd) {
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

static std::string spill_file(const std::string &name) {
    return std::string(getenv("SPILLWAY_DIR")) + "/spillway-shm-" + name;
}

int main() {
    std::string name = "spillway-test-" + std::to_string(getpid());
    std::string path = "/dev/shm/" + name;

    // Create, collide, size: the descriptor number survives the redirect.
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    errno = 0;
    CHECK(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600) == -1 && errno == EEXIST);
    CHECK(ftruncate(fd, 96 * MiB) == 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 96 * MiB);
    CHECK(!on_tmpfs(fd));                                  // it is the spill file now
    CHECK((uint64_t)st.st_blocks * 512 >= (uint64_t)(96 * MiB)); // reserved, not sparse
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);         // shm_open's O_CLOEXEC kept
    CHECK(stat(path.c_str(), &st) == 0 && st.st_size == 0); // the name stays, empty
    CHECK(access(spill_file(name).c_str(), F_OK) == 0);

    unsigned char *p = (unsigned char *)mmap(nullptr, 96 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    p[0] = 11;
    p[96 * MiB - 1] = 22;

    // A second open of the name (as another process would) sees the bytes.
    int again = open(path.c_str(), O_RDWR);
    CHECK(again >= 0 && again != fd);
    unsigned char *q = (unsigned char *)mmap(nullptr, 96 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, again, 0);
    CHECK(q != MAP_FAILED && q[0] == 11 && q[96 * MiB - 1] == 22);
    q[1] = 33;
    CHECK(p[1] == 33);

    // Grow (reserved again) and shrink.
    CHECK(ftruncate(fd, 160 * MiB) == 0);
    CHECK(fstat(fd, &st) == 0 && st.st_size == 160 * MiB);
    CHECK(ftruncate(fd, 80 * MiB) == 0);
    CHECK(fstat(again, &st) == 0 && st.st_size == 80 * MiB);

    // Unlink while mapped: both names go, the mapping stays valid.
    CHECK(shm_unlink(name.c_str()) == 0);
    CHECK(access(path.c_str(), F_OK) != 0);
    CHECK(access(spill_file(name).c_str(), F_OK) != 0);
    CHECK(p[0] == 11 && q[1] == 33);
    munmap(p, 96 * MiB);
    munmap(q, 96 * MiB);
    close(fd);
    close(again);

    // Small segments stay in /dev/shm, untouched.
    std::string small = name + "-small";
    int s = shm_open(small.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(s >= 0 && ftruncate(s, 4 * MiB) == 0 && on_tmpfs(s));
    CHECK(access(spill_file(small).c_str(), F_OK) != 0);
    CHECK(shm_unlink(small.c_str()) == 0);
    close(s);

    // open(2) of a /dev/shm path with O_CREAT is redirected too (PyTorch's
    // file_system strategy), and a non-/dev/shm file is never touched.
    std::string direct = "/dev/shm/" + name + "-direct";
    int d = open(direct.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(d >= 0 && ftruncate(d, 70 * MiB) == 0 && !on_tmpfs(d));
    CHECK(unlink(direct.c_str()) == 0 && access(spill_file(name + "-direct").c_str(), F_OK) != 0);
    close(d);
    std::string plain = std::string(getenv("SPILLWAY_DIR")) + "/../spillway-plain-" + std::to_string(getpid());
    int f = open(plain.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(f >= 0 && ftruncate(f, 70 * MiB) == 0);
    CHECK(fstat(f, &st) == 0 && st.st_blocks == 0); // still sparse: we did not touch it
    close(f);
    unlink(plain.c_str());

    // openat and unlinkat relative to a descriptor of /dev/shm are
    // redirected as the absolute path is; relative to a directory on disk
    // (which the shim tells apart by its filesystem, not its path) never.
    int shm_dir = open("/dev/shm", O_RDONLY | O_DIRECTORY);
    CHECK(shm_dir >= 0);
    std::string rel = name + "-at";
    int a = openat(shm_dir, rel.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(a >= 0 && ftruncate(a, 70 * MiB) == 0 && !on_tmpfs(a));
    CHECK(access(spill_file(rel).c_str(), F_OK) == 0);
    int a2 = openat(shm_dir, rel.c_str(), O_RDWR);
    CHECK(a2 >= 0 && fstat(a2, &st) == 0 && st.st_size == 70 * MiB && !on_tmpfs(a2));
    CHECK(unlinkat(shm_dir, rel.c_str(), 0) == 0 && access(spill_file(rel).c_str(), F_OK) != 0);
    close(a);
    close(a2);
    close(shm_dir);
    int disk_dir = open(getenv("SPILLWAY_DIR"), O_RDONLY | O_DIRECTORY);
    CHECK(disk_dir >= 0);
    std::string on_disk = "plain-at-" + std::to_string(getpid());
    int g = openat(disk_dir, on_disk.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(g >= 0 && ftruncate(g, 70 * MiB) == 0);
    CHECK(fstat(g, &st) == 0 && st.st_blocks == 0); // still sparse: we did not touch it
    CHECK(unlinkat(disk_dir, on_disk.c_str(), 0) == 0);
    close(g);
    close(disk_dir);
    puts("shm_calls: ok");
    return 0;
}
