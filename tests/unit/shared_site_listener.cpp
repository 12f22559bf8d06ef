// shared_site_listener.cpp — every test case starts with the shared call
// site knowing nothing.
//
// In this binary the tests and the engine are one object, so a capture
// skips every frame of a test as the shim's own (callsite.cpp) and all
// allocations made from a test's main thread are one site: libc's
// __libc_start_call_main and below (a std::thread's are another: libc's
// start_thread). Whatever one case's regions teach that site, every later
// case would inherit: test_sampler's "scattered faults as random" teaches it
// random access on purpose, and in CI run 73 some case left it so before
// test_recycle, whose plain mallocs then went to memory, not disk. So before
// each case the sites whose frames start in libc forget what they learned
// (the tests of learning itself use sites_lib's frames, or one case).
#include "sites/callsite.h"

#include <catch2/catch.hpp>
#include <cstdio> // fprintf: an address in libc
#include <dlfcn.h>

namespace {

bool starts_in_libc(const spillway::CallSite *site) {
    static void *libc_base = [] {
        Dl_info info{};
        return dladdr((void *)&fprintf, &info) ? info.dli_fbase : nullptr;
    }();
    if (!site->depth || !libc_base) return false;
    Dl_info info{};
    return dladdr((void *)(site->frames[0] - 1), &info) && info.dli_fbase == libc_base;
}

struct SharedSiteReset : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;

    void testCaseStarting(const Catch::TestCaseInfo &) override {
        for (spillway::CallSite *s = spillway::callsite_list(); s; s = s->all_next) {
            if (!starts_in_libc(s)) continue;
            s->access.store((int)spillway::Access::unknown);
            s->from_profile.store(false);
        }
    }
};

} // namespace

CATCH_REGISTER_LISTENER(SharedSiteReset)
