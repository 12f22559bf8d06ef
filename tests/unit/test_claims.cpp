// test_claims.cpp — the cgroup's shared budget file: parse/format, one
// claim per process, dead claimants (and reused pids) dropped, and two
// processes racing for the same headroom: exactly one wins.
#include "tiering/claims.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace spillway;

namespace {
struct TempDir {
    std::string path;
    int fd;
    TempDir() {
        char tmpl[] = "/tmp/spillway-tiering-claims.XXXXXX";
        path = mkdtemp(tmpl);
        fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    ~TempDir() {
        close(fd);
        std::system(("rm -rf " + path).c_str());
    }
    std::string file(const std::string &cg) const { return path + "/" + claims_file_name(cg); }
    std::string read(const std::string &cg) const {
        std::string text;
        FILE *f = fopen(file(cg).c_str(), "r");
        if (!f) return text;
        char buf[256];
        while (fgets(buf, sizeof buf, f)) text += buf;
        fclose(f);
        return text;
    }
    void write(const std::string &cg, const std::string &text) const {
        FILE *f = fopen(file(cg).c_str(), "w");
        fputs(text.c_str(), f);
        fclose(f);
    }
};
} // namespace

TEST_CASE("claims parse and format; garbage lines are dropped") {
    auto c = parse_claims("12 345 1000\nnot a claim\n13 9 5 extra\n-1 2 3\n14 1 7");
    REQUIRE(c.size() == 2);
    CHECK(c[0].pid == 12);
    CHECK(c[0].start_time == 345);
    CHECK(c[0].bytes == 1000);
    CHECK(c[1].pid == 14);
    CHECK(format_claims(c) == "12 345 1000\n14 1 7\n");
}

TEST_CASE("a process's start time is read, and none for a missing pid") {
    CHECK(process_start_time(getpid()) > 0);
    CHECK(process_start_time(getpid()) == process_start_time(getpid()));
    CHECK(process_start_time(0x3fffffff) == 0);
}

TEST_CASE("one file per cgroup, hidden from the stale-file cleanup") {
    CHECK(claims_file_name("/sys/fs/cgroup/a") != claims_file_name("/sys/fs/cgroup/b"));
    CHECK(claims_file_name("/x").rfind(".spillway-claims-", 0) == 0);
}

TEST_CASE("a claim is recorded only when it fits; others' claims are counted; dead ones dropped") {
    TempDir d;
    const std::string cg = "/sys/fs/cgroup/memory/job";
    // A live other process (our parent) with 300 bytes, a dead one with 10^9,
    // and a reused pid (ours, with another start time) — dropped.
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, nullptr, 0);
    std::string parent = std::to_string(getppid()) + " " + std::to_string(process_start_time(getppid()));
    d.write(cg, parent + " 300\n" + std::to_string(dead) + " 5 1000000000\n" + std::to_string(getpid()) +
                    " 1 77\n");
    uint64_t others = 0;
    bool ok = claim_headroom(d.fd, cg, 500, [](uint64_t o) { return 1000 - o >= 500; }, &others);
    CHECK(ok);
    CHECK(others == 300);
    std::string self = std::to_string(getpid()) + " " + std::to_string(process_start_time(getpid()));
    CHECK(d.read(cg) == parent + " 300\n" + self + " 500\n");
    // A second claim of ours replaces the first; one that does not fit is not recorded.
    CHECK_FALSE(claim_headroom(d.fd, cg, 800, [](uint64_t o) { return 1000 - o >= 800; }, &others));
    CHECK(d.read(cg) == parent + " 300\n");
    CHECK(claim_headroom(d.fd, cg, 200, [](uint64_t) { return true; }));
    drop_claim(d.fd, cg);
    CHECK(d.read(cg) == parent + " 300\n");
    // Another cgroup's budget is another file.
    CHECK(claim_headroom(d.fd, "/other", 1, [](uint64_t o) { return o == 0; }));
}

TEST_CASE("two processes racing for 400 of 500 bytes: exactly one gets it") {
    TempDir d;
    const std::string cg = "/race";
    // go: both start at once; results: each child's verdict; release: each
    // holds its claim (stays alive) until the parent has both verdicts, so a
    // child scheduled late cannot find the winner already gone.
    int go[2], results[2], release[2];
    REQUIRE(pipe(go) == 0);
    REQUIRE(pipe(results) == 0);
    REQUIRE(pipe(release) == 0);
    pid_t kids[2];
    for (pid_t &k : kids) {
        k = fork();
        if (k == 0) {
            close(go[1]);
            close(results[0]);
            close(release[1]);
            char c;
            if (read(go[0], &c, 1) != 1) _exit(3);
            bool won = claim_headroom(d.fd, cg, 400, [](uint64_t others) {
                usleep(20000); // the decision takes a while: the other one must wait, not decide too
                return 500 - others >= 400;
            });
            c = won ? 'w' : 'l';
            if (write(results[1], &c, 1) != 1) _exit(3);
            while (read(release[0], &c, 1) > 0) {
            } // until the parent closes it
            _exit(won ? 0 : 1);
        }
    }
    close(go[0]);
    close(results[1]);
    close(release[0]);
    REQUIRE(write(go[1], "gg", 2) == 2);
    close(go[1]);
    int wins = 0;
    for (int i = 0; i < 2; i++) {
        char c = 0;
        REQUIRE(read(results[0], &c, 1) == 1);
        wins += c == 'w';
    }
    close(results[0]);
    close(release[1]); // both may exit now
    for (pid_t k : kids) {
        int status = 0;
        waitpid(k, &status, 0);
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) <= 1);
    }
    CHECK(wins == 1);
    // Both exited: their claims are dropped by the next reader.
    uint64_t others = 1;
    CHECK(claim_headroom(d.fd, cg, 1, [](uint64_t) { return true; }, &others));
    CHECK(others == 0);
}

TEST_CASE("a fork in the middle of a claim does not leave the lock held by the child") {
    // The child inherits the locked descriptor and outlives the claim; the
    // lock must still be free for everyone once the parent is done.
    TempDir d;
    const std::string cg = "/forked";
    pid_t child = -1;
    CHECK(claim_headroom(d.fd, cg, 1, [&](uint64_t) {
        child = fork();
        if (child == 0) {
            claims_after_fork_child(); // what the shim's fork handler does
            usleep(1500000);
            _exit(0);
        }
        return true;
    }));
    REQUIRE(child > 0);
    int fd = open(d.file(cg).c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(flock(fd, LOCK_EX | LOCK_NB) == 0); // not held by the sleeping child
    close(fd);
    // Even a child that kept its copy does not hold it: the parent let go with LOCK_UN.
    pid_t keeper = -1;
    CHECK(claim_headroom(d.fd, cg, 1, [&](uint64_t) {
        keeper = fork();
        if (keeper == 0) {
            usleep(1500000);
            _exit(0);
        }
        return true;
    }));
    REQUIRE(keeper > 0);
    fd = open(d.file(cg).c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(flock(fd, LOCK_EX | LOCK_NB) == 0);
    close(fd);
    kill(child, SIGKILL);
    kill(keeper, SIGKILL);
    waitpid(child, nullptr, 0);
    waitpid(keeper, nullptr, 0);
}
