// test_run_tag.cpp — run_tag.cpp: fresh tags are unique and valid, a given
// tag is extended, and a line is a run's by its tag or a nested run's.
#include "run_tag.h"

#include "stats_run.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace spillway;
using namespace spillway::cli;

TEST_CASE("run tag: fresh tags are 32 hex digits, valid, and never repeat") {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; i++) {
        RunTag t = new_run_tag("");
        REQUIRE(t.error.empty());
        CHECK(t.tag.size() == 32);
        CHECK(t.tag.find_first_not_of("0123456789abcdef") == std::string::npos);
        CHECK(stats_run_ok(t.tag.data(), t.tag.size()));
        seen.insert(t.tag);
    }
    CHECK(seen.size() == 1000);
}

TEST_CASE("run tag: a tag the settings give (the user's, an outer run's) is extended") {
    RunTag t = new_run_tag("nightly/0a1b");
    REQUIRE(t.error.empty());
    CHECK(t.tag.rfind("nightly/0a1b/", 0) == 0);
    CHECK(t.tag.size() == std::string("nightly/0a1b/").size() + 32);
    CHECK(tag_is_of_run(t.tag, "nightly/0a1b")); // the outer run counts the inner job's lines

    RunTag too_long = new_run_tag(std::string(kStatsRunMax - 32, 'x'));
    CHECK(too_long.tag.empty());
    CHECK(too_long.error.find("SPILLWAY_STATS_RUN") != std::string::npos);
    CHECK(too_long.error.find('\n') == std::string::npos);
    CHECK(new_run_tag(std::string(kStatsRunMax - 33, 'x')).error.empty());
}

TEST_CASE("run tag: a line is the run's by its tag, or a nested run's; never a lookalike's") {
    CHECK(tag_is_of_run("ab12", "ab12"));
    CHECK(tag_is_of_run("ab12/cd34", "ab12"));
    CHECK(tag_is_of_run("ab12/cd34/ef56", "ab12"));
    CHECK_FALSE(tag_is_of_run("ab123", "ab12"));
    CHECK_FALSE(tag_is_of_run("ab1", "ab12"));
    CHECK_FALSE(tag_is_of_run("zz/ab12", "ab12"));
    CHECK_FALSE(tag_is_of_run("", "ab12"));
    CHECK_FALSE(tag_is_of_run("ab12", "")); // no tag: nothing is matched by it
}
