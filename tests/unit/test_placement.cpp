// test_placement.cpp — placement.cpp: every backing has the name the logs,
// the stats and the tool use.
#include "registry/placement.h"

#include <catch2/catch.hpp>
#include <string>

using namespace spillway;

TEST_CASE("backing names") {
    CHECK(std::string(backing_name(Backing::none)) == "none");
    CHECK(std::string(backing_name(Backing::disk)) == "disk");
    CHECK(std::string(backing_name(Backing::memory)) == "memory");
    CHECK(std::string(backing_name(Backing::anon)) == "anon");
    CHECK(std::string(backing_name(static_cast<Backing>(9))) == "?");
}
