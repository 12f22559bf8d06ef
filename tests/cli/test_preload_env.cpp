// test_preload_env.cpp — preload_env.cpp: the user's LD_PRELOAD is kept,
// libspillway comes first and only once.
#include "preload_env.h"

#include <catch2/catch.hpp>

using spillway::cli::compose_ld_preload;

TEST_CASE("no LD_PRELOAD: just the shim") {
    CHECK(compose_ld_preload("/b/libspillway.so", nullptr) == "/b/libspillway.so");
    CHECK(compose_ld_preload("/b/libspillway.so", "") == "/b/libspillway.so");
}

TEST_CASE("existing entries are kept in order, after the shim") {
    CHECK(compose_ld_preload("/b/libspillway.so", "/x/liba.so:/y/libb.so") ==
          "/b/libspillway.so:/x/liba.so:/y/libb.so");
    // ld.so also splits on spaces.
    CHECK(compose_ld_preload("/b/libspillway.so", "/x/liba.so /y/libb.so") ==
          "/b/libspillway.so:/x/liba.so:/y/libb.so");
}

TEST_CASE("another libspillway (any path, any soname) is replaced, not doubled") {
    CHECK(compose_ld_preload("/b/libspillway.so", "/old/libspillway.so.0:/x/liba.so") ==
          "/b/libspillway.so:/x/liba.so");
    CHECK(compose_ld_preload("/b/libspillway.so", "libspillway.so") == "/b/libspillway.so");
    // A different library whose name merely contains it stays.
    CHECK(compose_ld_preload("/b/libspillway.so", "/x/libnotspillway.so") ==
          "/b/libspillway.so:/x/libnotspillway.so");
}
