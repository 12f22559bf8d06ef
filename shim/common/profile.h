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

// A site's buffers are short-lived when the program freed every one of
// them within this of its allocation (a temporary: numpy's `A @ Q` inside
// scikit-learn's randomized SVD lives a fraction of a second).
constexpr uint64_t kShortLifeNs = 1'000'000'000;

struct ProfileEntry {
    uint64_t identity = 0;
    Access access = Access::unknown;
    std::string decision;
    std::string evidence;
    // The latest run's word on lifetime (key `lifetime`, "short" or "long";
    // an entry without it, from before, is long): a short-lived site's next
    // allocations go to anonymous memory while the cgroup has room for them
    // (policy.h, short_lived_fits).
    bool short_lived = false;
    std::string lifetime_evidence;
    std::vector<std::string> frames;
    uint64_t runs = 1;
};

void profile_load(const Settings &s);
Access profile_lookup(uint64_t identity);
bool profile_short_lived(uint64_t identity);
void profile_save(const Settings &s);

// Exposed for tests and the CLI.
bool profile_read_file(const std::string &path, std::string &out);
bool profile_parse(const std::string &text, const std::string &source,
                   std::vector<ProfileEntry> &out, std::string &error);
std::string profile_render(const std::vector<ProfileEntry> &entries);
// What the next run does with the site: "memory" (random access), "anon"
// (short-lived, where it fits) or "disk".
std::string profile_decision(const ProfileEntry &e);
// Entries of `newer` replace or extend those of `older` (same identity);
// a random access is kept against a newer run's other verdict, an older
// access against none (an entry for a lifetime alone), and the lifetime is
// always the newer run's.
std::vector<ProfileEntry> profile_merge(const std::vector<ProfileEntry> &older,
                                        const std::vector<ProfileEntry> &newer);

} // namespace spillway
