// profile.h — what earlier runs learned about call sites, in a TOML file.
//
// Invariants: read once at start-up; merged and rewritten at exit by the
// process that started the shim (write to a temporary name, then rename, so
// a reader never sees half a file and concurrent writers lose at most one
// run's additions, never the file). Human-readable: every entry carries the
// frames as text, the decision and the evidence.
#pragma once

#include "config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace spillway {

struct ProfileEntry {
    uint64_t identity = 0;
    Access access = Access::unknown;
    std::string decision;
    std::string evidence;
    std::vector<std::string> frames;
    uint64_t runs = 1;
};

void profile_load(const Settings &s);
Access profile_lookup(uint64_t identity);
void profile_save(const Settings &s);

// Exposed for tests and the CLI.
bool profile_read_file(const std::string &path, std::string &out);
bool profile_parse(const std::string &text, const std::string &source,
                   std::vector<ProfileEntry> &out, std::string &error);
std::string profile_render(const std::vector<ProfileEntry> &entries);
// Entries of `newer` replace or extend those of `older` (same identity).
std::vector<ProfileEntry> profile_merge(const std::vector<ProfileEntry> &older,
                                        const std::vector<ProfileEntry> &newer);

} // namespace spillway
