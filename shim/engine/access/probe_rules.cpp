// probe_rules.cpp — see probe_rules.h.
#include "access/probe_rules.h"

#include <algorithm>
#include <cmath>

namespace spillway {

uint32_t probe_count(uint64_t pages) {
    uint64_t blocks = pages / kProbeBlockPages;
    if (blocks < kMinProbes) return 0;
    return blocks < kMaxProbes ? (uint32_t)blocks : kMaxProbes;
}

uint64_t probe_stride(uint64_t pages) {
    uint32_t k = probe_count(pages);
    if (!k) return 0;
    return pages / kProbeBlockPages / k * kProbeBlockPages;
}

uint64_t probe_page(uint64_t pages, uint32_t i, uint64_t random) {
    uint64_t stride = probe_stride(pages);
    return stride ? (uint64_t)i * stride + random % stride : 0;
}

long runs_with_probes(const PageRun *runs, size_t n, const PageRun *masks, size_t k, uint64_t lo,
                      uint64_t hi, PageRun *out, size_t cap) {
    size_t m = 0, r = 0, p = 0;
    while (p < k && masks[p].first + masks[p].count <= lo) p++;
    auto add = [&](uint64_t first, uint64_t count) {
        if (m && out[m - 1].first + out[m - 1].count >= first) { // touching or overlapping: merge
            uint64_t end = first + count;
            if (end > out[m - 1].first + out[m - 1].count) out[m - 1].count = end - out[m - 1].first;
            return true;
        }
        if (m == cap) return false;
        out[m++] = {first, count};
        return true;
    };
    // Both lists are sorted: merge them by first page (masks clipped to the span).
    while (r < n || (p < k && masks[p].first < hi)) {
        bool mask_left = p < k && masks[p].first < hi;
        uint64_t mask_first = mask_left ? std::max(masks[p].first, lo) - lo : 0;
        bool take_run = r < n && (!mask_left || runs[r].first <= mask_first);
        bool ok;
        if (take_run) {
            ok = add(runs[r].first, runs[r].count);
            r++;
        } else {
            uint64_t end = std::min(masks[p].first + masks[p].count, hi) - lo;
            ok = end <= mask_first || add(mask_first, end - mask_first);
            p++;
        }
        if (!ok) return -1;
    }
    return (long)m;
}

double window_scale(const ProbeCounts &c, WindowChange change) {
    if (change == WindowChange::keep || !c.probes) return 1;
    double f = (double)std::max(c.first, c.second) / c.probes;
    if (change == WindowChange::shorter) {
        if (f >= 1) return 1.0 / 16;
        return std::clamp(std::log(1 - kWindowTarget) / std::log(1 - f), 1.0 / 16, 0.5);
    }
    if (f <= 0) return 2;
    return std::clamp(std::log(1 - kWindowTarget) / std::log(1 - f), 1.5, 8.0);
}

uint32_t touched_runs(const uint64_t *bits, uint32_t k) {
    uint32_t runs = 0;
    bool prev = false;
    for (uint32_t i = 0; i < k; i++) {
        bool on = (bits[i >> 6] >> (i & 63)) & 1;
        if (on && !prev) runs++;
        prev = on;
    }
    return runs;
}

ProbeReading read_probes(const ProbeCounts &c) {
    ProbeReading out;
    if (!c.probes) return out;
    double k = c.probes;
    uint32_t most = std::max(c.first, c.second);
    out.expected = (double)c.first * (double)c.second / k;
    // Random access leaves about T*(1-T/K) runs per window (a run starts
    // where the probe before was untouched); a pass in order leaves one
    // run per front, a busy spot beside a stream a couple.
    double spread = ((double)c.first * (k - c.first) + (double)c.second * (k - c.second)) / k;
    bool spread_out = (double)(c.first_runs + c.second_runs) * 2 >= spread;
    bool independent = (double)c.both * 2 >= out.expected;
    uint32_t least = std::min(c.first, c.second);
    if (least * 2 > c.probes && c.both * 4 >= c.probes) { // hot: touched all over, again and again
        out.change = WindowChange::shorter;
        out.verdict = Verdict::random;
        out.strong = true;
        return out;
    }
    if (most * 10 > c.probes * 9) { // nearly all touched: no pattern left to see
        out.change = WindowChange::shorter;
        return out;
    }
    if (most * 2 > c.probes) {
        // More than half in one window: a pass in order may have come
        // round into the other window, so repeats prove nothing and no
        // verdict is sequential; but a pass leaves one run per front, and
        // random access many short ones.
        out.change = WindowChange::shorter;
        if (independent && spread_out && out.expected >= kMinExpected &&
            c.first_runs + c.second_runs >= kMinSpreadRuns) {
            out.verdict = Verdict::random;
            out.strong = out.expected >= kStrongExpected;
        }
        return out;
    }
    if (out.expected < kMinExpected) {
        // Too few touches to count: wait longer, unless a window already
        // saw a quarter of the probes (the other was quiet: the program
        // changed pace; keep the windows and look again).
        if (c.first * 4 < c.probes && c.second * 4 < c.probes) out.change = WindowChange::longer;
        return out;
    }
    if ((double)c.both * 10 <= out.expected) out.verdict = Verdict::sequential;
    else if (independent && spread_out) {
        out.verdict = Verdict::random;
        out.strong = out.expected >= kStrongExpected;
    }
    return out;
}

} // namespace spillway
