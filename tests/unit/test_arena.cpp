// test_arena.cpp — the reserved range: one-comparison ownership, aligned
// first-fit, in-place extension, coalescing give-back, the slot table.
#include "shim_fixture.h"

#include "region.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>

using namespace spillway;

TEST_CASE("ownership is exactly the reserved range") {
    test::bring_up();
    REQUIRE(arena::g_size > 0);
    CHECK(arena::g_base % arena::kGranule == 0);
    CHECK(arena::owns((void *)arena::g_base));
    CHECK(arena::owns((void *)(arena::g_base + arena::g_size - 1)));
    CHECK_FALSE(arena::owns((void *)(arena::g_base + arena::g_size)));
    CHECK_FALSE(arena::owns((void *)(arena::g_base - 1)));
    CHECK_FALSE(arena::owns(nullptr));
    void *heap = std::malloc(64);
    CHECK_FALSE(arena::owns(heap));
    std::free(heap);
}

TEST_CASE("take, extend and give back keep the free space consistent") {
    test::bring_up();
    std::lock_guard<std::mutex> guard(large_lock());
    size_t before = arena::free_bytes();
    const size_t G = arena::kGranule;
    uintptr_t a = arena::take(3 * G + 1, G);
    uintptr_t b = arena::take(G, G);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a % G == 0);
    CHECK(b >= a + 4 * G); // 3 granules + 1 byte rounds to 4
    CHECK(arena::free_bytes() == before - 5 * G);

    // b is right after a: a cannot grow in place until b is returned.
    if (b == a + 4 * G) CHECK_FALSE(arena::extend(a, 4 * G, 6 * G));
    arena::give_back(b, G);
    CHECK(arena::extend(a, 4 * G, 6 * G));
    CHECK(arena::free_bytes() == before - 6 * G);

    uintptr_t big = arena::take(5 * G, size_t(1) << 30);
    REQUIRE(big);
    CHECK(big % (size_t(1) << 30) == 0);
    arena::give_back(big, 5 * G);
    arena::give_back(a, 6 * G);
    CHECK(arena::free_bytes() == before);
    CHECK(arena::take(arena::g_size + G, G) == 0); // larger than the arena
}

TEST_CASE("the slot table maps every granule of a region, interior pointers included") {
    test::bring_up();
    const size_t G = arena::kGranule;
    uintptr_t start;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        start = arena::take(3 * G, G);
    }
    Region r;
    r.start = start;
    arena::publish(&r, start, 3 * G);
    CHECK(arena::region_at((void *)start) == &r);
    CHECK(arena::region_at((void *)(start + 2 * G + 77)) == &r);
    CHECK(arena::region_at((void *)(start + 3 * G)) != &r);
    arena::unpublish(start, 3 * G);
    CHECK(arena::region_at((void *)start) == nullptr);
    CHECK(arena::unmap_to_reserved(start, 3 * G));
    std::lock_guard<std::mutex> guard(large_lock());
    arena::give_back(start, 3 * G);
}
