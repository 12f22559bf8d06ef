// test_json.cpp — json.h: one JSON object per line (the stats lines the
// shim writes), read through nlohmann-json, and the accessors that read an
// absent or mistyped member as 0, "" or no items, never with an exception.
#include "json.h"

#include <catch2/catch.hpp>
#include <string>

using namespace spillway::cli;

TEST_CASE("a stats line parses, integers exactly") {
    auto v = parse_object(R"({"pid":42,"cmd":"python3 -c \"x\"","regions":{"disk":2,"memory":0,"anon":1},)"
                          R"("bytes":{"disk":18446744073709551615},"sites":[{"id":"ab","frames":["a \u00e9"]}],)"
                          R"("ratio":1.5,"ok":true,"none":null})");
    REQUIRE(v);
    CHECK(count(*v, "pid") == 42);
    CHECK(text(member(*v, "cmd")) == "python3 -c \"x\"");
    CHECK(count(*member(*v, "regions"), "disk") == 2);
    CHECK(count(*member(*v, "regions"), "anon") == 1);
    CHECK(count(*member(*v, "bytes"), "disk") == 18446744073709551615ull);
    const Json &site = items(member(*v, "sites")).at(0);
    CHECK(text(&items(member(site, "frames")).at(0)) == "a \xc3\xa9");
    CHECK(number(member(*v, "ratio")) == 1.5);
    CHECK(boolean(member(*v, "ok")));
    REQUIRE(member(*v, "none"));
    CHECK(member(*v, "none")->is_null());
    CHECK(member(*v, "missing") == nullptr);
}

TEST_CASE("an absent or mistyped member reads as nothing") {
    auto v = parse_object(R"({"neg":-3,"frac":2.5,"big":1e30,"s":"7","list":[1,2],"obj":{"a":1},"t":true})");
    REQUIRE(v);
    // count: non-negative integers only
    for (const char *key : {"neg", "frac", "big", "s", "list", "obj", "t", "missing"}) CHECK(count(*v, key) == 0);
    CHECK(number(member(*v, "neg")) == -3);
    CHECK(number(member(*v, "s")) == 0);
    CHECK(text(member(*v, "frac")).empty());
    CHECK(text(nullptr).empty());
    CHECK_FALSE(boolean(member(*v, "s")));
    CHECK_FALSE(boolean(nullptr));
    // items: an array's elements; an object, a scalar or nothing has none
    CHECK(items(member(*v, "list")).size() == 2);
    CHECK(items(member(*v, "obj")).empty());
    CHECK(items(member(*v, "s")).empty());
    CHECK(items(nullptr).empty());
    // member of something that is no object
    CHECK(member(*member(*v, "list"), "a") == nullptr);
    CHECK(count(*member(*v, "s"), "a") == 0);
}

TEST_CASE("corrupt input, or a value that is no object, is no object; never a crash") {
    for (const char *bad : {"", "{", "{\"a\":}", "{\"a\":1,}", "[1 2]", "\"unterminated", "{\"a\":1} x", "tru",
                            "{\"a\":\"\\q\"}", "-", "{\"a\":1.2.3}", "[1,2]", "42", "\"text\"", "null",
                            "{\"pid\":42", "{\"pid\":42}}"})
        CHECK_FALSE(parse_object(bad));
    // Deep nesting is read without recursion, and still no object.
    CHECK_FALSE(parse_object(std::string(100000, '[')));
    CHECK_FALSE(parse_object(std::string(100000, '[') + std::string(100000, ']')));
    std::string deep;
    for (int i = 0; i < 10000; i++) deep += "{\"a\":";
    deep += "1" + std::string(10000, '}');
    auto v = parse_object(deep);
    REQUIRE(v);
    CHECK(member(*v, "a") != nullptr);
}
