// test_callsite.cpp — call sites: the same code path is one site, different
// paths are different sites, identity is (module, offset) and survives a
// new process (ASLR), capture works from threads, deep recursion and a
// dlopen'ed library, and rules match by function name and module.
#include "shim_fixture.h"
#include "sites_lib.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <dlfcn.h>
#include <string>

using namespace spillway;

static void *capture() { return callsite_capture(); }
static CallSite *site(void *p) { return static_cast<CallSite *>(p); }

TEST_CASE("the same path is one site; different paths are different sites") {
    test::bring_up();
    CallSite *seen[2];
    volatile int n = 2; // volatile: one call instruction, not an unrolled pair
    for (int i = 0; i < n; i++)
        seen[i] = site(sequential_fill_site(capture));
    CallSite *a = seen[0], *b = seen[1];
    CallSite *c = site(scatter_add_site(capture));
    REQUIRE(a);
    REQUIRE(c);
    INFO(callsite_describe(a, 12) << "\n vs \n" << callsite_describe(b, 12));
    CHECK(a == b);
    CHECK(a != c);
    CHECK(a->identity != c->identity);
    CHECK(callsite_describe(a, 1).find("libspw_sites.so+0x") == 0);
    CHECK(callsite_describe(a, 1).find("sequential_fill_site") != std::string::npos);
}

TEST_CASE("capture works from a thread and from deep recursion") {
    test::bring_up();
    CallSite *t = site(thread_site(capture));
    REQUIRE(t);
    CHECK(callsite_describe(t, 1).find("sequential_fill_site") != std::string::npos);
    CallSite *deep = site(deep_site(capture, 200));
    REQUIRE(deep);
    CHECK(deep->depth == test::settings().callsite_depth);
    CHECK(site(deep_site(capture, 3)) != deep);
}

TEST_CASE("capture works through a dlopen'ed library, and rules see its module") {
    test::bring_up();
    void *lib = dlopen(SITES_DL_PATH, RTLD_NOW);
    REQUIRE(lib);
    auto fn = (void *(*)(void *(*)()))dlsym(lib, "dlopened_site");
    REQUIRE(fn);
    CallSite *s = site(fn(capture));
    REQUIRE(s);
    CHECK(callsite_describe(s, 1).find("libspw_sites_dl.so+0x") == 0);
    REQUIRE(s->rule);
    CHECK(s->rule->policy == Policy::anon);
}

TEST_CASE("rules match function names of the frames") {
    test::bring_up();
    CallSite *scatter = site(scatter_add_site(capture));
    REQUIRE(scatter->rule);
    CHECK(scatter->rule->policy == Policy::memory);
    CHECK(site(sequential_fill_site(capture))->rule == nullptr);
}

// preload: a library loaded ahead of the test's own libraries, so they (and
// the site's return addresses) land elsewhere even where ASLR is off.
static std::string child_site(const char *preload = nullptr) {
    std::string cmd = std::string("SPILLWAY_TEST_PRINT_SITE=1 ") + (preload ? std::string("LD_PRELOAD=") + preload + " " : "") +
                      "/proc/" + std::to_string(getpid()) + "/exe";
    FILE *child = popen(cmd.c_str(), "r");
    REQUIRE(child);
    char buf[128] = {0};
    REQUIRE(fgets(buf, sizeof buf, child));
    pclose(child);
    return buf;
}

TEST_CASE("identity is the same in a new process despite ASLR") {
    // Two fresh processes take the same path to the same site: their raw
    // return addresses differ (ASLR), their identities must not.
    // The second child has a library preloaded, which moves the others: the
    // raw addresses differ whether or not the kernel randomises them.
    std::string one = child_site(), two = child_site(SYMS_PATH);
    std::string id_one = one.substr(0, one.find(' ')), id_two = two.substr(0, two.find(' '));
    std::string raw_one = one.substr(one.find(' ') + 1), raw_two = two.substr(two.find(' ') + 1);
    CHECK(id_one.size() == 16);
    CHECK(id_one == id_two);
    CHECK(raw_one != raw_two);
    // Each part of a step counts: the offset, the module and the hash so far.
    CHECK(identity_hash_step(1, "libc.so.6", 0x100) != identity_hash_step(1, "libc.so.6", 0x101));
    CHECK(identity_hash_step(1, "libc.so.6", 0x100) != identity_hash_step(1, "libm.so.6", 0x100));
    CHECK(identity_hash_step(1, "libc.so.6", 0x100) != identity_hash_step(2, "libc.so.6", 0x100));
}

TEST_CASE("site statistics serialise as JSON") {
    test::bring_up();
    std::string json = callsite_stats_json();
    CHECK(json.front() == '[');
    CHECK(json.find("\"frames\":[") != std::string::npos);
}

// Used by the identity test: a second process prints one site's identity.
int print_site_identity_if_asked() {
    if (!getenv("SPILLWAY_TEST_PRINT_SITE")) return -1;
    test::bring_up();
    CallSite *s = site(scatter_add_site(capture));
    printf("%s %lx\n", callsite_identity_hex(s).c_str(), (unsigned long)s->frames[0]);
    return 0;
}
