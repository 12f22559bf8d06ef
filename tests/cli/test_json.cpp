// test_json.cpp — json.cpp: the stats lines the shim writes, and corruption.
#include "json.h"

#include <catch2/catch.hpp>

using namespace spillway::cli;

TEST_CASE("a stats line parses, integers exactly") {
    JsonValue v;
    std::string err;
    REQUIRE(parse_json(R"({"pid":42,"cmd":"python3 -c \"x\"","regions":{"disk":2,"memory":0,"anon":1},)"
                       R"("bytes":{"disk":18446744073709551615},"sites":[{"id":"ab","frames":["a \u00e9"]}],)"
                       R"("ratio":1.5,"ok":true,"none":null})",
                       v, err));
    CHECK(v.count("pid") == 42);
    CHECK(v.get("cmd")->text == "python3 -c \"x\"");
    CHECK(v.get("regions")->count("disk") == 2);
    CHECK(v.get("regions")->count("anon") == 1);
    CHECK(v.get("bytes")->count("disk") == 18446744073709551615ull);
    CHECK(v.get("sites")->items[0].get("frames")->items[0].text == "a \xc3\xa9");
    CHECK(v.get("ratio")->number == 1.5);
    CHECK_FALSE(v.get("ratio")->is_integer);
    CHECK(v.get("ok")->boolean);
    CHECK(v.get("none")->kind == JsonValue::Kind::null);
    CHECK(v.count("missing") == 0);
}

TEST_CASE("corrupt input is an error with a position, never a crash") {
    JsonValue v;
    std::string err;
    for (const char *bad : {"", "{", "{\"a\":}", "{\"a\":1,}", "[1 2]", "\"unterminated", "{\"a\":1} x",
                            "tru", "{\"a\":\"\\q\"}", "-", "{\"a\":1.2.3}"}) {
        err.clear();
        CHECK_FALSE(parse_json(bad, v, err));
        CHECK(err.find("at byte") != std::string::npos);
    }
    std::string deep(10000, '[');
    CHECK_FALSE(parse_json(deep, v, err));
    CHECK(err.find("nested too deeply") != std::string::npos);
}
