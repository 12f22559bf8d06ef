// json_quote.h — a string as a JSON string literal, for every JSON line the
// shim and the tool write.
//
// Invariant: the output is valid RFC 8259 for any input bytes (the rule is
// json_text.h's, which the front uses without libstdc++): quote and
// backslash escaped, every control character below 0x20 as \u00XX (never
// dropped), other bytes copied as they are.
#pragma once

#include <string>
#include <string_view>

namespace spillway {

// text as a JSON string literal, quotes included.
std::string json_quote(std::string_view text);

} // namespace spillway
