// catch_session.cpp — Catch2 v2's implementation, compiled once for every
// test binary (unit, its UBSan and TSan builds, control, cli). Compiling it
// took 26-61 s of CPU per binary, six times over: a fifth of the build.
// Catch declares its Session only with its implementation, so each
// binary's main calls it through run_catch_session (catch_session.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

int run_catch_session(int argc, char **argv) { return Catch::Session().run(argc, argv); }
