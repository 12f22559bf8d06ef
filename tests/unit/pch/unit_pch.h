// unit_pch.h — the precompiled header of the Catch2 test binaries (unit,
// its UBSan build, cli_units): Catch2's header and the standard headers
// most test files include, parsed once per binary instead of once per file
// (1.5-2 s of each test file's 4-11 s compile on the 2-core CI machine).
// Force-included by meson (cpp_pch): nothing here may depend on a macro a
// test file defines first. The external interfaces (listener bases) are for
// the unit binary's shared_site_listener.cpp.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>
