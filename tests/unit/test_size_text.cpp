// test_size_text.cpp — size_text.cpp: the size rules without libstdc++ (the
// front judges SPILLWAY_THRESHOLD with them), exactly as size_parse.h's
// wrappers give them to the engine and the tool.
#include "size_text.h"

#include "size_parse.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>

using namespace spillway;

namespace {

bool parse(const char *text, uint64_t *v, const char **why) { return parse_size_text(text, strlen(text), v, why); }

} // namespace

TEST_CASE("size_text: every unit, spaces around, and a fraction with a unit") {
    uint64_t v = 0;
    const char *why = nullptr;
    CHECK((parse("64MiB", &v, &why) && v == 64ull << 20));
    CHECK((parse(" 10 KB ", &v, &why) && v == 10000));
    CHECK((parse("1.5GiB", &v, &why) && v == 3ull << 29));
    CHECK((parse("3T", &v, &why) && v == 3ull << 40));
    CHECK((parse("2TB", &v, &why) && v == 2000000000000ull));
    // Only text[0..len) counts: a value need not end in NUL.
    CHECK((parse_size_text("8MiB junk", 4, &v, &why) && v == 8ull << 20));
}

TEST_CASE("size_text: each failure names its reason") {
    uint64_t v = 0;
    const char *why = nullptr;
    CHECK_FALSE(parse("MiB", &v, &why));
    CHECK(std::string(why) == "no number");
    CHECK_FALSE(parse("1.5", &v, &why));
    CHECK(std::string(why) == "a fraction needs a unit");
    CHECK_FALSE(parse("99999999999999999999", &v, &why));
    CHECK(std::string(why) == "number too large");
    CHECK_FALSE(parse("20000000TiB", &v, &why));
    CHECK(std::string(why) == "size too large");
    CHECK_FALSE(parse("12 parsecs", &v, &why));
    CHECK(std::string(why) == "unknown unit; use B, KiB, MiB, GiB or TiB");
}

TEST_CASE("size_text: fractions round half up, as llround did, without libm") {
    // Every fraction of 1..4 digits with every binary unit: the result is
    // the nearest byte, the half rounded up (what std::llround gave).
    const char *units[] = {"K", "MiB", "GB", "TiB"};
    const double factors[] = {1024.0, 1048576.0, 1e9, 1099511627776.0};
    for (int u = 0; u < 4; u++) {
        for (int digits = 1; digits <= 4; digits++) {
            int limit = digits == 1 ? 10 : digits == 2 ? 100 : digits == 3 ? 1000 : 10000;
            for (int f = 0; f < limit; f += digits == 4 ? 7 : 1) {
                char text[32];
                snprintf(text, sizeof text, "3.%0*d%s", digits, f, units[u]);
                double fraction = 0, scale = 0.1;
                for (const char *c = strchr(text, '.') + 1; *c >= '0' && *c <= '9'; c++, scale /= 10)
                    fraction += (*c - '0') * scale;
                uint64_t want = 3 * (uint64_t)factors[u] + (uint64_t)std::llround(fraction * factors[u]);
                uint64_t v = 0;
                const char *why = nullptr;
                INFO(text);
                REQUIRE(parse(text, &v, &why));
                REQUIRE(v == want);
            }
        }
    }
}

TEST_CASE("size_text: the message of a bad size is one line, and its length is told") {
    char out[256];
    const char *text = "12\nparsecs\r\t";
    int n = bad_size_message(out, sizeof out, "no number", text, strlen(text));
    CHECK(std::string(out) == "expected a size such as \"64MiB\" or \"2GiB\" (no number), got \"12\\nparsecs\\r \"");
    CHECK(n == (int)strlen(out));
    char small[16];
    CHECK(bad_size_message(small, sizeof small, "no number", text, strlen(text)) == n); // needed, not written
    CHECK(strlen(small) == sizeof small - 1);
    // parse_size (the engine's and the tool's) says the same.
    uint64_t v;
    std::string err;
    CHECK_FALSE(parse_size("12\nparsecs", v, err));
    CHECK(err == "expected a size such as \"64MiB\" or \"2GiB\" (unknown unit; use B, KiB, MiB, GiB or TiB), got "
                 "\"12\\nparsecs\"");
}

TEST_CASE("size_text: sizes print in the largest unit that reads well") {
    char out[48];
    format_size_text(out, sizeof out, 64 * 1024);
    CHECK(std::string(out) == "64KiB");
    format_size_text(out, sizeof out, 3ull << 29);
    CHECK(std::string(out) == "1.50GiB");
    format_size_text(out, sizeof out, UINT64_MAX);
    CHECK(std::string(out) == "18446744073709551615B");
    CHECK(format_size(1000) == "1000B"); // the wrapper is the same rule
}
