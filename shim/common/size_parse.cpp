// size_parse.cpp — see size_parse.h.
#include "size_parse.h"

#include <cctype>
#include <cmath>
#include <cstdio>

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
} // namespace

bool parse_size(std::string_view text, uint64_t &bytes, std::string &error) {
    auto fail = [&](const char *why) {
        error = std::string("expected a size such as \"64MiB\" or \"2GiB\" (") + why +
                "), got \"" + std::string(text) + "\"";
        return false;
    };
    size_t i = 0;
    while (i < text.size() && text[i] == ' ') i++;
    uint64_t whole = 0;
    size_t digits = 0;
    for (; i < text.size() && isdigit((unsigned char)text[i]); i++, digits++) {
        if (whole > (UINT64_MAX - 9) / 10) return fail("number too large");
        whole = whole * 10 + (text[i] - '0');
    }
    double fraction = 0, scale = 0.1;
    bool has_fraction = false;
    if (i < text.size() && text[i] == '.') {
        has_fraction = true;
        for (i++; i < text.size() && isdigit((unsigned char)text[i]); i++, digits++) {
            fraction += (text[i] - '0') * scale;
            scale /= 10;
        }
    }
    if (digits == 0) return fail("no number");
    while (i < text.size() && text[i] == ' ') i++;
    std::string_view unit = text.substr(i);
    while (!unit.empty() && unit.back() == ' ') unit.remove_suffix(1);
    for (const Unit &u : kUnits) {
        if (unit != u.name) continue;
        if (has_fraction && u.factor == 1) return fail("a fraction needs a unit");
        if (whole > UINT64_MAX / u.factor) return fail("size too large");
        uint64_t extra = (uint64_t)std::llround(fraction * (double)u.factor);
        if (whole * u.factor > UINT64_MAX - extra) return fail("size too large");
        bytes = whole * u.factor + extra;
        return true;
    }
    return fail("unknown unit; use B, KiB, MiB, GiB or TiB");
}

// Binary units, for every size the project prints.
static const char *const kUnitNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};

std::string format_size(uint64_t bytes) {
    const char *const *names = kUnitNames; // up to TiB: what parse_size reads back
    int unit = 0;
    uint64_t factor = 1;
    while (unit < 4 && bytes >= factor * 1024) {
        factor *= 1024;
        unit++;
    }
    char buf[48];
    if (bytes > UINT64_MAX - factor) // a rounded "x.yyTiB" could not be parsed back
        snprintf(buf, sizeof buf, "%lluB", (unsigned long long)bytes);
    else if (bytes % factor == 0)
        snprintf(buf, sizeof buf, "%llu%s", (unsigned long long)(bytes / factor), names[unit]);
    else
        snprintf(buf, sizeof buf, "%.2f%s", (double)bytes / (double)factor, names[unit]);
    return buf;
}

std::string format_size_exact(uint64_t bytes) {
    const char *const *names = kUnitNames;
    int unit = 0;
    uint64_t factor = 1;
    while (unit < 4 && bytes && bytes % (factor * 1024) == 0) {
        factor *= 1024;
        unit++;
    }
    return std::to_string(bytes / factor) + names[unit];
}

std::string human_size(unsigned long long bytes) {
    if (bytes < 1024) return std::to_string(bytes) + kUnitNames[0];
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    char buf[32];
    snprintf(buf, sizeof buf, v < 10 ? "%.2f%s" : v < 100 ? "%.1f%s" : "%.0f%s", v, kUnitNames[u]);
    return buf;
}

bool glob_match(std::string_view pattern, std::string_view text) {
    // Iterative matcher with single-star backtracking: linear in practice,
    // never exponential, so a hostile pattern cannot hang start-up.
    size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = t;
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            p++;
            t++;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') p++;
    return p == pattern.size();
}

} // namespace spillway
