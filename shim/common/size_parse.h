// size_parse.h — sizes as users write them ("64MiB", "1.5GiB", "4096"),
// and as the shim and the tool print them.
//
// Invariant: a size either parses exactly into bytes or yields an error
// message saying what was expected; nothing is silently rounded to zero.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spillway {

// Units: B, K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024) and KB, MB, GB, TB
// (powers of 1000). A fraction is allowed with a unit ("1.5GiB").
bool parse_size(std::string_view text, uint64_t &bytes, std::string &error);

// "64MiB", "1.50GiB", "512B": the largest binary unit that reads well.
std::string format_size(uint64_t bytes);

// Like format_size, but always exact: a whole number of the largest unit
// that divides it, else plain bytes (parses back to the same value).
std::string format_size_exact(uint64_t bytes);

// For tables and summaries (the tool's), three significant digits:
// "64.0MiB", "1.50GiB", "300GiB", "512B". Not meant to be parsed back.
std::string human_size(unsigned long long bytes);

// Shell-style glob with * and ?, used by call-site rules.
bool glob_match(std::string_view pattern, std::string_view text);

} // namespace spillway
