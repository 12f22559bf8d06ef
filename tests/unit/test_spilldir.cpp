// test_spilldir.cpp — the spill directory is created private, refused when
// unsafe or on tmpfs, and its files are unnamed and 0600.
#include "spilldir.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace spillway;

struct TempDir {
    std::string path;
    explicit TempDir(const char *base = "/var/tmp") {
        std::string tmpl = std::string(base) + "/spillway-dirtest.XXXXXX";
        path = mkdtemp(tmpl.data());
    }
    ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

TEST_CASE("a missing directory is created 0700 with its parents") {
    TempDir t;
    SpillDir d = open_spill_dir(t.path + "/a/b/spill/", false);
    REQUIRE(d.usable);
    CHECK(d.path == t.path + "/a/b/spill");
    struct stat st;
    REQUIRE(stat(d.path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    close(d.fd);
}

TEST_CASE("unsafe directories are refused with a reason") {
    TempDir t;
    std::string open_dir = t.path + "/open";
    mkdir(open_dir.c_str(), 0777);
    chmod(open_dir.c_str(), 0777);
    SpillDir d = open_spill_dir(open_dir, false);
    CHECK_FALSE(d.usable);
    CHECK(d.why_unusable.find("writable by others") != std::string::npos);

    chmod(open_dir.c_str(), 01777); // sticky, like /tmp: acceptable
    d = open_spill_dir(open_dir, false);
    CHECK(d.usable);
    close(d.fd);

    std::string link = t.path + "/link";
    REQUIRE(symlink(open_dir.c_str(), link.c_str()) == 0);
    d = open_spill_dir(link, false);
    CHECK_FALSE(d.usable);
    CHECK(d.why_unusable.find("symlink") != std::string::npos);

    std::string file = t.path + "/file";
    close(creat(file.c_str(), 0600));
    d = open_spill_dir(file, false);
    CHECK_FALSE(d.usable);
}

// Another user's directory can only be made by root (chown, setuid). CI and
// the meson suites run as root; elsewhere this case says it did not run.
TEST_CASE("another user's directories are refused as foreign (needs root)") {
    if (geteuid() != 0) {
        WARN("not run: making another user's directory needs root (chown to uid 65534); run the unit "
             "tests as root to cover it");
        return;
    }
    TempDir t;
    SpillDir d;
    std::string other = t.path + "/other";
    mkdir(other.c_str(), 0700);
    REQUIRE(chown(other.c_str(), 65534, 65534) == 0);
    d = open_spill_dir(other, false);
    CHECK_FALSE(d.usable);
    CHECK(d.why_unusable.find("owned by uid 65534") != std::string::npos);
    CHECK(d.foreign);

    // Inside another user's private directory: this uid may not even look.
    std::string locked = t.path + "/locked";
    mkdir(locked.c_str(), 0700);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
        SpillDir inner = open_spill_dir(locked + "/spill", false);
        _exit(!inner.usable && inner.foreign ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("which refusals fall back to a private directory") {
    SpillDir foreign, unsafe, tmpfs;
    foreign.foreign = true;
    tmpfs.on_tmpfs = true;
    // The default: anything but tmpfs (the private directory would be RAM too).
    CHECK(spill_dir_falls_back(foreign, false));
    CHECK(spill_dir_falls_back(unsafe, false));
    CHECK_FALSE(spill_dir_falls_back(tmpfs, false));
    // A directory the user named: only another user's (inherited across a
    // uid change); a symlink or an open directory is theirs to fix (exit 78).
    CHECK(spill_dir_falls_back(foreign, true));
    CHECK_FALSE(spill_dir_falls_back(unsafe, true));
    CHECK_FALSE(spill_dir_falls_back(tmpfs, true));
    SpillDir fine;
    fine.usable = true;
    CHECK_FALSE(spill_dir_falls_back(fine, false));
}

TEST_CASE("the private directory is fresh, 0700, ours, under /var/tmp") {
    SpillDir a = open_private_spill_dir(false), b = open_private_spill_dir(false);
    REQUIRE(a.usable);
    REQUIRE(b.usable);
    CHECK(a.path != b.path);
    std::string prefix = std::string(kPrivateSpillBase) + "/spillway-" + std::to_string(geteuid()) + ".";
    CHECK(a.path.rfind(prefix, 0) == 0);
    struct stat st;
    REQUIRE(fstat(a.fd, &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(st.st_uid == geteuid());
    int fd = create_unnamed_file(a.fd);
    CHECK(fd >= 0);
    close(fd);
    for (SpillDir *d : {&a, &b}) {
        close(d->fd);
        CHECK(rmdir(d->path.c_str()) == 0); // empty: spill files are unnamed
    }
}

TEST_CASE("tmpfs is RAM: refused unless allowed") {
    TempDir t("/dev/shm");
    SpillDir d = open_spill_dir(t.path, false);
    CHECK_FALSE(d.usable);
    CHECK(d.on_tmpfs);
    CHECK(d.why_unusable.find("allow_tmpfs") != std::string::npos);
    d = open_spill_dir(t.path, true);
    CHECK(d.usable);
    close(d.fd);
}

TEST_CASE("spill files are unnamed and private") {
    TempDir t;
    SpillDir d = open_spill_dir(t.path, false);
    REQUIRE(d.usable);
    int fd = create_unnamed_file(d.fd);
    REQUIRE(fd >= 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_nlink == 0);
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    DIR *dir = opendir(t.path.c_str());
    int entries = 0;
    while (struct dirent *e = readdir(dir)) entries += e->d_name[0] != '.';
    closedir(dir);
    CHECK(entries == 0);
    close(fd);
    close(d.fd);
    CHECK(random_hex(32).size() == 32);
    CHECK(random_hex(32) != random_hex(32));
}
