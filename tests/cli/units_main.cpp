// units_main.cpp — Catch2's main for the cli unit tests (one test file per
// tools/cli file they cover).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
