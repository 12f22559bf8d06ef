// catch_main.cpp — the Catch2 v2 main shared by every control test program.
#include "catch_session.h"

int main(int argc, char **argv) { return run_catch_session(argc, argv); }
