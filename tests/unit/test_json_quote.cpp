// test_json_quote.cpp — the one JSON string quoting of the shim and the tool.
#include "json_quote.h"

#include <catch2/catch.hpp>
#include <string>

using spillway::json_quote;

TEST_CASE("json_quote escapes quote, backslash and every control character") {
    CHECK(json_quote("plain") == "\"plain\"");
    CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
    // Control characters are escaped, never dropped (a command line with a
    // tab or newline must still read back as itself).
    CHECK(json_quote(std::string("t\tn\nz\x01", 6)) == "\"t\\u0009n\\u000az\\u0001\"");
    CHECK(json_quote(std::string("\0", 1)) == "\"\\u0000\"");
    CHECK(json_quote("\x1f") == "\"\\u001f\"");
    CHECK(json_quote(" ~\x7f") == "\" ~\x7f\""); // 0x20 and up: as they are
    CHECK(json_quote("\xc3\xa9") == "\"\xc3\xa9\"");  // UTF-8 bytes copied
}
