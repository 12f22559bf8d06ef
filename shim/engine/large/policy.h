// policy.h — the decision: which backing a large allocation gets.
//
// Invariant: decide() is a pure function of its inputs (request, site,
// settings, the headroom figure it is handed, whether the spill dir is
// usable); it touches no file and takes no lock, so it is unit-testable and
// cheap. The caller carries out the decision and its fallback chain.
#pragma once

#include "backing/backing.h"
#include "config.h"

#include <cstddef>

namespace spillway {

struct CallSite;

// Internal request flag: a small request routed to the large path only for
// an alignment mimalloc cannot give; it always gets anonymous memory.
constexpr unsigned kFlagAlignmentOnly = 1u << 30;
// spillway_alloc_disk: a spill file or failure, never a fallback.
constexpr unsigned kFlagRequireDisk = 1u << 29;
// A plain malloc (not calloc, not aware code): a recycled region may be
// handed over with its last owner's bytes (recycle.h); otherwise it is zeroed.
constexpr unsigned kFlagMayBeDirty = 1u << 28;
// A chunk of the block zone (block_zone.h: CPython's object arenas): on
// disk under "auto" or "disk" (anonymous memory if no file), advised random
// and kept so (an object heap is read scattered), no call site (its
// allocations are the interpreter's, not a site's).
constexpr unsigned kFlagObjectBlocks = 1u << 27;

struct Request {
    size_t size = 0;
    unsigned flags = 0;       // SPILLWAY_PREFER_* / RANDOM_ACCESS from spillway_alloc
    const CallSite *site = nullptr;
};

struct Decision {
    Backing backing = Backing::anon;
    bool random_advice = false;    // MADV_RANDOM on the region
    bool advice_pinned = false;    // the caller or a rule said how it is accessed: the detector keeps it
    bool loud = false;             // a random-access site sent to disk: warn once
    Backing fallback = Backing::anon; // if the chosen backing cannot be had (none: fail)
    bool own_file = false;         // disk in a file of its own, whatever the size
    const char *why = "";          // one phrase for the log and tests
};

struct PolicyInputs {
    const Settings *settings = nullptr;
    bool disk_usable = false;
    uint64_t headroom = UINT64_MAX; // limit minus unreclaimable usage
};

Decision decide(const Request &req, const PolicyInputs &in);

// The access class a request carries (flags, rule, learned profile).
Access request_access(const Request &req);

// Under "auto", a site the profile calls short-lived (profile.h: every
// buffer freed within a second, in the latest run) gets anonymous memory
// when this allocation fits: tiering could demote it if it lives on
// (tiering on, at least tiering.min_size), and the cgroup keeps
// tiering.demote_margin of headroom beyond it, so no demotion starts. Why:
// a temporary on disk takes the same page cache while it lives (its dirty
// pages cannot be dropped), and on top of that pays a fault per 4 KiB page
// and the writeback pacer's write of every byte before it is freed.
// scikit-learn's PCA (tests/bench/jobs, 512 MiB limit) makes 17 temporaries
// of 82 MiB that live a fraction of a second each (docs/limitations.md,
// "What spilling costs"). Anonymous memory, not a memfd: 2 MiB pages, as
// numpy asks for its own arrays, and a fork child's private copy, as
// without spillway. A random site's verdict comes first (memory).
bool short_lived_fits(const Request &req, const Settings &s, uint64_t headroom);

} // namespace spillway
