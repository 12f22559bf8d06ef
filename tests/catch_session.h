// catch_session.h — runs Catch2's session (tests/catch_session.cpp, where
// the implementation is compiled once): what a test binary's main calls.
#pragma once

int run_catch_session(int argc, char **argv);
