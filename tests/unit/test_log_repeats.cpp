// test_log_repeats.cpp — a repeated failure is a warning once per reason:
// its repeats go to the debug level, a new reason is a warning again, and a
// fork child (forget) says each reason anew.
#include "log.h"
#include "log_repeats.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace spillway;

namespace {
std::string drain(int fd) {
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf);
    return n > 0 ? std::string(buf, (size_t)n) : "";
}

size_t count_of(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
}
} // namespace

TEST_CASE("the first failure of each reason is a warning, its repeats are debug") {
    RepeatedWarning w;
    CHECK(w.level(ENOSPC) == LogLevel::warn);
    for (int i = 0; i < 9; i++) CHECK(w.level(ENOSPC) == LogLevel::debug);
    CHECK(w.level(EIO) == LogLevel::warn); // a different failure is not hidden
    CHECK(w.level(EIO) == LogLevel::debug);
    CHECK(w.level(ENOSPC) == LogLevel::debug);
    // Reasons past the table share its last slot; a negative one is 0.
    CHECK(w.level(1000) == LogLevel::warn);
    CHECK(w.level(191) == LogLevel::debug);
    CHECK(w.level(-5) == LogLevel::warn);
    CHECK(w.level(0) == LogLevel::debug);
    w.forget();
    CHECK(w.level(ENOSPC) == LogLevel::warn);
    CHECK(std::string(RepeatedWarning::tail(LogLevel::warn)).find("debug level") != std::string::npos);
    CHECK(std::string(RepeatedWarning::tail(LogLevel::debug)).empty());
}

TEST_CASE("ten failures of one kind print one warning line; a new kind prints its own") {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    log_configure(LogLevel::warn, fds[1]);
    RepeatedWarning w;
    auto fail = [&](int err) {
        LogLevel at = w.level(err);
        SPW_LOG_AT(at, "cannot move to disk (%s)%s", strerror(err), RepeatedWarning::tail(at));
    };
    for (int i = 0; i < 10; i++) fail(ENOSPC);
    fail(EDQUOT);
    fail(ENOSPC);
    std::string out = drain(fds[0]);
    INFO(out);
    CHECK(count_of(out, "\n") == 2);
    CHECK(count_of(out, "warning: cannot move to disk (No space left on device) (later ones like it") == 1);
    CHECK(count_of(out, "warning: cannot move to disk (Disk quota exceeded)") == 1);
    // At debug level every repeat is there.
    log_configure(LogLevel::debug, fds[1]);
    fail(ENOSPC);
    CHECK(drain(fds[0]).find("debug: cannot move to disk (No space left on device)\n") != std::string::npos);
    log_configure(LogLevel::error, 2);
    close(fds[0]);
    close(fds[1]);
}
