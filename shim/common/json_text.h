// json_text.h — the rule for a string as a JSON string literal, over a
// caller's buffer: json_quote (json_quote.h) wraps it for the shim's and
// the tool's JSON lines; the front uses it as it is (it links no libstdc++)
// for the stats line of a process whose engine never started.
//
// Invariant: header-only over libc; valid RFC 8259 for any input bytes:
// quote and backslash escaped, every control character below 0x20 as
// \u00XX (never dropped), other bytes copied as they are.
#pragma once

#include <cstddef>
#include <cstdio>

namespace spillway {

// text as a JSON string literal, quotes included, into out[0..cap),
// NUL-terminated (cut if it does not fit); returns the length it needed
// (snprintf's convention).
inline size_t json_quote_into(char *out, size_t cap, const char *text, size_t len) {
    size_t used = 0;
    auto put = [&](char c) {
        if (used + 1 < cap) out[used] = c;
        used++;
    };
    put('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            put('\\');
            put((char)c);
        } else if (c < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", c);
            for (const char *p = buf; *p; p++) put(*p);
        } else {
            put((char)c);
        }
    }
    put('"');
    if (cap) out[used < cap ? used : cap - 1] = 0;
    return used;
}

} // namespace spillway
