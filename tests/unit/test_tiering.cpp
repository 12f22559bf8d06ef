// test_tiering.cpp — the tiering rules (shim/engine/tiering/tiering.h): what is promoted,
// in which order, within which room and rate (twice the room for a region
// a fork's copies once pressed); when pressure demotes and what goes first;
// cooldowns against thrash.
#include "tiering/tiering.h"

#include <catch2/catch.hpp>

using namespace spillway;

static constexpr uint64_t MiB = 1 << 20;
static constexpr uint64_t S = 1'000'000'000ull;

static TierCandidate disk_random(size_t mib, uint32_t fault_rate = 0) {
    TierCandidate c;
    c.start = 0x1000 * mib;
    c.bytes = mib * MiB;
    c.backing = Backing::disk;
    c.phase = 2;
    c.fault_rate = fault_rate;
    return c;
}

TEST_CASE("promotion room: limit minus unreclaimable, reserve and others' claims") {
    CHECK(promotion_room(true, 1024 * MiB, 100 * MiB, 256 * MiB, 0) == 668 * MiB);
    CHECK(promotion_room(true, 1024 * MiB, 100 * MiB, 256 * MiB, 400 * MiB) == 268 * MiB);
    CHECK(promotion_room(true, 1024 * MiB, 900 * MiB, 256 * MiB, 0) == 0);
    CHECK(promotion_room(false, 0, 0, 256 * MiB, 0) == UINT64_MAX);
}

TEST_CASE("only random-phase disk regions of at least min_size are promoted") {
    TierSettings s;
    std::vector<TierCandidate> c = {disk_random(256), disk_random(256), disk_random(256), disk_random(32)};
    c[1].phase = 1;               // sequential
    c[2].backing = Backing::anon; // already in memory
    auto plan = plan_promotions(c, 10000 * MiB, 1e12, 100 * S, s);
    REQUIRE(plan.size() == 1);
    CHECK(plan[0] == 0);
}

TEST_CASE("short room: the most benefit per byte goes first; what does not fit is skipped") {
    TierSettings s;
    // 512 MiB at 1000 faults/s, 256 MiB at 1000 faults/s (twice the benefit
    // per byte), 128 MiB at 100 faults/s.
    std::vector<TierCandidate> c = {disk_random(512, 1000), disk_random(256, 1000), disk_random(128, 100)};
    auto plan = plan_promotions(c, 400 * MiB, 1e12, 100 * S, s);
    REQUIRE(plan.size() == 2);
    CHECK(plan[0] == 1); // best benefit
    CHECK(plan[1] == 2); // 512 does not fit in the 144 MiB left, 128 does
    CHECK(plan_promotions(c, 100 * MiB, 1e12, 100 * S, s).empty());
}

TEST_CASE("a region whose fork snapshot once pressed needs room for twice its size") {
    TierSettings s;
    std::vector<TierCandidate> c = {disk_random(768, 1000)};
    CHECK(plan_promotions(c, 785 * MiB, 1e12, 100 * S, s).size() == 1);
    c[0].forked_copies = true; // the epochs job after its first epoch: 785 MiB of room
    CHECK(plan_promotions(c, 785 * MiB, 1e12, 100 * S, s).empty());
    CHECK(plan_promotions(c, 1536 * MiB, 1e12, 100 * S, s).size() == 1);
    // Room for it once only: a smaller region that fits still goes.
    c.push_back(disk_random(256, 100));
    auto plan = plan_promotions(c, 785 * MiB, 1e12, 100 * S, s);
    REQUIRE(plan.size() == 1);
    CHECK(plan[0] == 1);
}

TEST_CASE("the promotion rate limits bytes per second; a region larger than a second's worth waits for a full budget") {
    TierSettings s;
    s.promote_rate = 512 * MiB;
    std::vector<TierCandidate> c = {disk_random(256), disk_random(256), disk_random(1024)};
    auto plan = plan_promotions(c, 100000 * MiB, 300 * MiB, 100 * S, s);
    REQUIRE(plan.size() == 1); // 300 MiB of budget: one 256 MiB region
    std::vector<TierCandidate> big = {disk_random(1024)};
    CHECK(plan_promotions(big, 100000 * MiB, 500 * MiB, 100 * S, s).empty());
    CHECK(plan_promotions(big, 100000 * MiB, 512 * MiB, 100 * S, s).size() == 1);
}

TEST_CASE("a region moved recently waits out a cooldown that doubles with each move") {
    TierSettings s;
    s.cooldown_ms = 1000;
    TierCandidate c = disk_random(256);
    c.moves = 1;
    c.last_move_ns = 10 * S;
    CHECK_FALSE(cooled_down(c, 10 * S + S / 2, s));
    CHECK(cooled_down(c, 11 * S, s));
    c.moves = 3; // 4x
    CHECK_FALSE(cooled_down(c, 13 * S, s));
    CHECK(cooled_down(c, 14 * S, s));
    c.moves = 50; // capped at 32x
    CHECK(cooled_down(c, 42 * S, s));
    std::vector<TierCandidate> v = {c};
    v[0].moves = 1;
    CHECK(plan_promotions(v, 10000 * MiB, 1e12, 10 * S + 1, s).empty());
}

TEST_CASE("pressure: margin, growth forecast, kernel events and PSI") {
    TierSettings s; // margin 128 MiB, horizon 500 ms
    PressureInput in;
    in.limited = true;
    in.limit = 1024 * MiB;
    in.unreclaimable = 500 * MiB;
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    in.unreclaimable = 950 * MiB;
    PressureVerdict v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::near_limit);
    CHECK(v.need == 54 * MiB);
    in.unreclaimable = 700 * MiB; // 324 MiB away, growing 600 MiB/s: 300 MiB within 500 ms
    in.growth = 600.0 * MiB;
    v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::growing);
    CHECK(v.need == (128 + 300 - 324) * MiB);
    in.growth = -600.0 * MiB; // shrinking: no forecast
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    in.new_max_events = 2;
    v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::kernel_pressure);
    CHECK(v.need == 128 * MiB);
    in.new_max_events = 0;
    in.psi_some_avg10 = 25;
    CHECK(assess_pressure(in, s).reason == DemoteReason::kernel_pressure);
    in.psi_some_avg10 = 1;
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    in.limited = false;
    in.unreclaimable = 5000 * MiB;
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
}

TEST_CASE("pressure: a growth faster than a demotion frees starts the move before the horizon's rule would") {
    TierSettings s; // margin 128 MiB, horizon 500 ms
    PressureInput in;
    in.limited = true;
    in.limit = 1024 * MiB;
    // Integration scenario 14 at its growth's start: a 600 MiB memfd region
    // and the job, 394 MiB from the limit, growing 300 MiB/s. The horizon's
    // rule wants 128 + 150 MiB free: nothing yet (it acted 0.5 s later).
    in.unreclaimable = 630 * MiB;
    in.growth = 300.0 * MiB;
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    CHECK_FALSE(assess_pressure(in, s).outran);
    // Moving 600 MiB at 200 MiB/s takes 3 s, while usage climbs 100 MiB/s:
    // 300 MiB more before the move is done. Now, and that region only.
    in.move_bytes = 600 * MiB;
    in.demote_rate = 200.0 * MiB;
    CHECK(move_outrun(in) == Approx(300.0 * MiB));
    PressureVerdict v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::growing);
    CHECK(v.need == (128 + 150 + 300 - 394) * MiB);
    CHECK(v.outran); // the demotion's log line says it started early
    // No demotion measured yet: the assumed rate (150 MiB/s), 4 s of 150 MiB/s more.
    in.demote_rate = 0;
    CHECK(move_outrun(in) == Approx(600.0 * MiB));
    v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::growing);
    CHECK(v.need == (128 + 150 + 600 - 394) * MiB);
    // What it asks for is capped at the first region's bytes (100 MiB/s:
    // 6 s of 200 MiB/s more, 1200 MiB).
    in.demote_rate = 100.0 * MiB;
    v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::growing);
    CHECK(v.need == 600 * MiB);
    // A growth the move outpaces adds nothing: the horizon's rule alone.
    in.demote_rate = 400.0 * MiB;
    CHECK(move_outrun(in) == 0);
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    // Nothing to move, or no growth: nothing.
    in.demote_rate = 200.0 * MiB;
    in.move_bytes = 0;
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    in.move_bytes = 600 * MiB;
    in.growth = -300.0 * MiB;
    CHECK(move_outrun(in) == 0);
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    // A region filling is not a trend (scenario 9: 256 MiB filling at
    // 400 MiB/s in 512 MiB): its fill never counts as outrunning the move.
    in.limit = 512 * MiB;
    in.unreclaimable = 173 * MiB;
    in.growth = 0;
    in.fill_growth = 400.0 * MiB;
    in.unfilled = 83 * MiB;
    in.move_bytes = 256 * MiB;
    CHECK(move_outrun(in) == 0);
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    // Close to the limit the margin's rule decides what is needed, as before.
    in.limit = 1024 * MiB;
    in.unreclaimable = 950 * MiB;
    in.growth = 300.0 * MiB;
    in.fill_growth = 0;
    in.unfilled = 0;
    in.move_bytes = 600 * MiB;
    v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::near_limit);
    CHECK(v.need == (128 + 150 - 74) * MiB);
    CHECK_FALSE(v.outran);
    // Within the horizon's reach the horizon's rule decides, outrun or not.
    in.unreclaimable = 800 * MiB; // 224 MiB from the limit: the horizon wants 278
    v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::growing);
    CHECK(v.need == (278 - 224) * MiB);
    CHECK_FALSE(v.outran);
}

TEST_CASE("pressure: a region filling is bounded by what it has left to fill; other growth is extrapolated") {
    TierSettings s; // margin 128 MiB, horizon 500 ms
    PressureInput in;
    in.limited = true;
    in.limit = 512 * MiB;
    // Integration scenario 9 on a slow machine (issue 25): a 256 MiB memfd
    // region filling at 464 MiB/s, 173 MiB in. Taken as a trend, 232 MiB
    // more within 500 ms: "growing", and the region that fits was demoted.
    in.unreclaimable = 173 * MiB;
    in.growth = 464.0 * MiB;
    CHECK(assess_pressure(in, s).reason == DemoteReason::growing);
    // Known to be the region filling: it can add its last 83 MiB, no more.
    in.growth = 0;
    in.fill_growth = 464.0 * MiB;
    in.unfilled = 83 * MiB;
    CHECK(growth_forecast(in, s) == Approx(83.0 * MiB));
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    // A fill that would not reach its end within the horizon counts as it goes.
    in.fill_growth = 100.0 * MiB;
    CHECK(growth_forecast(in, s) == Approx(50.0 * MiB));
    // The same fill with too little room left for it: growing.
    in.unreclaimable = 300 * MiB; // 212 MiB away; the margin and the 83 MiB left want 211
    in.fill_growth = 464.0 * MiB;
    CHECK(assess_pressure(in, s).reason == DemoteReason::none);
    in.unreclaimable = 302 * MiB;
    PressureVerdict v = assess_pressure(in, s);
    CHECK(v.reason == DemoteReason::growing);
    CHECK(v.need == 1 * MiB);
    // Growth besides the fill (small allocations, other processes) is a
    // trend, extrapolated whole, on top of the fill.
    in.unreclaimable = 173 * MiB;
    in.growth = 300.0 * MiB;
    CHECK(growth_forecast(in, s) == Approx(233.0 * MiB));
    CHECK(assess_pressure(in, s).reason == DemoteReason::growing);
    // Pages released (negative fill) never make the forecast negative.
    in.growth = -50.0 * MiB;
    in.fill_growth = -100.0 * MiB;
    CHECK(growth_forecast(in, s) == 0);
}

TEST_CASE("fill: regions present at both looks, matched by identity, birth and size") {
    int a, b, c, d;
    std::vector<FillSample> before = {{&a, 1, 256 * MiB, 100 * MiB}, {&b, 2, 64 * MiB, 64 * MiB},
                                      {&c, 3, 64 * MiB, 10 * MiB}, {&d, 4, 64 * MiB, 0}};
    std::vector<FillSample> now = {
        {&b, 2, 64 * MiB, 64 * MiB},   // full at both
        {&a, 1, 256 * MiB, 170 * MiB}, // filled 70 MiB, 86 to go (listed in another order)
        {&c, 9, 64 * MiB, 64 * MiB},   // freed, and a new region in the same Region: new
        {&d, 4, 128 * MiB, 100 * MiB}, // grown by realloc: not the same bytes
        {&before, 5, 64 * MiB, 64 * MiB}, // new: its allocation is growth like any other
    };
    FillChange ch = fill_change(before, now);
    CHECK(ch.filled == (int64_t)(70 * MiB));
    CHECK(ch.unfilled == 86 * MiB);
    now[1].resident = 40 * MiB; // released pages count against the fill
    ch = fill_change(before, now);
    CHECK(ch.filled == -(int64_t)(60 * MiB));
    CHECK(ch.unfilled == 216 * MiB);
    CHECK(fill_change({}, now).filled == 0);
}

TEST_CASE("demotion: memory and anon only, the longest in memory first, until the need is covered") {
    TierSettings s;
    std::vector<TierCandidate> c(5);
    c[0] = disk_random(512);                      // on disk already
    c[1] = disk_random(256, 5000);                // anon, allocated last
    c[1].backing = Backing::anon;
    c[1].born_ns = 9 * S;
    c[2] = disk_random(256, 10);                  // memory, allocated at 2 s
    c[2].backing = Backing::memory;
    c[2].born_ns = 2 * S;
    c[3] = disk_random(512, 20);                  // anon, allocated at 2 s too
    c[3].backing = Backing::anon;
    c[3].born_ns = 2 * S;
    c[4] = disk_random(32);                       // below min_size
    c[4].backing = Backing::anon;
    auto plan = plan_demotions(c, 100 * MiB, s);
    REQUIRE(plan.size() == 1);
    CHECK(plan[0] == 3); // as long in memory: the larger frees more at once
    plan = plan_demotions(c, 600 * MiB, s);
    REQUIRE(plan.size() == 2);
    CHECK(plan[0] == 3);
    CHECK(plan[1] == 2);
    c[3].last_move_ns = 5 * S; // promoted since: goes after the one in memory since 2 s
    plan = plan_demotions(c, 100 * MiB, s);
    CHECK(plan[0] == 2);
    plan = plan_demotions(c, 10000 * MiB, s);
    REQUIRE(plan.size() == 3); // the newest too, last: survival first
    CHECK(plan[2] == 1);
    c[2].last_move_ns = 1 * S; // a move history from before its birth (an earlier region's): birth counts
    plan = plan_demotions(c, 100 * MiB, s);
    CHECK(plan[0] == 2);
}

TEST_CASE("demotion: a promoted region's fault rate is its last one on disk, not a measure of its use now") {
    // The scipy job (tests/bench/jobs/scipy_job.py): the first matrix's
    // indices promoted at 2 s at 98,696 faults/s, unused after the phase
    // that followed; the transposed matrix's promoted at 9 s at 225,545
    // faults/s, and read at every PageRank iteration after it. With the
    // iterations' first vector, 32 MiB had to be freed: the first one goes.
    TierSettings s;
    std::vector<TierCandidate> c(3);
    c[0] = disk_random(114, 98696); // the first matrix's indices
    c[0].backing = Backing::memory;
    c[0].born_ns = 1 * S;
    c[0].last_move_ns = 2 * S;
    c[1] = disk_random(114, 231047); // the transposed matrix's data
    c[1].backing = Backing::memory;
    c[1].born_ns = 8 * S;
    c[1].last_move_ns = 9 * S;
    c[2] = disk_random(114, 225545); // ...and its indices, promoted just after
    c[2].backing = Backing::memory;
    c[2].born_ns = 8 * S;
    c[2].last_move_ns = 9 * S + S / 2;
    c[1].fault_rate = 50; // its last look on disk saw little: changes nothing
    auto plan = plan_demotions(c, 32 * MiB, s);
    REQUIRE(plan.size() == 1);
    CHECK(plan[0] == 0);
    plan = plan_demotions(c, 200 * MiB, s);
    REQUIRE(plan.size() == 2);
    CHECK(plan[1] == 1);
}

TEST_CASE("growth: a rate per look, and only growth sustained over two looks is a trend") {
    CHECK(growth_rate(100 * MiB, 200 * MiB, S / 10) == Approx(1000.0 * MiB));
    CHECK(growth_rate(200 * MiB, 100 * MiB, S / 10) == Approx(-1000.0 * MiB));
    CHECK(growth_rate(1, 2, 0) == 0);
    CHECK(sustained_growth(0, 4000.0 * MiB) == 0);          // one jump
    CHECK(sustained_growth(300.0 * MiB, 350.0 * MiB) == Approx(300.0 * MiB));
    CHECK(sustained_growth(-5.0, 100.0) == -5.0);
}

TEST_CASE("room for a promotion: cold disk regions give up their cache, least benefit first, never the promoted one nor a random one") {
    std::vector<TierCandidate> c = {disk_random(256, 5000), disk_random(2048, 50), disk_random(512, 10),
                                    disk_random(1024, 10), disk_random(300, 0)};
    c[1].phase = 1;               // sequential, still read a little
    c[2].phase = 0;               // undecided
    c[3].phase = 1;               // sequential
    c[4].backing = Backing::anon; // in memory: no page cache to give
    // Benefit per byte: c[3] 10/1024 MiB < c[2] 10/512 MiB < c[1] 50/2048 MiB.
    auto plan = plan_cache_donors(c, 0, 1200 * MiB);
    REQUIRE(plan.size() == 2);
    CHECK(plan[0] == 3);
    CHECK(plan[1] == 2);
    CHECK(plan_cache_donors(c, 0, 100 * MiB) == std::vector<size_t>{3});
    CHECK(plan_cache_donors(c, 0, 0).empty());
    // Everything else is asked when the need is larger than all of it.
    CHECK(plan_cache_donors(c, 0, 100000 * MiB) == std::vector<size_t>{3, 2, 1});
    // The region being promoted gives nothing, even when it is the coldest.
    CHECK(plan_cache_donors(c, 3, 100 * MiB) == std::vector<size_t>{2});
    // A random region keeps its cache: it is what its random reads hit.
    c[2].phase = 2;
    CHECK(plan_cache_donors(c, 0, 100000 * MiB) == std::vector<size_t>{3, 1});
}
