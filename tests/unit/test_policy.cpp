// test_policy.cpp — the decision table: global policy, explicit flags (and
// the required file of spillway_alloc_disk),
// rules, and auto's physics (sequential to disk, random to memory while the
// cgroup has headroom, else disk loudly).
#include "sites/callsite.h"
#include "large/policy.h"
#include "spillway.h"

#include <catch2/catch.hpp>
#include <string>

using namespace spillway;

static Decision run_with(const Settings &s, size_t size, unsigned flags, const CallSite *site, bool disk_ok,
                         uint64_t headroom) {
    PolicyInputs in;
    in.settings = &s;
    in.disk_usable = disk_ok;
    in.headroom = headroom;
    Request r;
    r.size = size;
    r.flags = flags;
    r.site = site;
    return decide(r, in);
}

static Decision run(Policy global, size_t size, unsigned flags, const CallSite *site, bool disk_ok,
                    uint64_t headroom) {
    Settings s;
    s.policy = global;
    s.memory_reserve = 100;
    return run_with(s, size, flags, site, disk_ok, headroom);
}

TEST_CASE("global policies") {
    CHECK(run(Policy::disk, 1000, 0, nullptr, true, 0).backing == Backing::disk);
    CHECK(run(Policy::disk, 1000, 0, nullptr, false, 0).backing == Backing::anon);
    CHECK(run(Policy::memory, 1000, 0, nullptr, true, 0).backing == Backing::memory);
    CHECK(run(Policy::anon, 1000, 0, nullptr, true, 0).backing == Backing::anon);
    CHECK(run(Policy::auto_, 1000, 0, nullptr, true, 0).backing == Backing::disk);
    CHECK(run(Policy::auto_, 1000, 0, nullptr, false, 0).backing == Backing::anon);
}

TEST_CASE("explicit flags win over the global policy") {
    CHECK(run(Policy::anon, 1000, SPILLWAY_PREFER_DISK, nullptr, true, 0).backing == Backing::disk);
    CHECK(run(Policy::disk, 1000, SPILLWAY_PREFER_MEMORY, nullptr, true, 0).backing == Backing::memory);
    CHECK(run(Policy::disk, 1000, kFlagAlignmentOnly, nullptr, true, 0).backing == Backing::anon);
}

TEST_CASE("an object-arena chunk: disk, random advice kept, anonymous memory without a spill dir") {
    for (Policy global : {Policy::auto_, Policy::disk}) {
        Decision d = run(global, 32u << 20, kFlagObjectBlocks, nullptr, true, UINT64_MAX);
        CHECK(d.backing == Backing::disk);
        CHECK(d.random_advice);
        CHECK(d.advice_pinned);
        CHECK_FALSE(d.own_file);
        CHECK(d.fallback == Backing::anon);
        CHECK(std::string(d.why) == "object arenas");
        CHECK(run(global, 32u << 20, kFlagObjectBlocks, nullptr, false, 0).backing == Backing::anon);
    }
}

TEST_CASE("a required file (spillway_alloc_disk) is a file of its own, with no fallback") {
    for (Policy global : {Policy::anon, Policy::memory, Policy::disk, Policy::auto_}) {
        Decision d = run(global, 1000, kFlagRequireDisk | SPILLWAY_RANDOM_ACCESS, nullptr, true, 0);
        CHECK(d.backing == Backing::disk);
        CHECK(d.fallback == Backing::none);
        CHECK(d.own_file);
        CHECK(d.random_advice);
        CHECK_FALSE(d.loud);
        CHECK(run(global, 1000, kFlagRequireDisk, nullptr, false, 0).backing == Backing::none);
    }
    Decision preferred = run(Policy::anon, 1000, SPILLWAY_PREFER_DISK, nullptr, true, 0);
    CHECK(preferred.fallback == Backing::memory);
    CHECK_FALSE(preferred.own_file);
}

TEST_CASE("random access: memory while the cgroup has headroom, else disk loudly") {
    Decision d = run(Policy::auto_, 1000, SPILLWAY_RANDOM_ACCESS, nullptr, true, 5000);
    CHECK(d.backing == Backing::memory);
    CHECK(d.random_advice);
    CHECK_FALSE(d.loud);
    d = run(Policy::auto_, 1000, SPILLWAY_RANDOM_ACCESS, nullptr, true, 1050); // < size + reserve
    CHECK(d.backing == Backing::disk);
    CHECK(d.loud);
    CHECK(d.random_advice);
    d = run(Policy::auto_, 1000, SPILLWAY_RANDOM_ACCESS, nullptr, false, 10);
    CHECK(d.backing == Backing::memory); // nowhere else to go
}

TEST_CASE("a site's rule or learned access decides") {
    Rule rule;
    rule.policy = Policy::memory;
    CallSite site;
    site.rule = &rule;
    CHECK(run(Policy::disk, 1000, 0, &site, true, 0).backing == Backing::memory);
    rule.policy = Policy::auto_;
    rule.access = Access::random;
    CHECK(run(Policy::auto_, 1000, 0, &site, true, 1 << 30).backing == Backing::memory);
    CallSite learned;
    learned.access = (int)Access::random;
    CHECK(run(Policy::auto_, 1000, 0, &learned, true, 1 << 30).backing == Backing::memory);
    CHECK(run(Policy::auto_, 1000, 0, &learned, true, 0).backing == Backing::disk);
    learned.access = (int)Access::sequential;
    CHECK(run(Policy::auto_, 1000, 0, &learned, true, 1 << 30).backing == Backing::disk);
}

TEST_CASE("a site the profile calls short-lived gets anonymous memory when tiering could demote it and it fits") {
    Settings s;
    s.policy = Policy::auto_;
    const uint64_t min = s.tiering.min_size, margin = s.tiering.demote_margin;
    CallSite temp;
    temp.short_lived_in_profile = true;
    auto decide_for = [&](const CallSite *site, size_t size, uint64_t headroom) {
        return run_with(s, size, 0, site, true, headroom);
    };
    Decision d = decide_for(&temp, min, min + margin);
    CHECK(d.backing == Backing::anon);
    CHECK(std::string(d.why).find("short-lived") != std::string::npos);
    CHECK(decide_for(&temp, min, min + margin - 1).backing == Backing::disk); // the margin would be eaten
    CHECK(decide_for(&temp, min - 1, UINT64_MAX).backing == Backing::disk);   // too small for tiering to demote
    s.tiering.enabled = false;
    CHECK(decide_for(&temp, min, UINT64_MAX).backing == Backing::disk); // nothing could demote it
    s.tiering.enabled = true;
    CallSite plain; // not short-lived: unknown access goes to disk
    CHECK(decide_for(&plain, min, UINT64_MAX).backing == Backing::disk);
    temp.access = (int)Access::random; // random comes first: a memfd region
    CHECK(decide_for(&temp, min, UINT64_MAX).backing == Backing::memory);
    temp.access = (int)Access::unknown;
    s.policy = Policy::disk; // the user's word
    CHECK(decide_for(&temp, min, UINT64_MAX).backing == Backing::disk);
}

TEST_CASE("advice named by the caller or a rule is pinned; learned advice is not") {
    CHECK(run(Policy::disk, 1000, SPILLWAY_RANDOM_ACCESS, nullptr, true, 0).advice_pinned);
    Rule rule;
    rule.policy = Policy::disk;
    rule.access = Access::random;
    CallSite ruled;
    ruled.rule = &rule;
    Decision d = run(Policy::auto_, 1000, 0, &ruled, true, 0);
    CHECK(d.random_advice);
    CHECK(d.advice_pinned);
    rule.access = Access::unknown; // a rule that names only a policy
    CHECK_FALSE(run(Policy::auto_, 1000, 0, &ruled, true, 0).advice_pinned);
    CallSite learned;
    learned.access = (int)Access::random;
    d = run(Policy::auto_, 1000, 0, &learned, true, 0);
    CHECK(d.random_advice);
    CHECK_FALSE(d.advice_pinned); // the detector may revise a guess
    CHECK_FALSE(run(Policy::auto_, 1000, 0, nullptr, true, 0).advice_pinned);
}
