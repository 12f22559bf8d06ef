// test_size_parse.cpp — sizes with units, their formatting, and globs.
#include "size_parse.h"

#include <catch2/catch.hpp>

using namespace spillway;

TEST_CASE("sizes parse exactly, with binary and decimal units") {
    uint64_t v = 0;
    std::string err;
    CHECK((parse_size("64MiB", v, err) && v == 64ull << 20));
    CHECK((parse_size("2GiB", v, err) && v == 2ull << 30));
    CHECK((parse_size("1.5GiB", v, err) && v == 3ull << 29));
    CHECK((parse_size("4096", v, err) && v == 4096));
    CHECK((parse_size("10 KB", v, err) && v == 10000));
    CHECK((parse_size("1T", v, err) && v == 1ull << 40));
    CHECK((parse_size(" 7 B ", v, err) && v == 7));
}

TEST_CASE("bad sizes say what was expected") {
    uint64_t v = 0;
    std::string err;
    CHECK_FALSE(parse_size("", v, err));
    CHECK(err.find("expected a size") != std::string::npos);
    CHECK_FALSE(parse_size("12 parsecs", v, err));
    CHECK(err.find("unknown unit") != std::string::npos);
    CHECK_FALSE(parse_size("1.5", v, err));
    CHECK(err.find("fraction") != std::string::npos);
    CHECK_FALSE(parse_size("99999999999999999999", v, err));
    CHECK_FALSE(parse_size("20000000TiB", v, err));
    CHECK(err.find("too large") != std::string::npos);
    CHECK_FALSE(parse_size("-5MiB", v, err));
}

TEST_CASE("sizes format in the largest whole unit") {
    CHECK(format_size(64ull << 20) == "64MiB");
    CHECK(format_size(512) == "512B");
    CHECK(format_size(3ull << 29) == "1.50GiB");
    CHECK(format_size(0) == "0B");
}

TEST_CASE("globs match like a shell, without exponential blow-up") {
    CHECK(glob_match("scatter_*", "scatter_add"));
    CHECK(glob_match("*scatter*", "at::native::scatter_add_kernel"));
    CHECK(glob_match("lib?orch*", "libtorch_cpu.so"));
    CHECK_FALSE(glob_match("scatter_*", "gather"));
    CHECK(glob_match("*", ""));
    CHECK_FALSE(glob_match("a", ""));
    CHECK(glob_match("a*b*c", "axxbyyc"));
    CHECK_FALSE(glob_match("a*b*c", "axxbyy"));
    std::string hostile(200, 'a');
    CHECK_FALSE(glob_match("*a*a*a*a*a*a*a*a*a*b", hostile));
}
