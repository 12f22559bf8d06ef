// size_text.cpp — see size_text.h.
#include "size_text.h"

#include <cstdio>
#include <cstring>

namespace spillway {

namespace {

struct Unit {
    const char *name;
    uint64_t factor;
};
constexpr Unit kUnits[] = {
    {"", 1},          {"B", 1},
    {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
    {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000ull * 1000},
    {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000ull * 1000 * 1000},
    {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000ull * 1000 * 1000 * 1000},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// llround for 0 <= x < 2^52 (a fraction times a unit: below 2^40), without
// libm: the front links only libc. x - trunc(x) is exact in that range.
uint64_t round_half_up(double x) {
    uint64_t whole = (uint64_t)x;
    return x - (double)whole >= 0.5 ? whole + 1 : whole;
}

} // namespace

bool parse_size_text(const char *text, size_t len, uint64_t *bytes, const char **reason) {
    size_t i = 0;
    while (i < len && text[i] == ' ') i++;
    uint64_t whole = 0;
    size_t digits = 0;
    for (; i < len && is_digit(text[i]); i++, digits++) {
        if (whole > (UINT64_MAX - 9) / 10) return *reason = "number too large", false;
        whole = whole * 10 + (uint64_t)(text[i] - '0');
    }
    double fraction = 0, scale = 0.1;
    bool has_fraction = false;
    if (i < len && text[i] == '.') {
        has_fraction = true;
        for (i++; i < len && is_digit(text[i]); i++, digits++) {
            fraction += (text[i] - '0') * scale;
            scale /= 10;
        }
    }
    if (digits == 0) return *reason = "no number", false;
    while (i < len && text[i] == ' ') i++;
    size_t unit_len = len - i;
    while (unit_len && text[i + unit_len - 1] == ' ') unit_len--;
    for (const Unit &u : kUnits) {
        if (strlen(u.name) != unit_len || memcmp(u.name, text + i, unit_len) != 0) continue;
        if (has_fraction && u.factor == 1) return *reason = "a fraction needs a unit", false;
        if (whole > UINT64_MAX / u.factor) return *reason = "size too large", false;
        uint64_t extra = round_half_up(fraction * (double)u.factor);
        if (whole * u.factor > UINT64_MAX - extra) return *reason = "size too large", false;
        *bytes = whole * u.factor + extra;
        return true;
    }
    *reason = "unknown unit; use B, KiB, MiB, GiB or TiB";
    return false;
}

int format_size_text(char *out, size_t cap, uint64_t bytes) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"}; // what parse reads back
    int unit = 0;
    uint64_t factor = 1;
    while (unit < 4 && bytes >= factor * 1024) {
        factor *= 1024;
        unit++;
    }
    if (bytes > UINT64_MAX - factor) // a rounded "x.yyTiB" could not be parsed back
        return snprintf(out, cap, "%lluB", (unsigned long long)bytes);
    if (bytes % factor == 0)
        return snprintf(out, cap, "%llu%s", (unsigned long long)(bytes / factor), names[unit]);
    return snprintf(out, cap, "%.2f%s", (double)bytes / (double)factor, names[unit]);
}

void append_one_line(char *out, size_t cap, size_t *used, const char *text, size_t len) {
    for (size_t k = 0; k < len; k++) {
        char c = text[k];
        const char *put = c == '\n' ? "\\n" : c == '\r' ? "\\r" : nullptr;
        char one[2] = {(unsigned char)c < 0x20 ? ' ' : c, 0};
        if (!put) put = one;
        for (const char *p = put; *p; p++, (*used)++)
            if (*used + 1 < cap) out[*used] = *p;
    }
    if (cap) out[*used < cap ? *used : cap - 1] = 0;
}

int bad_size_message(char *message, size_t cap, const char *why, const char *text, size_t len) {
    int head = snprintf(message, cap, "expected a size such as \"64MiB\" or \"2GiB\" (%s), got \"", why);
    size_t used = head < 0 ? 0 : (size_t)head;
    append_one_line(message, cap, &used, text, len);
    append_one_line(message, cap, &used, "\"", 1);
    return (int)used;
}

} // namespace spillway
