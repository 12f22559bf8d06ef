// size_parse.cpp — see size_parse.h.
#include "size_parse.h"

#include "size_text.h"

#include <cstdio>

namespace spillway {

bool parse_size(std::string_view text, uint64_t &bytes, std::string &error) {
    const char *why = nullptr;
    if (parse_size_text(text.data(), text.size(), &bytes, &why)) return true;
    int need = bad_size_message(nullptr, 0, why, text.data(), text.size());
    error.assign((size_t)need, '\0');
    bad_size_message(error.data(), (size_t)need + 1, why, text.data(), text.size());
    return false;
}

// Binary units, for every size the project prints.
static const char *const kUnitNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};

std::string format_size(uint64_t bytes) {
    char buf[48];
    format_size_text(buf, sizeof buf, bytes);
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
