// test_options.cpp — cli.cpp: option reading and size formatting.
#include "cli.h"

#include <catch2/catch.hpp>

using namespace spillway::cli;

TEST_CASE("options: flags, values in both spellings, then the rest after --") {
    Options o("run", {"-q", "--dir=/a", "--threshold", "2MiB", "-c", "x.toml", "--", "--not-ours", "y"});
    CHECK(o.flag("--quiet", "-q"));
    CHECK(o.value("--dir") == std::optional<std::string>("/a"));
    CHECK(o.value("--threshold") == std::optional<std::string>("2MiB"));
    CHECK(o.value("--config", "-c") == std::optional<std::string>("x.toml"));
    CHECK_FALSE(o.at_option()); // "--" is not an option
    CHECK(o.rest() == std::vector<std::string>{"--not-ours", "y"});
    CHECK(o.error().empty());
}

TEST_CASE("options: a value option at the end reports the missing value") {
    Options o("run", {"--dir"});
    auto v = o.value("--dir");
    REQUIRE(v);
    CHECK(o.error() == "option --dir needs a value");
}

TEST_CASE("options: a prefix of a long name is not that option") {
    Options o("run", {"--directory=/a"});
    CHECK_FALSE(o.value("--dir"));
    CHECK(o.at_option());
}

TEST_CASE("options: the command starts at the first non-option") {
    Options o("run", {"python3", "-c", "pass"});
    CHECK_FALSE(o.at_option());
    CHECK(o.rest() == std::vector<std::string>{"python3", "-c", "pass"});
}

TEST_CASE("human sizes") {
    CHECK(human_size(0) == "0B");
    CHECK(human_size(1023) == "1023B");
    CHECK(human_size(1024) == "1.00KiB");
    CHECK(human_size(16ull << 20) == "16.0MiB");
    CHECK(human_size(300ull << 30) == "300GiB");
}
