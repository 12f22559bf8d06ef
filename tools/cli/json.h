// json.h — reading the JSON lines the shim and the tool write (stats lines,
// live snapshots, recordings) with nlohmann-json, and the few accessors the
// readers share: a member that is absent, or of another type than asked,
// reads as 0, "" or no items.
//
// Invariant: nothing here throws (parse errors are an empty result; no
// get<>() of a type the value does not hold). Integers are exact 64-bit
// values (nlohmann keeps a non-negative integer as uint64_t). The lines the
// tool writes are quoted with the shim's own json_quote (shim/common): the
// shim's writers run inside the allocator and stay hand-written.
#pragma once

#include "json_quote.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace spillway::cli {

using Json = nlohmann::json;

// text as one JSON object; nullopt when it is not exactly one (a torn or
// corrupt line, trailing bytes, or another kind of value).
inline std::optional<Json> parse_object(std::string_view text) {
    Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!v.is_object()) return std::nullopt;
    return v;
}

// Member `key` of v, or nullptr (also when v is not an object).
inline const Json *member(const Json &v, const char *key) {
    if (!v.is_object()) return nullptr;
    auto it = v.find(key);
    return it == v.end() ? nullptr : &*it;
}

// A non-negative integer member of v, or 0 when absent or not one.
inline uint64_t count(const Json &v, const char *key) {
    const Json *m = member(v, key);
    return m && m->is_number_unsigned() ? m->get<uint64_t>() : 0;
}

// v's value when it is a number, a string, a boolean; else 0, "", false.
inline double number(const Json *v) { return v && v->is_number() ? v->get<double>() : 0; }
inline std::string text(const Json *v) { return v && v->is_string() ? v->get<std::string>() : std::string(); }
inline bool boolean(const Json *v) { return v && v->is_boolean() && v->get<bool>(); }

// The elements of v when it is an array; none otherwise.
inline const Json::array_t &items(const Json *v) {
    static const Json::array_t kNone;
    return v && v->is_array() ? v->get_ref<const Json::array_t &>() : kNone;
}

using spillway::json_quote;

} // namespace spillway::cli
