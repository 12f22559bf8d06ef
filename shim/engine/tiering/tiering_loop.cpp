// tiering_loop.cpp — see tiering_loop.h.
#include "tiering/tiering_loop.h"
#include "clock.h"

#include "os/background_thread.h"
#include "backing/backing.h"
#include "os/cgroup.h"
#include "tiering/claims.h"
#include "config.h"
#include "log.h"
#include "log_repeats.h"
#include "registry/arena.h"
#include "registry/region.h"
#include "tiering/rehome.h"
#include "access/sampler.h"
#include "stats/stats.h"
#include "tiering/tiering.h"
#include "tiering/writeback.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <algorithm>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace spillway {

namespace {
constexpr unsigned kMaxCandidates = 64;
constexpr unsigned kHistory = 128;
constexpr uint64_t kMiB = 1 << 20;
// Free space kept beyond a promotion's size when making room for it: what
// the job's own allocations take while the memory is allocated.
constexpr uint64_t kRoomSlack = 32ull << 20;

const Settings *g_settings = nullptr; // tiering_init
// An untrusted fork child (fork_safety.h): nothing moves, no thread starts.
bool g_untrusted = false;
std::atomic<bool> g_started{false};
std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_ticks{0};

// Bumped by tiering_look_soon; the loop sleeps on it (a futex), so a fork
// wakes it at once.
std::atomic<uint32_t> g_look_soon{0};

// Sleeps ms, or less when tiering_look_soon was called since the last
// look began (seen: g_look_soon then); returns false then.
bool sleep_ms(unsigned ms, uint32_t seen) {
    const uint64_t until = monotonic_ns() + (uint64_t)ms * 1000000;
    for (uint64_t now = monotonic_ns(); now < until; now = monotonic_ns()) {
        if (g_look_soon.load() != seen) return false;
        const uint64_t left = until - now;
        timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        syscall(SYS_futex, &g_look_soon, FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0);
    }
    return g_look_soon.load() == seen;
}

// Anonymous memory grown by this much since the last look ends the wait
// for the next while a fork snapshot is watched: a parent's rewrite makes
// copies at about a gigabyte a second, so the look comes within 10-30 ms of
// them instead of up to tiering.interval_ms (the OOM killer came first in
// 9 of 31 runs of the control test's fork-rewrite case at 100 ms).
constexpr uint64_t kWatchedGrowth = 16ull << 20;

// The wait between two looks while snapshots are watched: slices of
// kSnapshotWatchMs, each reading this process's anonymous memory (a few
// microseconds; a whole look costs ~200 here, mostly cgroup files).
void sleep_watching(unsigned ms, uint32_t seen) {
    const uint64_t anon0 = process_anon_bytes();
    for (unsigned slept = 0; slept < ms; slept += kSnapshotWatchMs) {
        if (!sleep_ms(std::min(kSnapshotWatchMs, ms - slept), seen)) return;
        if (process_anon_bytes() >= anon0 + kWatchedGrowth) return;
    }
}

// What tiering has done to a region (for cooldowns); only the controller
// thread touches it.
struct History {
    const Region *region = nullptr;
    uintptr_t start = 0;
    uint64_t last_move_ns = 0;
    unsigned moves = 0;
};
History g_history[kHistory];

History *history_of(const Region *r, uintptr_t start, bool create) {
    History *oldest = &g_history[0];
    for (History &h : g_history) {
        if (h.region == r && h.start == start) return &h;
        if (h.last_move_ns < oldest->last_move_ns) oldest = &h;
    }
    if (!create) return nullptr;
    *oldest = History{r, start, 0, 0};
    return oldest;
}

struct State {
    bool have_prev = false;
    uint64_t prev_ns = 0, prev_unreclaimable = 0;
    double last_rate = 0, growth = 0; // of the growth that is not regions filling (tiering.h)
    bool have_events = false;
    uint64_t events = 0;
    double tokens = 0;
    std::vector<FillSample> fill; // at the last look, when measured there (fill_valid)
    bool fill_valid = false;
    double demote_rate = 0; // bytes per second the last demotion freed (0: none yet)
    bool watch_snapshots = false; // at the last look: snapshot copies could outgrow the room
};

// Memory and anon regions whose fill is measured; the rest of them (rare)
// count as growth like any other.
constexpr size_t kMaxFillSamples = 256;

// The residency of this process's memory and anon regions, now. A region
// that was full at the last look is taken as full (pages of a memfd or of
// anonymous memory leave only with the region, without swap; one that
// refills after a MADV_DONTNEED counts as growth like any other, which errs
// towards demoting), so mincore only walks regions still filling: 0.2-0.6
// ms per GiB here.
void measure_fill(const std::vector<FillSample> &last, std::vector<FillSample> &out) {
    struct Where {
        uintptr_t start;
        FillSample s;
    };
    static Where where[kMaxFillSamples]; // the controller thread only
    size_t n = 0;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r && n < kMaxFillSamples; r = r->next) {
            if (r->freed.load() || (r->backing != Backing::memory && r->backing != Backing::anon)) continue;
            where[n++] = {r->start, FillSample{r, r->born_ns, r->map_len, 0}};
        }
    }
    out.clear();
    static unsigned char vec[16384];
    static const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i++) {
        FillSample s = where[i].s;
        bool full = false;
        for (const FillSample &l : last)
            if (l.id == s.id && l.born_ns == s.born_ns && l.bytes == s.bytes) {
                full = l.resident == l.bytes;
                break;
            }
        if (full) {
            s.resident = s.bytes;
        } else {
            // Without the lock: a region freed meanwhile is only looked at
            // (mincore changes nothing), and is not in the next look.
            for (size_t off = 0; off < s.bytes;) {
                size_t len = std::min(s.bytes - off, sizeof vec * page);
                if (mincore((void *)(where[i].start + off), len, vec) != 0) break;
                for (size_t k = 0; k < (len + page - 1) / page; k++) s.resident += (vec[k] & 1) * page;
                off += len;
            }
            if (s.resident > s.bytes) s.resident = s.bytes;
        }
        out.push_back(s);
    }
}

struct Snapshot {
    Region *region;
    TierCandidate c;
};

unsigned snapshot(Snapshot *out, uint64_t min_size) {
    unsigned n = 0;
    if (g_untrusted) return 0; // fork_safety.h: nothing moves in such a child
    const uint64_t inherited_before = forked_at_ns();
    std::lock_guard<std::mutex> guard(large_lock());
    for (Region *r = registry_first(); r && n < kMaxCandidates; r = r->next) {
        if (r->freed.load() || r->is_private || r->map_len < min_size || r->pins.load()) continue;
        if (r->file && (r->file->foreign || r->file->exported[0])) continue; // shared by name: stays
        // A fork child never moves what it inherited: those are the
        // parent's bytes (its files, or copies the parent may also move).
        if (r->born_ns < inherited_before) continue;
        // A fork child maps the files of regions born before it, privately:
        // a pool range would be punched, a memfd punched while moving. A
        // region the fork froze is private (skipped above) while a child
        // lives; only one it left shared keeps off for good.
        if (r->file && r->born_ns < last_shared_fork_ns() && (r->file->pool || r->backing == Backing::memory))
            continue;
        TierCandidate c;
        c.start = r->start;
        c.bytes = r->map_len;
        c.backing = r->backing;
        c.phase = r->phase.load();
        c.phase_since_ns = r->phase_since_ns.load();
        c.fault_rate = r->fault_rate.load();
        c.born_ns = r->born_ns;
        c.forked_copies = r->snapshot_spilled || r->fork_written;
        if (const History *h = history_of(r, r->start, false)) {
            c.last_move_ns = h->last_move_ns;
            c.moves = h->moves;
        }
        out[n++] = {r, c};
    }
    return n;
}

void record_move(const Snapshot &s, uint64_t now) {
    History *h = history_of(s.region, s.c.start, true);
    h->last_move_ns = now;
    h->moves++;
}

double ms(uint64_t ns) { return ns / 1e6; }

// The claim this process holds in its cgroup's budget file while a
// promotion is under way: an exiting process drops it (tiering_stop), so the
// spill directory is left empty even when exit interrupts a move.
std::atomic<bool> g_claim_held{false};
char g_claim_cgroup[512];

void release_claim() {
    if (g_claim_held.exchange(false)) drop_claim(spill_dir_fd(), g_claim_cgroup);
}

// Pages out cached pages of cold disk regions (plan_cache_donors) until the
// cgroup's free space holds `want` bytes, so allocating a promotion does not
// reclaim them one by one. MADV_PAGEOUT never loses a byte (dirty pages
// stay) and only touches page tables, so a donor freed meanwhile is
// harmless: its range is only advised. Returns the bytes it freed.
uint64_t make_room(const Snapshot *snap, unsigned n, size_t promoted, uint64_t want) {
    MemoryFigures f = read_memory_figures();
    if (!f.limited || f.limit >= f.usage + want) return 0; // free already
    constexpr uint64_t kStep = 64ull << 20;
    const uint64_t before = f.usage;
    std::vector<TierCandidate> cands;
    for (unsigned i = 0; i < n; i++) cands.push_back(snap[i].c);
    uint64_t need = f.usage + want - f.limit;
    for (size_t i : plan_cache_donors(cands, promoted, need)) {
        for (uint64_t off = 0; off < cands[i].bytes; off += kStep) {
            uint64_t len = cands[i].bytes - off < kStep ? cands[i].bytes - off : kStep;
            if (madvise((void *)(cands[i].start + off), len, MADV_PAGEOUT) != 0) break;
            f = read_memory_figures();
            if (f.limit >= f.usage + want) return before > f.usage ? before - f.usage : 0;
        }
    }
    return before > f.usage ? before - f.usage : 0;
}

// A move that fails fails again at the next look while its cause lasts (a
// full disk: every 100 ms): each warning is said once per errno, and every
// failure is counted in the stats (failed_promotions, failed_demotions).
RepeatedWarning g_promote_failed, g_demote_no_file, g_demote_failed;
SnapshotSpillFn g_snapshot_spill = nullptr; // tiering_set_snapshot_hooks
SnapshotWatchFn g_snapshot_watch = nullptr;

// The end of the line of a move that failed and was undone.
const char *move_remedy(int err) {
    Fallback cause = fallback_from_errno(err);
    return cause == Fallback::other ? "if it repeats, set tiering.enabled = false and report it with this log"
                                    : fallback_remedy(cause);
}

// limited: the cgroup has a memory limit. Without one there is no budget to
// share and no claim is made.
bool promote(const Snapshot *snap, unsigned n, size_t which, const std::string &cgroup, bool limited,
             uint64_t reserve, uint64_t now) {
    const Snapshot &s = snap[which];
    const TierCandidate &c = s.c;
    const uint64_t claim0 = monotonic_ns();
    SpillFile *dest = nullptr;
    if (int err = new_dedicated_memfd(c.bytes, &dest)) {
        SPW_LOG(debug, "tiering: no memfd for a promotion (%s)", strerror(err));
        return false;
    }
    uint64_t others = 0, room = UINT64_MAX;
    bool claimed = true;
    if (limited) {
        snprintf(g_claim_cgroup, sizeof g_claim_cgroup, "%s", cgroup.c_str());
        claimed = claim_headroom(
            spill_dir_fd(), cgroup, c.bytes,
            [&](uint64_t claimed_by_others) {
                MemoryFigures g = read_memory_figures(); // fresh, under the cgroup's lock
                room = promotion_room(g.limited, g.limit, g.unreclaimable(), reserve, claimed_by_others);
                return room >= c.bytes;
            },
            &others);
        if (claimed) {
            g_claim_held.store(true);
            if (g_stop.load()) { // exiting: tiering_stop may have looked before the claim
                release_claim();
                close_spill_file(dest);
                return false;
            }
        }
    }
    if (!claimed) {
        close_spill_file(dest);
        SPW_LOG(debug, "tiering: %zu MiB at %p stays on disk: room %llu MiB after %llu MiB claimed by "
                       "other processes of the cgroup",
                c.bytes / kMiB, (void *)c.start, (unsigned long long)(room / kMiB),
                (unsigned long long)(others / kMiB));
        return false;
    }
    // Allocate the new home's pages now, under the claim: a region written at
    // random fills all of them soon, and only pages that exist are charged.
    // Dropping the claim after a sparse copy would leave the rest of the
    // region's bytes unaccounted, and another process would claim them.
    uint64_t alloc0 = monotonic_ns(), claim_ns = alloc0 - claim0;
    uint64_t paged_out = limited ? make_room(snap, n, which, c.bytes + kRoomSlack) : 0;
    uint64_t room_ns = monotonic_ns() - alloc0;
    if (fallocate(dest->fd, 0, 0, (off_t)c.bytes) != 0) {
        int err = errno;
        release_claim();
        close_spill_file(dest);
        SPW_LOG(debug, "tiering: %zu MiB at %p stays on disk: its memory could not be allocated (%s)",
                c.bytes / kMiB, (void *)c.start, strerror(err));
        return false;
    }
    uint64_t alloc_ns = monotonic_ns() - alloc0;
    MoveResult res;
    int rc = rehome_region_checked(s.region, c.start, dest, false, &res);
    release_claim(); // charged to the cgroup now (or freed again below)
    if (rc != 0) {
        close_spill_file(dest);
        if (rc != -EBUSY && rc != -ESTALE) { // not a failure: the region was busy or went away
            g_stats.failed_promotions.fetch_add(1, std::memory_order_relaxed);
            LogLevel at = g_promote_failed.level(-rc);
            SPW_LOG_AT(at, "tiering: promoting %zu MiB at %p failed (%s) and was undone; it stays on "
                           "disk, intact, where random access is slower: %s%s",
                       c.bytes / kMiB, (void *)c.start, strerror(-rc), move_remedy(-rc), RepeatedWarning::tail(at));
        }
        return false;
    }
    record_move(s, now);
    stats_on_move(Backing::disk, Backing::memory, c.bytes, res.total_ns, res.longest_chunk_ns);
    uint64_t done = monotonic_ns();
    SPW_LOG(info, "tiering: promoted %zu MiB at %p disk -> memory: random phase for %.2f s, %u "
                  "faults/s; room %llu MiB (others claimed %llu MiB), memfd and claim in %.0f ms; %llu MiB of cold page cache paged out in %.0f ms, memory allocated in %.0f ms, moved "
                  "in %.0f ms (%s) after %.0f ms of locks and checks (%.0f ms/GiB: first copy %.0f ms, last copy of %zu MiB "
                  "cached and %zu MiB on disk and remap %.0f ms, waiting for reads %.0f ms, pages mapped in %.0f ms; %.0f ms on CPU), accesses paused at most %.1f ms; in memory %.2f s after the "
                  "detector's verdict",
            c.bytes / kMiB, (void *)c.start,
            c.phase_since_ns && now > c.phase_since_ns ? (now - c.phase_since_ns) / 1e9 : 0.0, c.fault_rate,
            (unsigned long long)(room / kMiB), (unsigned long long)(others / kMiB), ms(claim_ns), (unsigned long long)(paged_out / kMiB), ms(room_ns),
            ms(alloc_ns - room_ns),
            ms(res.total_ns), uffd::level_name(res.scheme), ms(res.checks_ns), ms(res.total_ns) * (double)(1ull << 30) / (double)c.bytes,
            ms(res.precopy_ns), res.cached_bytes / kMiB, res.disk_bytes / kMiB, ms(res.protected_ns), ms(res.waited_ns),
            ms(res.mapped_ns), ms(res.cpu_ns), ms(res.longest_chunk_ns),
            c.phase_since_ns && done > c.phase_since_ns ? (done - c.phase_since_ns) / 1e9 : 0.0);
    return true;
}

// *rate: the bytes per second it freed, when it moved.
bool demote(const Snapshot &s, const PressureVerdict &v, const PressureInput &in, uint64_t now, double *rate) {
    const TierCandidate &c = s.c;
    // Said before the move too: a job killed during it leaves this line.
    SPW_LOG(debug, "tiering: demoting %zu MiB at %p %s -> disk (%s: %llu MiB unreclaimable of a %llu MiB "
                   "limit, growing %.0f MiB/s, need %llu MiB free)",
            c.bytes / kMiB, (void *)c.start, backing_name(c.backing), demote_reason_name(v.reason),
            (unsigned long long)(in.unreclaimable / kMiB), (unsigned long long)(in.limit / kMiB),
            in.growth / kMiB, (unsigned long long)(v.need / kMiB));
    SpillFile *dest = nullptr;
    if (int err = new_dedicated_disk_file(c.bytes, &dest)) {
        g_stats.failed_demotions.fetch_add(1, std::memory_order_relaxed);
        LogLevel at = g_demote_no_file.level(err);
        SPW_LOG_AT(at, "tiering: memory is nearly exhausted but %zu MiB at %p cannot move to disk (%s "
                       "in %s), so the OOM killer may end the job: %s%s",
                   c.bytes / kMiB, (void *)c.start, strerror(err), spill_dir_path().c_str(),
                   fallback_remedy(fallback_from_errno(err)), RepeatedWarning::tail(at));
        return false;
    }
    MoveResult res;
    int rc = rehome_region_checked(s.region, c.start, dest, true, &res);
    if (rc != 0) {
        close_spill_file(dest);
        if (rc != -EBUSY && rc != -ESTALE) {
            g_stats.failed_demotions.fetch_add(1, std::memory_order_relaxed);
            LogLevel at = g_demote_failed.level(-rc);
            SPW_LOG_AT(at, "tiering: demoting %zu MiB at %p failed (%s) and was undone; it stays in "
                           "memory, intact, and the OOM killer may end the job: %s%s",
                       c.bytes / kMiB, (void *)c.start, strerror(-rc), move_remedy(-rc), RepeatedWarning::tail(at));
        }
        return false;
    }
    record_move(s, now);
    if (res.total_ns) *rate = (double)c.bytes * 1e9 / (double)res.total_ns;
    stats_on_move(c.backing, Backing::disk, c.bytes, res.total_ns, res.longest_chunk_ns);
    // A disk region now, maybe this process's first: the access detector
    // (advice, read-ahead for a reader streaming it back) and paced writeback.
    sampler_notice();
    writeback_notice();
    g_stats.demote_reasons[(int)v.reason].fetch_add(1, std::memory_order_relaxed);
    // The stats count an early start as `growing` too: only this says so.
    char early[96] = "";
    if (v.outran)
        snprintf(early, sizeof early, ", started early: the growth outruns a demotion at %.0f MiB/s",
                 (in.demote_rate > 0 ? in.demote_rate : kAssumedDemoteRate) / kMiB);
    SPW_LOG(info, "tiering: demoted %zu MiB at %p %s -> disk (%s: %llu MiB unreclaimable of a %llu MiB "
                  "limit, growing %.0f MiB/s besides regions filling at %.0f MiB/s with %llu MiB to go, "
                  "need %llu MiB free%s); moved in %.0f ms (%.0f ms/GiB, %s), accesses paused at most %.1f ms",
            c.bytes / kMiB, (void *)c.start, backing_name(c.backing), demote_reason_name(v.reason),
            (unsigned long long)(in.unreclaimable / kMiB), (unsigned long long)(in.limit / kMiB),
            in.growth / kMiB, in.fill_growth / kMiB, (unsigned long long)(in.unfilled / kMiB),
            (unsigned long long)(v.need / kMiB), early, ms(res.total_ns),
            ms(res.total_ns) * (double)(1ull << 30) / (double)c.bytes, uffd::level_name(res.scheme),
            ms(res.longest_chunk_ns));
    return true;
}

// One look; returns how long to sleep before the next.
unsigned tick(State &st) {
    const Settings &settings = *g_settings;
    const TierSettings &ts = settings.tiering;
    uint64_t now = monotonic_ns();
    MemoryFigures f = read_memory_figures();
    if (!st.have_prev) st.last_rate = st.growth = 0;
    if (!f.limited) {
        // No limit: nothing can press, and every random disk region fits.
        st.have_prev = false;
        st.watch_snapshots = false;
        Snapshot snap[kMaxCandidates];
        unsigned n = snapshot(snap, ts.min_size);
        std::vector<TierCandidate> cands;
        for (unsigned i = 0; i < n; i++) cands.push_back(snap[i].c);
        for (size_t i : plan_promotions(cands, UINT64_MAX, (double)ts.promote_rate, now, ts))
            promote(snap, n, i, f.where, false, settings.memory_reserve, monotonic_ns());
        return ts.interval_ms;
    }
    // A region whose fork copies pressed before moves as soon as it is
    // frozen again (large/fork_snapshot.h): not counted as growth.
    if (g_snapshot_spill && g_snapshot_spill(0, f.room())) {
        st.have_prev = false;
        f = read_memory_figures();
    }
    st.watch_snapshots = g_snapshot_watch && g_snapshot_watch(f.room());
    uint64_t unreclaimable = f.unreclaimable();
    Snapshot snap[kMaxCandidates];
    unsigned n = snapshot(snap, ts.min_size);
    std::vector<TierCandidate> cands;
    for (unsigned i = 0; i < n; i++) cands.push_back(snap[i].c);
    // The demotion that would go first, and how fast one frees memory here:
    // a growth faster than that must start it earlier (tiering.h move_outrun).
    std::vector<size_t> first = plan_demotions(cands, 1, ts);
    const uint64_t move_bytes = first.empty() ? 0 : cands[first[0]].bytes;
    // The part of the growth that is this process's regions filling is
    // bounded by what they have left to fill (tiering.h). Measured only
    // while the growth could matter: twice the current rate would press
    // (within the margin over the horizon, or outrunning the first move).
    double fill_rate = 0;
    uint64_t unfilled = 0;
    bool fill_measured = false, fill_known = false;
    if (st.have_prev) {
        uint64_t dt = now - st.prev_ns;
        double rate = growth_rate(st.prev_unreclaimable, unreclaimable, dt);
        PressureInput twice;
        twice.limited = true;
        twice.limit = f.limit;
        twice.unreclaimable = unreclaimable;
        twice.growth = 2 * rate;
        twice.move_bytes = move_bytes;
        twice.demote_rate = st.demote_rate;
        if (rate > 0 && assess_pressure(twice, ts).reason != DemoteReason::none) {
            std::vector<FillSample> fill;
            measure_fill(st.fill_valid ? st.fill : std::vector<FillSample>{}, fill);
            fill_measured = true;
            if (st.fill_valid) {
                FillChange c = fill_change(st.fill, fill);
                fill_rate = (double)c.filled * 1e9 / (double)(dt ? dt : 1);
                unfilled = c.unfilled;
                fill_known = true;
            }
            st.fill = std::move(fill);
        }
        double rest = rate - fill_rate;
        st.growth = sustained_growth(st.last_rate, rest);
        st.last_rate = rest;
        st.tokens += (double)ts.promote_rate * (double)dt / 1e9;
        if (st.tokens > (double)ts.promote_rate) st.tokens = (double)ts.promote_rate;
    }
    st.fill_valid = fill_measured;
    st.have_prev = true;
    st.prev_ns = now;
    st.prev_unreclaimable = unreclaimable;
    PressureSignals p = read_pressure_signals(f.where);
    uint64_t events = p.max + p.oom;
    uint64_t new_events = st.have_events && events > st.events ? events - st.events : 0;
    st.have_events = p.readable;
    st.events = events;

    // With no region to move, a fork snapshot's copies may still be moved.
    if (n == 0 && !g_snapshot_spill) return ts.interval_ms;

    PressureInput in;
    in.limited = true;
    in.limit = f.limit;
    in.unreclaimable = unreclaimable;
    in.growth = st.growth;
    in.fill_growth = fill_rate;
    in.unfilled = unfilled;
    in.new_max_events = new_events;
    in.psi_some_avg10 = p.some_avg10;
    in.move_bytes = move_bytes;
    in.demote_rate = st.demote_rate;
    PressureVerdict v = assess_pressure(in, ts);
    // A forecast from growth whose fill part is not known yet (first
    // measured now): the next look knows it. The kernel's word is not a
    // forecast: it is acted on at once.
    bool kernel = in.new_max_events > 0 || in.psi_some_avg10 > kPsiPressurePercent;
    if (v.reason == DemoteReason::growing && fill_measured && !fill_known && !kernel) return ts.interval_ms;
    if (v.reason != DemoteReason::none) {
        if (!disk_usable()) return ts.interval_ms;
        // A fork snapshot's copies first: anonymous memory that nothing else
        // can free while the children live, and growing while the parent
        // writes (control test tiering-cgroup, tiering_job fork-rewrite).
        uint64_t spilled = g_snapshot_spill ? g_snapshot_spill(v.need, 0) : 0;
        bool moved = spilled > 0;
        if (spilled < v.need)
            for (size_t i : plan_demotions(cands, v.need - spilled, ts))
                moved |= demote(snap[i], v, in, monotonic_ns(), &st.demote_rate);
        if (moved) st.have_prev = false; // the move itself changed usage: no growth from it
        return moved ? 0 : ts.interval_ms; // look again at once: was it enough?
    }
    uint64_t room = promotion_room(true, f.limit, unreclaimable, settings.memory_reserve, 0);
    for (size_t i : plan_promotions(cands, room, st.tokens, now, ts))
        if (promote(snap, n, i, f.where, true, settings.memory_reserve, monotonic_ns())) {
            st.tokens -= (double)cands[i].bytes;
            st.have_prev = false;
        }
    return ts.interval_ms;
}

void *tiering_main(void *) {
    struct sched_param sp = {};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    uint64_t cpu0 = thread_cpu_ns();
    State st;
    unsigned wait = g_settings->tiering.interval_ms;
    uint32_t seen = g_look_soon.load(); // a call from here on ends the next sleep
    while (!g_stop.load(std::memory_order_relaxed)) {
        if (wait && st.watch_snapshots) sleep_watching(wait, seen);
        else if (wait) sleep_ms(wait, seen);
        if (g_stop.load(std::memory_order_relaxed)) break;
        exit_if_only_ours_left();
        seen = g_look_soon.load(); // a call during this look ends the next sleep
        wait = tick(st);
        g_ticks.fetch_add(1, std::memory_order_relaxed);
        g_stats.tiering_cpu_ns.store(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
    }
    return nullptr;
}
} // namespace

void tiering_init(const Settings &s) { g_settings = &s; }
void tiering_set_snapshot_hooks(SnapshotSpillFn spill, SnapshotWatchFn watch) {
    g_snapshot_spill = spill;
    g_snapshot_watch = watch;
}

void tiering_look_soon() {
    g_look_soon.fetch_add(1);
    syscall(SYS_futex, &g_look_soon, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void tiering_notice() {
    // The large path is active: started (the settings are known), its arena
    // reserved, and this is no untrusted fork child.
    bool active = g_settings && arena::g_size && !g_untrusted;
    if (!active || !g_settings->tiering.enabled || g_started.exchange(true)) return;
    start_background_thread(tiering_main, "spillway-tier", 256 * 1024);
}

void tiering_stop() {
    g_stop.store(true);
    release_claim(); // a promotion under way at exit leaves no claim behind
}

void tiering_after_fork_child(bool trusted) {
    g_untrusted = !trusted;
    // The controller thread is the parent's; this process starts its own at
    // its next large region (tiering_notice), unless it is untrusted.
    g_started.store(false); // the claims file's descriptor: claims_after_fork_child
    g_claim_held.store(false); // the parent's claim, not ours
    for (History &h : g_history) h = History{};
    for (RepeatedWarning *w : {&g_promote_failed, &g_demote_no_file, &g_demote_failed}) w->forget();
}

uint64_t tiering_cpu_ns() { return g_stats.tiering_cpu_ns.load(); }
uint64_t tiering_ticks() { return g_ticks.load(); }

} // namespace spillway
