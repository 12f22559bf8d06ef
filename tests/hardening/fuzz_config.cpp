// fuzz_config.cpp — libFuzzer target: spillway::parse_config_text on
// arbitrary bytes must return (ok or one error line), never crash or hang;
// an accepted config must satisfy the validated invariants.
#include "config.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string_view text(reinterpret_cast<const char *>(data), size);
    spillway::Settings s;
    auto err = spillway::parse_config_text(text, "fuzz.toml", s);
    if (err) {
        if (err->empty() || err->find('\n') != std::string::npos) abort(); // one line, always
    } else {
        if (s.threshold < spillway::kMinThreshold) abort();
        if (s.spill_dir.empty() || s.spill_dir[0] != '/') abort();
        if (s.callsite_depth < 1 || s.callsite_depth > 64) abort();
        (void)spillway::describe_settings(s);
    }
    return 0;
}
