// policy.cpp — see policy.h.
//
// The physics behind the table below: page cache is reclaimable, anonymous
// memory and memfd (shmem) are not; a random 8-byte write into a cold file
// page is a 4 KiB read-modify-write, so random-access buffers belong in
// memory while the cgroup can hold them, and on disk only as a last resort.
#include "large/policy.h"

#include "sites/callsite.h"
#include "spillway.h"

namespace spillway {

Access request_access(const Request &req) {
    if (req.flags & SPILLWAY_RANDOM_ACCESS) return Access::random;
    if (req.site) {
        if (req.site->rule && req.site->rule->access != Access::unknown) return req.site->rule->access;
        return (Access)req.site->access.load(std::memory_order_relaxed);
    }
    return Access::unknown;
}

static Policy effective_policy(const Request &req, const Settings &s) {
    if (req.flags & kFlagAlignmentOnly) return Policy::anon;
    if (req.flags & kFlagObjectBlocks) return Policy::disk; // the zone exists only under auto or disk
    if (req.flags & (SPILLWAY_PREFER_DISK | kFlagRequireDisk)) return Policy::disk; // see decide()
    if (req.flags & SPILLWAY_PREFER_MEMORY) return Policy::memory;
    if (req.flags & SPILLWAY_RANDOM_ACCESS) return Policy::auto_;
    if (req.site && req.site->rule) return req.site->rule->policy;
    return s.policy;
}

Decision decide(const Request &req, const PolicyInputs &in) {
    const Settings &s = *in.settings;
    Access access = request_access(req);
    Decision d;
    d.random_advice = access == Access::random || (req.flags & kFlagObjectBlocks);
    // A flag or a rule is the user's word; what a site learned is a guess
    // the detector may revise.
    d.advice_pinned = (req.flags & (SPILLWAY_RANDOM_ACCESS | kFlagObjectBlocks)) ||
                      (req.site && req.site->rule && req.site->rule->access != Access::unknown);
    switch (effective_policy(req, s)) {
    case Policy::anon:
        d.backing = Backing::anon;
        d.why = "policy anon";
        return d;
    case Policy::memory:
        d.backing = Backing::memory;
        d.why = "policy memory";
        return d;
    case Policy::disk:
        // Aware code that asked for a file gets shareable memory if no file
        // can be had (spillway.h), or nothing if it required one; a global
        // disk policy falls back to anon.
        d.fallback = (req.flags & kFlagRequireDisk) ? Backing::none
                     : (req.flags & SPILLWAY_PREFER_DISK) ? Backing::memory
                                                          : Backing::anon;
        d.own_file = req.flags & kFlagRequireDisk; // it is about to be named: never a pool
        d.backing = in.disk_usable ? Backing::disk : d.fallback;
        d.why = (req.flags & kFlagObjectBlocks) ? (in.disk_usable ? "object arenas" : "object arenas, spill dir unusable")
                : in.disk_usable ? "policy disk" : "policy disk, spill dir unusable";
        return d;
    case Policy::auto_:
        break;
    }
    if (access == Access::random) {
        uint64_t need = req.size + s.memory_reserve;
        if (in.headroom >= need || !in.disk_usable) {
            d.backing = Backing::memory;
            d.why = in.headroom >= need ? "random access, cgroup has headroom"
                                        : "random access, no headroom but no spill dir";
            return d;
        }
        d.backing = Backing::disk;
        d.loud = true;
        d.why = "random access but the cgroup has no headroom";
        return d;
    }
    if (req.site && req.site->short_lived_in_profile && short_lived_fits(req, s, in.headroom)) {
        d.backing = Backing::anon;
        d.why = "a short-lived site (profile), cgroup has headroom";
        return d;
    }
    d.backing = in.disk_usable ? Backing::disk : Backing::anon;
    d.why = in.disk_usable ? "sequential or unknown access" : "spill dir unusable";
    return d;
}

bool short_lived_fits(const Request &req, const Settings &s, uint64_t headroom) {
    const TierSettings &t = s.tiering;
    return t.enabled && req.size >= t.min_size && headroom >= req.size + t.demote_margin;
}

} // namespace spillway
