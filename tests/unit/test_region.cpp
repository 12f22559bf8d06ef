// test_region.cpp — the live-region registry links and unlinks in O(1) and
// region objects come from mimalloc, not the interposed malloc.
#include "registry/region.h"

#include <catch2/catch.hpp>
#include <mimalloc.h>
#include <mutex>

using namespace spillway;

TEST_CASE("registry link and unlink") {
    std::lock_guard<std::mutex> guard(large_lock());
    size_t base = registry_count();
    Region *a = region_new(), *b = region_new(), *c = region_new();
    REQUIRE((a && b && c));
    CHECK(mi_is_in_heap_region(a));
    registry_link(a);
    registry_link(b);
    registry_link(c);
    CHECK(registry_count() == base + 3);
    CHECK(registry_first() == c);
    registry_unlink(b);
    CHECK(c->next == a);
    CHECK(a->prev == c);
    registry_unlink(c);
    registry_unlink(a);
    CHECK(registry_count() == base);
    region_delete(a);
    region_delete(b);
    region_delete(c);
}
