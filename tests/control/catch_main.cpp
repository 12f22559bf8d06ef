// catch_main.cpp — the Catch2 v2 main shared by every control test program.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
