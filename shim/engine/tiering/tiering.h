// tiering.h — the decisions of adaptive tiering: which disk regions move
// into memory, and which memory regions move to disk, and when.
//
// Promotion: a disk region in a random phase (the access detector's verdict:
// Region::phase == Verdict::random, and its fault_rate; sampler.h) moves
// into memory while the cgroup has room for it: limit, minus unreclaimable
// usage, minus memory.reserve, minus what other processes of the cgroup
// have claimed. When the room is short, the candidates with the
// most benefit (pages faulted in per second per byte) go first. A region
// whose fork snapshot once had to move to disk (the process forks children
// while it writes the region: a DataLoader's epochs) needs room for twice
// its size: at the next fork the children keep the memfd and the parent's
// copies grow beside it, which promoting into the room for one only would
// have the job OOM-killed (the epochs job, epoch 2 at 1.5 GiB).
// Demotion: when unreclaimable usage comes within demote_margin of the
// limit, or would reach it within horizon_ms at its current growth rate, or
// the kernel reports pressure (cgroup v2 memory.events max/oom, PSI), memory
// and anon regions move to disk, coldest first, until that much is freed.
// The part of the growth that is this process's memory and anon regions
// filling is bounded: they can add no more than their pages not yet
// resident. Extrapolating a fill past its region's end demoted a 256 MiB
// memfd region that fitted a 512 MiB container with room to spare, when the
// fill took longer than two looks (integration scenario 9, issue 25).
//
// Invariant: every function here is pure (inputs in, plan out): no file,
// no lock, no clock, so the rules are unit-tested exactly. tiering_loop.cpp
// gathers the inputs and carries the plans out.
#pragma once

#include "backing/backing.h"
#include "config.h"
#include "access/access_detector.h" // Verdict: the detector's phase, as Region::phase holds it

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spillway {

struct TierCandidate {
    uintptr_t start = 0;
    size_t bytes = 0;
    Backing backing = Backing::none;
    uint8_t phase = 0;            // Region::phase: a Verdict (the access detector's)
    uint64_t phase_since_ns = 0;
    uint32_t fault_rate = 0;      // pages faulted in per second
    uint64_t last_move_ns = 0;    // 0: never moved by tiering
    unsigned moves = 0;           // tiering moves of this region so far
    uint64_t born_ns = 0;         // Region::born_ns: its allocation
    bool forked_copies = false;   // Region::snapshot_spilled or fork_written: the parent writes it while forked children live
};

// When a memory or anon region came into memory: its last move (for it,
// a promotion), or its allocation if it never moved. The later of the two:
// a move history is kept by address and may be an earlier region's.
uint64_t in_memory_since(const TierCandidate &c);

// Pages per second per byte of region: what one byte in memory saves.
double tier_benefit(const TierCandidate &c);

// Room for promotions: limit - unreclaimable - reserve - claimed, never
// below zero; UINT64_MAX without a limit.
uint64_t promotion_room(bool limited, uint64_t limit, uint64_t unreclaimable, uint64_t reserve,
                        uint64_t claimed_by_others);

// A region moved recently may not move back yet: cooldown, doubled for each
// earlier move (at most 32x), so a region cannot thrash.
bool cooled_down(const TierCandidate &c, uint64_t now_ns, const TierSettings &s);

// Indices of the candidates to promote now, best first: disk, random phase,
// at least min_size, cooled down, fitting in room and in the rate budget
// (tokens: bytes the promote_rate allows now; a region larger than a whole
// second's budget goes when the budget is full).
std::vector<size_t> plan_promotions(const std::vector<TierCandidate> &c, uint64_t room, double tokens,
                                    uint64_t now_ns, const TierSettings &s);

struct PressureInput {
    bool limited = false;
    uint64_t limit = 0, unreclaimable = 0;
    // Sustained bytes per second of unreclaimable usage (may be < 0), less
    // the fill below when it is known.
    double growth = 0;
    // This process's memory and anon regions that existed at the last look
    // too (0 and 0: not measured, the whole growth is in `growth`): bytes
    // per second of their pages becoming resident over the last look, and
    // their bytes not resident yet, the most that filling them can add.
    // New regions are not in it: allocating them is a trend.
    double fill_growth = 0;
    uint64_t unfilled = 0;
    uint64_t new_max_events = 0; // cgroup v2 memory.events max + oom since the last look
    double psi_some_avg10 = 0;   // cgroup v2 memory.pressure, percent
    // The demotion that would go first (plan_demotions): its region's bytes
    // (0: none), and the bytes per second a demotion frees here: the last
    // one's, measured (0: none yet; kAssumedDemoteRate).
    uint64_t move_bytes = 0;
    double demote_rate = 0;
};

enum class DemoteReason : uint8_t { none, near_limit, growing, kernel_pressure };
const char *demote_reason_name(DemoteReason r);

struct PressureVerdict {
    DemoteReason reason = DemoteReason::none;
    uint64_t need = 0; // bytes to move out of memory
    // growing, because the move itself would be outrun (move_outrun): the
    // margin and the horizon alone would wait. Said in the demotion's log
    // line, the only place that tells the two rules apart.
    bool outran = false;
};

// PSI "some" avg10 above this (percent) counts as pressure.
constexpr double kPsiPressurePercent = 10.0;

// What a demotion is taken to free per second before this process has made
// one: a 600 MiB memfd region went to disk at 150-275 MiB/s here with two
// busy loops on two CPUs (integration scenario 14), 80-180 before its
// writes were queued (direct_write.h).
constexpr double kAssumedDemoteRate = 150.0 * (1 << 20);

// A demotion frees its region chunk by chunk while the growth goes on. When
// the growth is faster, usage keeps climbing until the move ends, by
// (growth - rate) x (move_bytes / rate): bytes never negative. The verdict
// wants them free too, so the move starts while they still fit. The
// horizon's rule alone started scenario 14's move 0.44-0.56 s into a
// 300 MiB/s growth, 250 MiB from the limit, and the move, freeing
// 80-145 MiB/s, was OOM-killed half way in about half the runs. Only the
// growth that is not regions filling counts (a fill ends: tiering.h above).
double move_outrun(const PressureInput &in);

PressureVerdict assess_pressure(const PressureInput &in, const TierSettings &s);
// The growth expected within horizon_ms (bytes, never negative): `growth`
// extrapolated, plus the fill extrapolated up to what is left unfilled.
double growth_forecast(const PressureInput &in, const TierSettings &s);

// Indices of the memory and anon regions to demote, coldest first until
// `need` bytes are covered. Survival outranks cooldown: none is applied.
// Coldest is the longest in memory (in_memory_since), then the largest; a
// memory region's fault_rate is not a measure of it: the detector watches
// disk regions only, so the rate a promoted region carries is its last one
// on disk, how hot it was before it moved. Ranked by that stale rate, the
// scipy job (tests/bench/jobs) demoted the transposed matrix's indices,
// read at every PageRank iteration and promoted a second earlier, and kept
// the first matrix's, unused since the phase before (promoted at a lower
// rate): 3 x 114 MiB read back from disk over three iterations. A job moves
// through its phases, so what came into memory longest ago is the best
// guess of what it has finished with.
std::vector<size_t> plan_demotions(const std::vector<TierCandidate> &c, uint64_t need,
                                   const TierSettings &s);

// Page cache to give up before a promotion allocates its memory, when the
// cgroup's free space (limit - usage) is short of it: the kernel would
// otherwise reclaim it page by page inside the allocation (unmapping each
// page from the job's tables, a TLB flush each), which made allocating a
// 256 MiB promotion take 0.1-1 s. Indices of the disk regions to page out,
// least benefit first, until `need` bytes: never the one promoted (skip),
// never one in a random phase (its cached pages are what it reads).
std::vector<size_t> plan_cache_donors(const std::vector<TierCandidate> &c, size_t skip, uint64_t need);

// One memory or anon region's residency at a look (measured with mincore).
struct FillSample {
    const void *id = nullptr; // the Region: with born_ns, tells a region from a later one at the same place
    uint64_t born_ns = 0;
    size_t bytes = 0, resident = 0;
};
struct FillChange {
    int64_t filled = 0;    // bytes that became resident (negative: released)
    uint64_t unfilled = 0; // bytes not resident now
};
// Over the regions present at both looks (same id, birth and size): what
// filled between them and what is left to fill.
FillChange fill_change(const std::vector<FillSample> &before, const std::vector<FillSample> &now);

// Growth rate of usage over one look: (value - prev) / dt, bytes per second.
double growth_rate(uint64_t prev, uint64_t value, uint64_t dt_ns);
// What the forecast uses: growth sustained over the last two looks (the
// smaller rate). A single jump — one large allocation, or another process
// of the cgroup promoting a region — is not a trend.
inline double sustained_growth(double previous, double now) { return previous < now ? previous : now; }

} // namespace spillway
