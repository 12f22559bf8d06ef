// test_proc_scan.cpp — proc_scan.cpp: a file mapped by another process is
// seen by device and inode (even after it is unlinked), with the process
// named; a file only held open is in `held` but not in `mapped_by`.
#include "proc_scan.h"
#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace spillway::cli;

namespace {

// Forks a child that maps (or only opens) path, then waits to be killed.
pid_t hold(const std::string &path, bool map) {
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_NAME, map ? "cli-mapper" : "cli-opener");
        int fd = open(path.c_str(), O_RDWR);
        if (map && mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) _exit(1);
        if (map) close(fd);
        char c = 1;
        if (write(ready[1], &c, 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c;
    REQUIRE(read(ready[0], &c, 1) == 1);
    close(ready[0]);
    close(ready[1]);
    return pid;
}

void stop(pid_t pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}

FileId id_of(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    FileId id = file_id_of(fd, st);
    close(fd);
    return id;
}

} // namespace

TEST_CASE("a mapping is found by device and inode, and survives an unlink") {
    TempDir dir;
    std::string path = dir.path + "/mapped";
    int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(ftruncate(fd, 4096) == 0);
    close(fd);
    FileId id = id_of(path);
    pid_t child = hold(path, true);
    unlink(path.c_str());

    ProcessScan scan = scan_processes(true);
    REQUIRE(scan.mapped_by.count(id));
    CHECK(scan.mapped_by[id].count(child));
    CHECK(scan.describe({child}) == std::to_string(child) + " (cli-mapper)");
    REQUIRE(scan.held.count(id));
    CHECK(scan.held[id].shown_path.find("(deleted)") != std::string::npos);
    stop(child);
}

TEST_CASE("an open but unmapped file is held, not mapped") {
    TempDir dir;
    std::string path = dir.path + "/opened";
    close(open(path.c_str(), O_RDWR | O_CREAT, 0600));
    FileId id = id_of(path);
    pid_t child = hold(path, false);
    ProcessScan scan = scan_processes(true);
    CHECK_FALSE(scan.mapped_by.count(id));
    REQUIRE(scan.held.count(id));
    CHECK(scan.held[id].pid == child);
    CHECK(scan.held[id].reopen_path.find("/fd/") != std::string::npos);
    stop(child);
}
