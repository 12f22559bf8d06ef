// tsan_concurrency.cpp — the large path driven from many threads at once
// (allocation, in-place and moving realloc, free through the reaper, call-site
// capture and its cache), for the ThreadSanitizer build. Uses the unit tests'
// fixture: the shim's internals brought up without LD_PRELOAD.
#include "shim_fixture.h"

#include "large/large.h"
#include "backing/reaper.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace spillway;

static void *big(size_t n) {
    bool use_small = false;
    void *p = large_alloc(n, 0, 0, &use_small);
    REQUIRE((p || use_small));
    return p;
}

TEST_CASE("hardening: concurrent large alloc, realloc and free") {
    test::bring_up();
#if defined(__SANITIZE_THREAD__)
    // libunwind's per-thread cache destructor runs after TSan has torn the
    // exiting thread down and crashes in TSan's mutex hook: call-site
    // capture cannot run on short-lived threads under TSan (see README.md).
    bool saved_callsites = test::settings().callsites;
    test::settings().callsites = false;
#endif
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; t++)
        ts.emplace_back([t, &bad] {
            std::mt19937 rng(t);
            std::vector<std::pair<unsigned char *, size_t>> live;
            for (int i = 0; i < 150; i++) {
                if (live.size() > 6 || (!live.empty() && rng() % 3 == 0)) {
                    size_t k = rng() % live.size();
                    auto [p, n] = live[k];
                    if (p[0] != (unsigned char)n || p[n - 1] != (unsigned char)n) bad++;
                    if (rng() % 2) {
                        size_t m = n + (1 << 20) + rng() % (4 << 20);
                        auto *q = (unsigned char *)large_realloc(p, m);
                        if (!q || q[0] != (unsigned char)n) { bad++; continue; }
                        q[0] = q[m - 1] = (unsigned char)m;
                        live[k] = {q, m};
                    } else {
                        large_free(p);
                        live.erase(live.begin() + (long)k);
                    }
                } else {
                    size_t n = (1 << 20) + rng() % (6 << 20);
                    bool use_small = false;
                    auto *p = (unsigned char *)large_alloc(n, 0, 0, &use_small);
                    if (!p) { bad++; continue; }
                    p[0] = p[n - 1] = (unsigned char)n;
                    live.push_back({p, n});
                }
            }
            for (auto &[p, n] : live) large_free(p);
        });
    for (auto &t : ts) t.join();
    reaper_drain();
#if defined(__SANITIZE_THREAD__)
    test::settings().callsites = saved_callsites;
#endif
    CHECK(bad == 0);
}

TEST_CASE("hardening: call-site capture from many threads shares one cache") {
    test::bring_up();
    std::vector<std::thread> ts;
    std::atomic<int> nulls{0};
    for (int t = 0; t < 8; t++)
        ts.emplace_back([&] {
            for (int i = 0; i < 2000; i++)
                if (!callsite_capture()) nulls++;
        });
    for (auto &t : ts) t.join();
    CHECK(nulls == 0);
}

TEST_CASE("hardening: frees from many threads race the reaper") {
    test::bring_up();
    std::vector<void *> ps;
    for (int i = 0; i < 64; i++) ps.push_back(big((1 << 20) + 4096 * i));
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&, t] {
            for (size_t i = (size_t)t; i < ps.size(); i += 4) large_free(ps[i]);
        });
    for (auto &t : ts) t.join();
    reaper_drain();
    SUCCEED();
}
