// shim_fixture.h — brings the shim's large path up once in a unit-test
// process (no LD_PRELOAD: the tests call the internals directly), with a
// private spill directory on disk and a 1 MiB threshold.
#pragma once

#include "registry/arena.h"
#include "backing/backing.h"
#include "sites/callsite.h"
#include "access/sampler.h"
#include "stats/stats_live.h"
#include "tiering/rehome.h"
#include "tiering/tiering_loop.h"
#include "config.h"
#include "large/large.h"
#include "profile.h"
#include "test_tmp.h"

#include <cstdlib>
#include <string>

namespace test {

inline spillway::Settings &settings() {
    static spillway::Settings *s = [] {
        auto *st = new spillway::Settings();
        std::string tmpl = tmp_template("spillway-unit");
        st->spill_dir = mkdtemp(tmpl.data());
        st->threshold = 1 << 20;
        st->log_level = spillway::LogLevel::error;
        spillway::Rule scatter; // test_callsite: rules by name and by module
        scatter.match = "scatter_*";
        scatter.policy = spillway::Policy::memory;
        scatter.line = 1;
        spillway::Rule dl;
        dl.module = "libspw_sites_dl*";
        dl.policy = spillway::Policy::anon;
        dl.line = 2;
        st->rules = {scatter, dl};
        return st;
    }();
    return *s;
}

inline void bring_up() {
    static bool done = [] {
        spillway::Settings &s = settings();
        spillway::backing_init(s);
        spillway::arena::reserve(size_t(1) << 40);
        spillway::large_init(s);
        spillway::callsite_init(s);
        spillway::sampler_init(s);
        spillway::tiering_init(s);
        spillway::stats_live_init(spillway::moving_to);
        spillway::profile_load(s);
        spillway::g_large_threshold = s.threshold;
        std::atexit([] { std::system(("rm -rf " + settings().spill_dir).c_str()); });
        return true;
    }();
    (void)done;
}

} // namespace test
