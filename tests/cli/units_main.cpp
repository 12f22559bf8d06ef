// units_main.cpp — Catch2's main for the cli unit tests (one test file per
// tools/cli file they cover).
#include "catch_session.h"

int main(int argc, char **argv) { return run_catch_session(argc, argv); }
