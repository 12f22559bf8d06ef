// test_copy_order.cpp — abi/copy_order.h: which copies the front does front
// to back (copy_forward.cpp; tests/programs/copy_forward.cpp checks the
// order and the bytes under the preloaded shim).
#include "copy_order.h"

#include <catch2/catch.hpp>

using namespace spillway;

TEST_CASE("copy_order: a large copy between aliased addresses touching the arena goes forward") {
    const uintptr_t src = uintptr_t(1) << 40, dst = src + (uintptr_t(128) << 20); // two 2 MiB-aligned regions
    CHECK(copy_goes_forward(dst, src, 76u << 20, true));
    CHECK(copy_goes_forward(src, dst, 76u << 20, true)); // dst below src aliases too
    // glibc's window: (dst - src) mod 4096 below 512 goes backwards in glibc
    CHECK(copy_goes_forward(dst + 511, src, 1u << 20, true));
    CHECK_FALSE(copy_goes_forward(dst + 512, src, 1u << 20, true));
    CHECK_FALSE(copy_goes_forward(dst + 4095, src, 1u << 20, true));
    CHECK(copy_goes_forward(dst + 4096, src, 1u << 20, true));
}

TEST_CASE("copy_order: small copies, copies outside the arena and overlapping ones keep glibc's order") {
    const uintptr_t src = uintptr_t(1) << 40, dst = src + (uintptr_t(128) << 20);
    CHECK_FALSE(copy_goes_forward(dst, src, kForwardCopyMin - 1, true));
    CHECK(copy_goes_forward(dst, src, kForwardCopyMin, true));
    CHECK_FALSE(copy_goes_forward(dst, src, 76u << 20, false));
    // overlapping by one byte either way: memmove's own order is the correct one
    CHECK_FALSE(copy_goes_forward(src + 4096, src, 4096 + 1 + kForwardCopyMin, true));
    CHECK_FALSE(copy_goes_forward(src, src + (1u << 20), (1u << 20) + 1, true));
    CHECK(copy_goes_forward(src + (1u << 20), src, 1u << 20, true)); // adjacent, not overlapping
    CHECK_FALSE(copy_goes_forward(src, src, 1u << 20, true));       // the same range
}

TEST_CASE("copy_order: the first piece ends at the source's page boundary") {
    CHECK(first_piece(0x10000, 1u << 20) == 4096);
    CHECK(first_piece(0x10001, 1u << 20) == 4095);
    CHECK(first_piece(0x10fff, 1u << 20) == 1);
    CHECK(first_piece(0x10100, 100) == 100);
}
