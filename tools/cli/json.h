// json.h — just enough JSON to read the shim's stats lines (and to quote
// strings in the lines the tool writes).
//
// Invariant: parse_json accepts exactly one JSON value (RFC 8259) and
// reports the byte offset of the first problem; it never throws. Integers
// are kept exactly as 64-bit values (byte counts exceed a double's 53 bits
// of precision only past 8 PiB, but exact is simpler to reason about).
#pragma once

#include "json_quote.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spillway::cli {

struct JsonValue {
    enum class Kind { null, boolean, number, string, array, object };
    Kind kind = Kind::null;
    bool boolean = false;
    double number = 0;
    uint64_t integer = 0; // exact, when the number was a non-negative integer
    bool is_integer = false;
    std::string text;
    std::vector<JsonValue> items;
    std::vector<std::pair<std::string, JsonValue>> members;

    // Member `key` of an object, or nullptr.
    const JsonValue *get(std::string_view key) const;
    // A non-negative integer member, or 0 when absent or not one.
    uint64_t count(std::string_view key) const;
};

bool parse_json(std::string_view text, JsonValue &out, std::string &error);

// text as a JSON string literal, quotes included (for the lines we write):
// the shim's own quoting (shim/common/json_quote.h).
using spillway::json_quote;

} // namespace spillway::cli
