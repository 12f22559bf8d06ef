// tiering.cpp — see tiering.h.
#include "tiering/tiering.h"

#include <algorithm>

namespace spillway {

double tier_benefit(const TierCandidate &c) {
    return c.bytes ? (double)c.fault_rate * 4096.0 / (double)c.bytes : 0;
}

uint64_t promotion_room(bool limited, uint64_t limit, uint64_t unreclaimable, uint64_t reserve,
                        uint64_t claimed_by_others) {
    if (!limited) return UINT64_MAX;
    uint64_t taken = unreclaimable + reserve + claimed_by_others;
    return limit > taken ? limit - taken : 0;
}

bool cooled_down(const TierCandidate &c, uint64_t now_ns, const TierSettings &s) {
    if (c.moves == 0 || c.last_move_ns == 0) return true;
    unsigned doublings = std::min(c.moves - 1, 5u);
    uint64_t wait = (uint64_t)s.cooldown_ms * 1'000'000ull << doublings;
    return now_ns >= c.last_move_ns + wait;
}

std::vector<size_t> plan_promotions(const std::vector<TierCandidate> &c, uint64_t room, double tokens,
                                    uint64_t now_ns, const TierSettings &s) {
    std::vector<size_t> eligible;
    for (size_t i = 0; i < c.size(); i++)
        if (c[i].backing == Backing::disk && c[i].phase == (uint8_t)Verdict::random && c[i].bytes >= s.min_size &&
            cooled_down(c[i], now_ns, s))
            eligible.push_back(i);
    std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
        double ba = tier_benefit(c[a]), bb = tier_benefit(c[b]);
        if (ba != bb) return ba > bb;
        return c[a].bytes < c[b].bytes; // equal benefit: more regions fit
    });
    std::vector<size_t> plan;
    for (size_t i : eligible) {
        uint64_t bytes = c[i].bytes;
        if ((c[i].forked_copies ? 2 * bytes : bytes) > room) continue; // a smaller, less useful one may still fit
        double need = (double)std::min<uint64_t>(bytes, s.promote_rate);
        if (tokens < need) break; // the rate budget is spent: the best waits for it
        plan.push_back(i);
        room -= bytes;
        tokens -= (double)bytes;
    }
    return plan;
}

const char *demote_reason_name(DemoteReason r) {
    switch (r) {
    case DemoteReason::none: return "none";
    case DemoteReason::near_limit: return "near_limit";
    case DemoteReason::growing: return "growing";
    case DemoteReason::kernel_pressure: return "kernel_pressure";
    }
    return "?";
}

double growth_forecast(const PressureInput &in, const TierSettings &s) {
    const double horizon = (double)s.horizon_ms / 1000.0;
    const double fill = std::max(0.0, in.fill_growth) * horizon;
    return std::max(0.0, in.growth) * horizon + std::min(fill, (double)in.unfilled);
}

double move_outrun(const PressureInput &in) {
    if (in.move_bytes == 0 || in.growth <= 0) return 0;
    const double rate = in.demote_rate > 0 ? in.demote_rate : kAssumedDemoteRate;
    if (in.growth <= rate) return 0;
    return (in.growth - rate) * ((double)in.move_bytes / rate);
}

PressureVerdict assess_pressure(const PressureInput &in, const TierSettings &s) {
    PressureVerdict v;
    if (!in.limited) return v;
    uint64_t distance = in.limit > in.unreclaimable ? in.limit - in.unreclaimable : 0;
    double forecast = growth_forecast(in, s);
    uint64_t want_free = s.demote_margin + (uint64_t)forecast;
    uint64_t outrun = (uint64_t)move_outrun(in);
    if (distance < s.demote_margin) {
        v.reason = DemoteReason::near_limit;
        v.need = want_free - distance;
    } else if (distance < want_free) {
        v.reason = DemoteReason::growing;
        v.need = want_free - distance;
    } else if (distance < want_free + outrun) {
        // Only the move's own time says "now": the region that goes first,
        // no more (the horizon's rule asks for more when it applies).
        v.reason = DemoteReason::growing;
        v.need = std::min(want_free + outrun - distance, in.move_bytes);
        v.outran = true;
    }
    if (in.new_max_events > 0 || in.psi_some_avg10 > kPsiPressurePercent) {
        // The kernel is already reclaiming at the limit: free at least a margin's worth.
        if (v.reason == DemoteReason::none) v.reason = DemoteReason::kernel_pressure;
        v.need = std::max<uint64_t>(v.need, s.demote_margin);
    }
    return v;
}

// The first candidates of `ranked` whose bytes together cover `need`.
static std::vector<size_t> take_until_covered(const std::vector<TierCandidate> &c,
                                              const std::vector<size_t> &ranked, uint64_t need) {
    std::vector<size_t> plan;
    uint64_t covered = 0;
    for (size_t i : ranked) {
        if (covered >= need) break;
        plan.push_back(i);
        covered += c[i].bytes;
    }
    return plan;
}

uint64_t in_memory_since(const TierCandidate &c) { return std::max(c.last_move_ns, c.born_ns); }

std::vector<size_t> plan_demotions(const std::vector<TierCandidate> &c, uint64_t need,
                                   const TierSettings &s) {
    std::vector<size_t> eligible;
    for (size_t i = 0; i < c.size(); i++)
        if ((c[i].backing == Backing::memory || c[i].backing == Backing::anon) && c[i].bytes >= s.min_size)
            eligible.push_back(i);
    std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
        uint64_t sa = in_memory_since(c[a]), sb = in_memory_since(c[b]);
        if (sa != sb) return sa < sb;
        return c[a].bytes > c[b].bytes; // fewer moves free the same bytes
    });
    return take_until_covered(c, eligible, need);
}

std::vector<size_t> plan_cache_donors(const std::vector<TierCandidate> &c, size_t skip, uint64_t need) {
    std::vector<size_t> eligible;
    for (size_t i = 0; i < c.size(); i++)
        if (i != skip && c[i].backing == Backing::disk && c[i].phase != (uint8_t)Verdict::random)
            eligible.push_back(i);
    std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
        double ba = tier_benefit(c[a]), bb = tier_benefit(c[b]);
        if (ba != bb) return ba < bb;
        return c[a].bytes > c[b].bytes;
    });
    return take_until_covered(c, eligible, need);
}

FillChange fill_change(const std::vector<FillSample> &before, const std::vector<FillSample> &now) {
    auto order = [](const FillSample &a, const FillSample &b) {
        return a.id != b.id ? a.id < b.id : a.born_ns < b.born_ns;
    };
    std::vector<FillSample> was(before);
    std::sort(was.begin(), was.end(), order);
    FillChange c;
    for (const FillSample &n : now) {
        auto it = std::lower_bound(was.begin(), was.end(), n, order);
        if (it == was.end() || it->id != n.id || it->born_ns != n.born_ns || it->bytes != n.bytes) continue;
        c.filled += (int64_t)n.resident - (int64_t)it->resident;
        c.unfilled += n.bytes > n.resident ? n.bytes - n.resident : 0;
    }
    return c;
}

double growth_rate(uint64_t prev, uint64_t value, uint64_t dt_ns) {
    if (dt_ns == 0) return 0;
    return ((double)value - (double)prev) * 1e9 / (double)dt_ns;
}

} // namespace spillway
