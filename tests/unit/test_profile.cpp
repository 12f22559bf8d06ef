// test_profile.cpp — the learned profile: renders to TOML that parses back,
// merges with random sticky, and a broken file is reported, not trusted.
#include "profile.h"

#include <catch2/catch.hpp>

using namespace spillway;

static ProfileEntry entry(uint64_t id, Access a, const char *evidence) {
    ProfileEntry e;
    e.identity = id;
    e.access = a;
    e.decision = a == Access::random ? "memory" : "disk";
    e.evidence = evidence;
    e.frames = {"prog+0x1234 scatter_add", "libc.so.6+0x29d90 \"quoted\""};
    return e;
}

TEST_CASE("profiles render and parse back") {
    std::vector<ProfileEntry> in = {entry(0xabcdef0123456789ull, Access::random, "62 of 64 windows"),
                                    entry(42, Access::sequential, "in order")};
    std::string text = profile_render(in);
    CHECK(text.find("[[site]]") != std::string::npos);
    CHECK(text.find("id = \"abcdef0123456789\"") != std::string::npos);
    std::vector<ProfileEntry> out;
    std::string err;
    REQUIRE(profile_parse(text, "p.toml", out, err));
    REQUIRE(out.size() == 2);
    CHECK(out[0].identity == 0xabcdef0123456789ull);
    CHECK(out[0].access == Access::random);
    CHECK(out[0].frames.size() == 2);
    CHECK(out[0].frames[1] == "libc.so.6+0x29d90 \"quoted\"");
    CHECK(out[1].access == Access::sequential);
}

TEST_CASE("merging keeps random sticky and counts runs") {
    std::vector<ProfileEntry> older = {entry(1, Access::random, "run 1"), entry(2, Access::sequential, "a")};
    std::vector<ProfileEntry> newer = {entry(1, Access::sequential, "run 2"), entry(2, Access::random, "b"),
                                       entry(3, Access::sequential, "c")};
    auto merged = profile_merge(older, newer);
    REQUIRE(merged.size() == 3);
    CHECK(merged[0].access == Access::random);
    CHECK(merged[0].evidence == "run 1");
    CHECK(merged[0].runs == 2);
    CHECK(merged[1].access == Access::random);
    CHECK(merged[2].identity == 3);
}

TEST_CASE("a site's lifetime renders, parses back, and is always the newer run's") {
    ProfileEntry shortlived = entry(7, Access::unknown, "");
    shortlived.decision = "anon";
    shortlived.short_lived = true;
    shortlived.lifetime_evidence = "17 of 17 freed, after at most 412 ms";
    std::string text = profile_render({shortlived, entry(8, Access::random, "scattered")});
    CHECK(text.find("lifetime = \"short\"") != std::string::npos);
    CHECK(text.find("lifetime = \"long\"") != std::string::npos);
    std::vector<ProfileEntry> out;
    std::string err;
    REQUIRE(profile_parse(text, "p.toml", out, err));
    REQUIRE(out.size() == 2);
    CHECK(out[0].short_lived);
    CHECK(out[0].lifetime_evidence == "17 of 17 freed, after at most 412 ms");
    CHECK_FALSE(out[1].short_lived);
    // An entry written before lifetimes existed is long-lived.
    out.clear();
    REQUIRE(profile_parse("[[site]]\nid = \"9\"\naccess = \"sequential\"\n", "old.toml", out, err));
    REQUIRE(out.size() == 1);
    CHECK_FALSE(out[0].short_lived);
    // The newer run's lifetime wins both ways, even where random access is kept.
    ProfileEntry random_short = entry(8, Access::random, "scattered");
    random_short.short_lived = true;
    ProfileEntry seq_long = entry(8, Access::sequential, "in order");
    ProfileEntry seq_long7 = entry(7, Access::sequential, "in order");
    auto merged = profile_merge({shortlived, random_short}, {seq_long7, seq_long});
    REQUIRE(merged.size() == 2);
    CHECK_FALSE(merged[0].short_lived); // the temporary now lives on: no longer placed in memory
    CHECK(merged[1].access == Access::random);
    CHECK_FALSE(merged[1].short_lived);
    merged = profile_merge({seq_long7}, {shortlived});
    CHECK(merged[0].short_lived);
    CHECK(merged[0].decision == "anon");
    // An entry for a lifetime alone (access unknown: this run learned none,
    // or had it from the profile) keeps the older access and its evidence.
    CHECK(merged[0].access == Access::sequential);
    CHECK(merged[0].evidence == "in order");
    CHECK(merged[0].runs == 2);
}

TEST_CASE("a broken profile is reported in one line") {
    std::vector<ProfileEntry> out;
    std::string err;
    CHECK_FALSE(profile_parse("[[site]\nid = 1", "bad.toml", out, err));
    CHECK(err.find("bad.toml:1") == 0);
    CHECK(err.find("delete it") != std::string::npos);
}
