// fuzz_size_glob.cpp — libFuzzer target for parse_size, format_size and
// glob_match. The first byte splits the input into a pattern and a text.
// Checks: no crash/hang; a parsed size formats and re-parses to within the
// formatting's rounding; glob_match("*", x) and glob_match(x, x) for x
// without wildcards are true.
#include "size_parse.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string_view all(reinterpret_cast<const char *>(data), size);
    uint64_t bytes = 0;
    std::string err;
    if (spillway::parse_size(all, bytes, err)) {
        std::string f = spillway::format_size(bytes);
        uint64_t again = 0;
        std::string err2;
        if (!spillway::parse_size(f, again, err2)) abort();
        // format_size keeps 2 decimals: within 1% (or exact for whole units)
        uint64_t diff = again > bytes ? again - bytes : bytes - again;
        if (diff > bytes / 100 + 1) abort();
    } else if (err.empty()) {
        abort();
    }
    if (size == 0) return 0;
    size_t cut = data[0] % size;
    std::string_view pattern = all.substr(1, cut > 0 ? cut - 1 : 0);
    std::string_view text = all.substr(cut);
    (void)spillway::glob_match(pattern, text);
    if (!spillway::glob_match("*", text)) abort();
    if (text.find_first_of("*?") == std::string_view::npos && !spillway::glob_match(text, text)) abort();
    return 0;
}
