// size_text.h — the rules for sizes as users write them ("64MiB", "1.5GiB",
// "4096") and as the shim prints them, over caller buffers: the one
// implementation the front (which judges SPILLWAY_THRESHOLD before the
// engine is loaded), the engine and the tool all run. size_parse.h wraps it
// in std::string for the engine and the tool.
//
// Invariant: no allocation, no exception, no libstdc++ (the front links no
// libstdc++); a size either parses exactly into bytes or names why not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// Parses text[0..len). Units: B, K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024)
// and KB, MB, GB, TB (powers of 1000); a fraction only with a unit. On
// failure returns false and *reason says why, a constant such as "no
// number" (size_parse.h makes the whole message of it).
bool parse_size_text(const char *text, size_t len, uint64_t *bytes, const char **reason);

// "64MiB", "1.50GiB", "512B": the largest binary unit that reads well;
// what format_size returns. Returns snprintf's count.
int format_size_text(char *out, size_t cap, uint64_t bytes);

// The message for a size that did not parse, as the config reader and the
// environment's check both print it: expected a size such as "64MiB" or
// "2GiB" (WHY), got "TEXT". TEXT is written as one line (one_line_text).
// Returns the length it needed (snprintf's convention).
int bad_size_message(char *out, size_t cap, const char *why, const char *text, size_t len);

// Appends text[0..len) to out (NUL-terminated, at offset *used) as one line:
// a newline as \n, a carriage return as \r, another control character as a
// space, so a value cannot break the one-line contract of a message.
// *used grows by what it needed even when cap cut it (snprintf's rule).
void append_one_line(char *out, size_t cap, size_t *used, const char *text, size_t len);

} // namespace spillway
