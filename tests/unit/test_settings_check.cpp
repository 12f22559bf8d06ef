// test_settings_check.cpp — settings_check.h: the marker `spillway run`
// hands its processes reads back as written, and nothing else is taken
// for one (the front then judges the settings itself).
#include "settings_check.h"

#include <catch2/catch.hpp>

using namespace spillway;

TEST_CASE("settings_check: a marker reads back as format_checked wrote it") {
    const uint64_t thresholds[] = {0, 1, 67108864, UINT64_MAX};
    const uint64_t hashes[] = {0, 0x1, 0xbb1f5a9a101c6929ull, UINT64_MAX};
    for (uint64_t t : thresholds)
        for (int level : {0, 1, 4})
            for (uint64_t h : hashes) {
                char text[80];
                format_checked(text, sizeof text, t, level, h);
                uint64_t t2 = 7, h2 = 7;
                int l2 = 7;
                REQUIRE(parse_checked(text, &t2, &l2, &h2));
                CHECK(t2 == t);
                CHECK(l2 == level);
                CHECK(h2 == h);
            }
}

TEST_CASE("settings_check: what is not a marker is refused") {
    uint64_t t = 0, h = 0;
    int l = 0;
    for (const char *bad : {"", ":", "1:2", "1:2:", "x:1:00", "1:x:00", "1:1:0g", "1:1:00 ", " 1:1:00",
                            "1:1:00000000000000000", "18446744073709551616:1:00", "-1:1:00", "1:-1:00",
                            "1::00", ":1:00", "1:1:0x10"})
        CHECK_FALSE(parse_checked(bad, &t, &l, &h));
    CHECK_FALSE(parse_checked(nullptr, &t, &l, &h));
    REQUIRE(parse_checked("64:1:00ABCdef", &t, &l, &h)); // either case, as %llx read it
    CHECK(h == 0xabcdefull);
}
