// json_quote.cpp — see json_quote.h. The rule is json_text.h's.
#include "json_quote.h"

#include "json_text.h"

namespace spillway {

std::string json_quote(std::string_view text) {
    std::string out(json_quote_into(nullptr, 0, text.data(), text.size()), '\0');
    json_quote_into(out.data(), out.size() + 1, text.data(), text.size());
    return out;
}

} // namespace spillway
