// test_log.cpp — a log line is one write: prefixed, newline-terminated,
// filtered by level, and it leaves errno alone.
#include "log.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <unistd.h>

using namespace spillway;

static std::string drain(int fd) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    return n > 0 ? std::string(buf, (size_t)n) : "";
}

TEST_CASE("log lines are single, prefixed and filtered") {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    log_configure(LogLevel::warn, fds[1]);
    errno = 42;
    SPW_LOG(warn, "reserve failed: %s", "no space");
    CHECK(errno == 42);
    std::string line = drain(fds[0]);
    CHECK(line.find("spillway[") == 0);
    CHECK(line.find("warning: reserve failed: no space\n") != std::string::npos);
    CHECK(line.back() == '\n');
    SPW_LOG(debug, "invisible");
    SPW_LOG(error, "visible");
    CHECK(drain(fds[0]).find("error: visible") != std::string::npos);
    std::string huge(5000, 'x');
    SPW_LOG(error, "%s", huge.c_str());
    std::string cut = drain(fds[0]);
    CHECK(cut.size() <= 1024);
    CHECK(cut.back() == '\n');
    log_configure(LogLevel::error, 2);
    close(fds[0]);
    close(fds[1]);
}
