// callsite.h — who asked for a large allocation, as a stable identity.
//
// Invariants:
//  * Capture runs only on the large path, after start-up, and never
//    recursively (a thread already capturing gets nullptr).
//  * A site is keyed in this run by its raw return addresses (fast lookup)
//    and identified across runs by hashing (object file base name, offset)
//    per frame, so ASLR does not change it.
//  * In a CPython process the innermost Python frames (pyframes.h) are part
//    of the site: of its key as (code object, line), of its identity as
//    "relpath:qualname" and line.
//  * Symbol names are resolved once per site, on the cold path (symbols.h:
//    the containing symbol from .symtab, a debug file or .dynsym; a name
//    that is only the nearest symbol below the address ends in "?"); never
//    on the warm path.
//  * CallSite objects live until exit (a job has a bounded number of sites).
#pragma once

#include "config.h"
#include "sites/pyframes.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace spillway {

constexpr unsigned kMaxFrames = 64;

struct CallSite {
    uint64_t key = 0;      // this run: hash of raw addresses
    uint64_t identity = 0; // across runs: hash of (module, offset) pairs
    unsigned depth = 0;
    uintptr_t frames[kMaxFrames] = {};
    // Innermost Python frames (pyframes.h), shown before the native ones;
    // their "relpath:qualname:line" texts, "\0"-separated, from mimalloc.
    PyStack py;
    char *py_names = nullptr;
    const Rule *rule = nullptr; // first matching rule, resolved once
    std::atomic<int> access{(int)Access::unknown}; // learned or from a rule/profile
    // Its access came from an earlier run's profile: only a random verdict
    // of this run may change it (sampler.cpp, teachable), and then it is
    // this run's to save.
    std::atomic<bool> from_profile{false};
    std::atomic<uint64_t> allocs{0}, bytes{0}, fallbacks{0};
    // Its large allocations the program freed (not realloc's moves: their
    // bytes live on) and the longest any of them lived: the lifetime this
    // run saves (profile.h, kShortLifeNs).
    std::atomic<uint64_t> freed{0}, longest_life_ns{0};
    // An earlier run's profile says its buffers are short-lived (policy.h).
    bool short_lived_in_profile = false;
    std::atomic<uint64_t> by_backing[4] = {};
    char evidence[160] = {0};
    // Function names of the frames, resolved once when the site is first
    // seen (the only moment its stack is at hand): "\0"-separated, from
    // mimalloc; "" where no symbol is known.
    char *names = nullptr;
    std::atomic<uint64_t> classified_after_ns{0};
    CallSite *next = nullptr; // hash chain
    CallSite *all_next = nullptr;
};

void callsite_init(const Settings &s);
// Captures the current stack (skipping the shim's own frames) and returns
// its site, creating it on first sight; nullptr when disabled or re-entered.
CallSite *callsite_capture();
// "module+0xoffset symbol" per frame, for reports and the profile.
std::string callsite_describe(const CallSite *site, unsigned max_frames);
std::string callsite_identity_hex(const CallSite *site);
// Every site seen, as a JSON array for the stats file.
std::string callsite_stats_json();
CallSite *callsite_list();
// Readable per-site summary (log level info and above).
void callsite_log_summary();

// Fork (fork_safety.h): prepare waits for captures in flight unless this
// thread is inside one (false then); the child re-initialises the locks.
bool callsite_fork_prepare();
void callsite_fork_parent();
void callsite_after_fork_child();

// For tests and the profile: identity of a site from (module, offset) pairs.
uint64_t identity_hash_step(uint64_t h, const char *module_base, uintptr_t offset);

} // namespace spillway
