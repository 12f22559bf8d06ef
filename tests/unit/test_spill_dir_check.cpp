// test_spill_dir_check.cpp — spill_dir_check.cpp: the spill directory's
// rules without libstdc++ (the front runs them before main), each refusal
// with open_spill_dir's reason, whether the directory existed (one open)
// or had to be made (each step in turn).
#include "spill_dir_check.h"

#include "spilldir.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace spillway;

namespace {

struct Scratch {
    std::string path;
    Scratch() {
        char tmpl[] = "/var/tmp/spillway-checktest.XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~Scratch() { std::system(("chmod -R u+rwx " + path + "; rm -rf " + path).c_str()); }
};

struct Checked {
    SpillDirCheck d;
    std::string why;
    std::string path; // as cut in place
};

// check_spill_dir_verdict, the front's, first: it must say what
// check_spill_dir says after it (a directory it made is there for both),
// with no descriptor left open.
Checked check(const std::string &path, bool allow_tmpfs = false) {
    Checked c;
    char buf[4096];
    char why[8192];
    snprintf(buf, sizeof buf, "%s", path.c_str());
    SpillDirCheck verdict;
    check_spill_dir_verdict(buf, allow_tmpfs, &verdict, why, sizeof why);
    std::string verdict_why = why;
    snprintf(buf, sizeof buf, "%s", path.c_str());
    check_spill_dir(buf, allow_tmpfs, &c.d, why, sizeof why);
    CHECK(verdict.fd == -1);
    CHECK(verdict.usable == c.d.usable);
    CHECK(verdict.on_tmpfs == c.d.on_tmpfs);
    CHECK(verdict.foreign == c.d.foreign);
    CHECK(verdict_why == std::string(why));
    c.why = why;
    c.path = buf;
    if (c.d.fd >= 0) {
        CHECK(c.d.fd > 2);
        close(c.d.fd);
    }
    CHECK(c.d.why_needed == c.why.size());
    return c;
}

} // namespace

TEST_CASE("spill_dir_check: a missing directory is made 0700, an existing one only opened") {
    Scratch t;
    Checked c = check(t.path + "/a/b/spill//");
    CHECK(c.d.usable);
    CHECK(c.why.empty());
    CHECK(c.path == t.path + "/a/b/spill"); // trailing slashes cut
    struct stat st;
    REQUIRE(stat(c.path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    Checked again = check(c.path);
    CHECK(again.d.usable);
}

TEST_CASE("spill_dir_check: each refusal with open_spill_dir's reason") {
    Scratch t;
    std::string open_dir = t.path + "/open", link = t.path + "/link", file = t.path + "/file";
    mkdir(open_dir.c_str(), 0700);
    chmod(open_dir.c_str(), 0777);
    REQUIRE(symlink(open_dir.c_str(), link.c_str()) == 0);
    close(creat(file.c_str(), 0600));
    struct Case {
        std::string path, reason;
    } cases[] = {
        {open_dir, open_dir + " is writable by others without the sticky bit; chmod 0700 it"},
        {link, link + " is a symlink; point spill.dir at a real directory"},
        {file, file + " is not a directory; name a directory"},
        {file + "/below", "cannot create " + file + "/below (Not a directory); create it yourself (mkdir -m 0700) "
                          "or name another directory"},
    };
    for (const Case &k : cases) {
        Checked c = check(k.path);
        CHECK_FALSE(c.d.usable);
        CHECK_FALSE(c.d.foreign);
        CHECK(c.why == k.reason);
        CHECK(open_spill_dir(k.path, false).why_unusable == k.reason); // the engine's and the tool's: the same
    }
    chmod(open_dir.c_str(), 01777); // sticky, like /tmp: acceptable
    CHECK(check(open_dir).d.usable);
}

TEST_CASE("spill_dir_check: another user's directory is foreign") {
    if (geteuid() != 0) { // CI and the meson suites run as root (test_spilldir.cpp says the same)
        WARN("not run: making another user's directory needs root (chown to uid 65534)");
        return;
    }
    Scratch t;
    std::string theirs = t.path + "/theirs";
    mkdir(theirs.c_str(), 0700);
    REQUIRE(chown(theirs.c_str(), 65534, 65534) == 0);
    Checked c = check(theirs);
    CHECK_FALSE(c.d.usable);
    CHECK(c.d.foreign);
    CHECK(c.why == theirs + " is owned by uid 65534, not by this user (uid 0); use a directory of your own");
}

TEST_CASE("spill_dir_check: tmpfs is RAM: refused unless allowed") {
    char tmpl[] = "/dev/shm/spillway-checktest.XXXXXX";
    REQUIRE(mkdtemp(tmpl)); // /dev/shm is tmpfs on every Linux this runs on
    std::string dir = tmpl;
    Checked refused = check(dir);
    CHECK_FALSE(refused.d.usable);
    CHECK(refused.d.on_tmpfs);
    CHECK(refused.why.find("is on tmpfs/ramfs, which is RAM") != std::string::npos);
    Checked allowed = check(dir, true);
    CHECK(allowed.d.usable);
    CHECK(allowed.d.on_tmpfs);
    rmdir(dir.c_str());
}

TEST_CASE("spill_dir_check: a reason too long for the buffer is cut and its length told") {
    Scratch t;
    std::string link = t.path + "/link";
    REQUIRE(symlink("/", link.c_str()) == 0);
    char path[4096], why[16];
    snprintf(path, sizeof path, "%s", link.c_str());
    SpillDirCheck d;
    check_spill_dir(path, false, &d, why, sizeof why);
    CHECK(strlen(why) == sizeof why - 1);
    CHECK(d.why_needed == (link + " is a symlink; point spill.dir at a real directory").size());
}

TEST_CASE("spill_dir_check: the default directory is per user") {
    char out[64];
    default_spill_dir_text(out, sizeof out);
    CHECK(std::string(out) == "/var/tmp/spillway-" + std::to_string(geteuid()));
}

TEST_CASE("spill_dir_check: the default directory's text is cut as snprintf cuts it") {
    std::string full = "/var/tmp/spillway-" + std::to_string(geteuid());
    char out[8];
    CHECK(default_spill_dir_text(out, sizeof out) == (int)full.size());
    CHECK(std::string(out) == full.substr(0, sizeof out - 1));
    CHECK(default_spill_dir_text(nullptr, 0) == (int)full.size());
}
