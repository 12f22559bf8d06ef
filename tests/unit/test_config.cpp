// test_config.cpp — defaults, every key, environment overrides, and one
// clear line (file, line, key, expectation) for each kind of bad config.
#include "config.h"

#include <catch2/catch.hpp>
#include <map>
#include <unistd.h>

using namespace spillway;

static std::string parse_error(const std::string &text) {
    Settings s;
    auto err = parse_config_text(text, "job.toml", s);
    return err ? *err : "";
}

TEST_CASE("defaults are the documented ones") {
    Settings s;
    CHECK(s.threshold == 64ull << 20);
    CHECK(s.threshold_origin == ThresholdOrigin::not_given); // derived at start-up (derived_threshold.h)
    CHECK(s.policy == Policy::auto_);
    CHECK(s.spill_dir == "/var/tmp/spillway-" + std::to_string(geteuid())); // one per user
    CHECK_FALSE(s.spill_dir_given);
    CHECK_FALSE(s.allow_tmpfs);
    CHECK(s.memory_reserve == 256ull << 20);
    CHECK(s.log_level == LogLevel::warn);
    CHECK(s.shm_redirect);
    CHECK(s.fork_snapshot);
    CHECK(s.python_depth == 4);
    CHECK(s.python_arenas == PythonArenas::auto_); // in spill chunks under a memory limit
}

TEST_CASE("every key is read") {
    Settings s;
    auto err = parse_config_text(R"(
threshold = "2MiB"
policy = "disk"
[spill]
dir = "/data/spill"
allow_tmpfs = true
dedicated_min = "1GiB"
[memory]
reserve = "1GiB"
[log]
level = "debug"
file = "/tmp/x.log"
[stats]
file = "/tmp/s.jsonl"
[profile]
file = "/tmp/p.toml"
learn = false
[callsites]
enabled = false
depth = 20
python_depth = 6
[shm]
redirect = false
min_size = "128MiB"
[fork]
snapshot = false
[python]
arenas = "never"
[[rule]]
match = "scatter_*"
module = "libtorch*"
policy = "memory"
access = "random"
[[rule]]
module = "libfoo.so"
policy = "anon"
[[rule]]
python = "train.py:build_csr*"
policy = "memory"
)", "job.toml", s);
    REQUIRE_FALSE(err);
    CHECK(s.threshold == 2ull << 20);
    CHECK(s.threshold_origin == ThresholdOrigin::config);
    CHECK(s.policy == Policy::disk);
    CHECK(s.spill_dir == "/data/spill");
    CHECK(s.spill_dir_given);
    CHECK(s.allow_tmpfs);
    CHECK(s.dedicated_min == 1ull << 30);
    CHECK(s.memory_reserve == 1ull << 30);
    CHECK(s.log_level == LogLevel::debug);
    CHECK(s.log_file == "/tmp/x.log");
    CHECK(s.stats_file == "/tmp/s.jsonl");
    CHECK(s.profile_file == "/tmp/p.toml");
    CHECK_FALSE(s.learn);
    CHECK_FALSE(s.callsites);
    CHECK(s.callsite_depth == 20);
    CHECK(s.python_depth == 6);
    CHECK_FALSE(s.shm_redirect);
    CHECK(s.shm_min == 128ull << 20);
    CHECK_FALSE(s.fork_snapshot);
    CHECK(s.python_arenas == PythonArenas::never);
    REQUIRE(s.rules.size() == 3);
    CHECK(s.rules[2].python == "train.py:build_csr*");
    CHECK(s.rules[0].match == "scatter_*");
    CHECK(s.rules[0].module == "libtorch*");
    CHECK(s.rules[0].policy == Policy::memory);
    CHECK(s.rules[0].access == Access::random);
    CHECK(s.rules[0].line == 29);
    CHECK(s.rules[1].policy == Policy::anon);
}

TEST_CASE("bad configs give one line naming file, line and key") {
    std::string e = parse_error("threshold = \"64MiB");
    CHECK(e.find("job.toml:1") == 0);
    CHECK(e.find("syntax error") != std::string::npos);

    e = parse_error("threshold = \"64MiB\"\n\nthreshhold = 5");
    CHECK(e.find("job.toml:3") == 0);
    CHECK(e.find("key 'threshhold'") != std::string::npos);
    CHECK(e.find("unknown key") != std::string::npos);

    e = parse_error("[spill]\ndir = 5");
    CHECK(e.find("job.toml:2") == 0);
    CHECK(e.find("key 'spill.dir'") != std::string::npos);
    CHECK(e.find("expected a string") != std::string::npos);

    e = parse_error("[python]\narenas = true");
    CHECK(e.find("job.toml:2") == 0);
    CHECK(e.find("key 'python.arenas'") != std::string::npos);
    CHECK(e.find("expected one of \"auto\", \"always\", \"never\"") != std::string::npos);

    e = parse_error("threshold = \"lots\"");
    CHECK(e.find("key 'threshold'") != std::string::npos);
    CHECK(e.find("expected a size") != std::string::npos);

    e = parse_error("threshold = \"1KiB\"");
    CHECK(e.find("at least") != std::string::npos);

    // A float is no size; one past int64's range was converted (undefined
    // behaviour) before it was refused (fuzz_config, CI run 70).
    for (const char *text : {"threshold = 1.5e26", "threshold = 2.5"}) {
        e = parse_error(text);
        CHECK(e.find("key 'threshold'") != std::string::npos);
        CHECK(e.find("expected a size string") != std::string::npos);
    }

    e = parse_error("policy = \"fast\"");
    CHECK(e.find("\"disk\", \"memory\", \"anon\", \"auto\"") != std::string::npos);

    e = parse_error("[[rule]]\nmatch = \"x\"");
    CHECK(e.find("needs a policy") != std::string::npos);

    e = parse_error("[spill]\ndir = \"relative/path\"");
    CHECK(e.find("absolute") != std::string::npos);

    e = parse_error("[[rule]]\npython = \"build_csr\"\npolicy = \"memory\"");
    CHECK(e.find("job.toml:2") == 0);
    CHECK(e.find("key 'rule.python'") != std::string::npos);
    CHECK(e.find("FILE:FUNCTION") != std::string::npos);

    e = parse_error("[[rule]]\npython = \"python train.py:f:3\"\npolicy = \"memory\"");
    CHECK(e.find("key 'rule.python'") != std::string::npos);

    e = parse_error("[callsites]\npython_depth = 40");
    CHECK(e.find("key 'callsites.python_depth'") != std::string::npos);

    e = parse_error("[[rule]]\npolicy = \"memory\"");
    CHECK(e.find("match, module or python") != std::string::npos);

    e = parse_error("[log]\nlevel = \"loud\"");
    CHECK(e.find("key 'log.level'") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("environment variables override single settings") {
    std::map<std::string, std::string> env = {{"SPILLWAY_DIR", "/srv/spill"},
                                              {"SPILLWAY_THRESHOLD", "8MiB"},
                                              {"SPILLWAY_POLICY", "memory"},
                                              {"SPILLWAY_LOG", "info"}};
    auto lookup = [&](const char *name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    };
    Settings s;
    REQUIRE_FALSE(load_settings(s, lookup));
    CHECK(s.spill_dir == "/srv/spill");
    CHECK(s.spill_dir_given);
    CHECK(s.threshold == 8ull << 20);
    CHECK(s.threshold_origin == ThresholdOrigin::environment);
    CHECK(s.policy == Policy::memory);
    CHECK(s.log_level == LogLevel::info);

    env["SPILLWAY_THRESHOLD"] = "huge";
    Settings bad;
    auto err = load_settings(bad, lookup);
    REQUIRE(err);
    CHECK(err->find("SPILLWAY_THRESHOLD") != std::string::npos);

    env.erase("SPILLWAY_THRESHOLD");
    env["SPILLWAY_CONFIG"] = "/nonexistent/spillway.toml";
    err = load_settings(bad, lookup);
    REQUIRE(err);
    CHECK(err->find("/nonexistent/spillway.toml") != std::string::npos);
    CHECK(err->find("SPILLWAY_CONFIG") != std::string::npos);
}

TEST_CASE("the effective settings print as a config that parses back") {
    Settings s;
    REQUIRE_FALSE(parse_config_text("threshold = \"3MiB\"\n[callsites]\npython_depth = 2\n[python]\narenas = \"always\"\n[[rule]]\nmatch = \"f*\"\n"
                                    "policy = \"memory\"\n[[rule]]\npython = \"a.py:g:7\"\npolicy = \"disk\"\n",
                                    "a.toml", s));
    std::string text = describe_settings(s);
    Settings again;
    auto err = parse_config_text(text, "echo.toml", again);
    INFO(text);
    REQUIRE_FALSE(err);
    CHECK(again.threshold == s.threshold);
    REQUIRE(again.rules.size() == 2);
    CHECK(again.rules[1].python == "a.py:g:7");
    CHECK(again.python_depth == 2);
    CHECK(again.python_arenas == PythonArenas::always);
    CHECK(config_error_line("x", false).find("SPILLWAY_ON_ERROR=continue") != std::string::npos);
}

TEST_CASE("tiering keys: defaults, every key read, bad values named") {
    Settings d;
    CHECK(d.tiering.enabled);
    CHECK(d.tiering.min_size == 64ull << 20);
    CHECK(d.tiering.promote_rate == 1ull << 30);
    CHECK(d.tiering.interval_ms == 100);
    CHECK(d.tiering.cooldown_ms == 10000);
    CHECK(d.tiering.demote_margin == 128ull << 20);
    CHECK(d.tiering.horizon_ms == 500);
    Settings s;
    auto err = parse_config_text(R"(
[tiering]
enabled = false
min_size = "128MiB"
promote_rate = "256MiB"
interval_ms = 50
cooldown_ms = 0
demote_margin = "64MiB"
horizon_ms = 2000
)", "job.toml", s);
    REQUIRE_FALSE(err);
    CHECK_FALSE(s.tiering.enabled);
    CHECK(s.tiering.min_size == 128ull << 20);
    CHECK(s.tiering.promote_rate == 256ull << 20);
    CHECK(s.tiering.interval_ms == 50);
    CHECK(s.tiering.cooldown_ms == 0);
    CHECK(s.tiering.demote_margin == 64ull << 20);
    CHECK(s.tiering.horizon_ms == 2000);
    std::string e = parse_error("[tiering]\ninterval_ms = 1");
    CHECK(e.find("job.toml:2") == 0);
    CHECK(e.find("key 'tiering.interval_ms'") != std::string::npos);
    CHECK(e.find("from 10 to 60000") != std::string::npos);
    e = parse_error("[tiering]\npromote_rate = 0");
    CHECK(e.find("key 'tiering.promote_rate'") != std::string::npos);
    e = parse_error("[tiering]\nspeed = 1");
    CHECK(e.find("unknown key") != std::string::npos);
    // The printed settings parse back to the same values.
    Settings back;
    REQUIRE_FALSE(parse_config_text(describe_settings(s), "printed", back));
    CHECK(back.tiering.horizon_ms == 2000);
    CHECK_FALSE(back.tiering.enabled);
}

TEST_CASE("threshold origin: a config without the key leaves it not given, and prints so") {
    Settings s;
    REQUIRE_FALSE(parse_config_text("policy = \"disk\"\n", "job.toml", s));
    CHECK(s.threshold_origin == ThresholdOrigin::not_given);
    CHECK(s.threshold == kDefaultThreshold);
    Settings t;
    REQUIRE_FALSE(parse_config_text("threshold = \"64MiB\"\n", "job.toml", t));
    CHECK(t.threshold_origin == ThresholdOrigin::config); // naming the default is naming it
    // Printed and parsed back, each stays what it was (`spillway run` writes
    // such a text as its child's config: a derived threshold must stay derived).
    Settings s_back, t_back;
    REQUIRE_FALSE(parse_config_text(describe_settings(s), "printed", s_back));
    REQUIRE_FALSE(parse_config_text(describe_settings(t), "printed", t_back));
    CHECK(s_back.threshold_origin == ThresholdOrigin::not_given);
    CHECK(t_back.threshold_origin == ThresholdOrigin::config);
    CHECK(t_back.threshold == kDefaultThreshold);
}

TEST_CASE("stats.run: read, printed back when set, and checked") {
    Settings s;
    REQUIRE_FALSE(parse_config_text("[stats]\nfile = \"/var/log/s.jsonl\"\nrun = \"nightly-2/a_b.c\"\n", "job.toml", s));
    CHECK(s.stats_run == "nightly-2/a_b.c");
    Settings again;
    REQUIRE_FALSE(parse_config_text(describe_settings(s), "echo.toml", again));
    CHECK(again.stats_run == "nightly-2/a_b.c");
    CHECK(Settings{}.stats_run.empty());
    CHECK(describe_settings(Settings{}).find("run =") == std::string::npos); // unset: not printed

    Settings empty;
    REQUIRE_FALSE(parse_config_text("[stats]\nrun = \"\"\n", "job.toml", empty)); // empty: no tag
    CHECK(empty.stats_run.empty());

    std::string e = parse_error("[stats]\nfile = \"/tmp/s\"\nrun = \"two words\"");
    CHECK(e.find("job.toml:3") == 0);
    CHECK(e.find("key 'stats.run'") != std::string::npos);
    CHECK(e.find("letters, digits") != std::string::npos);
    CHECK(e.find("got \"two words\"") != std::string::npos);
    e = parse_error("[stats]\nrun = \"quote\\\"d\"");
    CHECK(e.find("key 'stats.run'") != std::string::npos);
    e = parse_error("[stats]\nrun = 7");
    CHECK(e.find("key 'stats.run'") != std::string::npos);
    CHECK(e.find("expected a string") != std::string::npos);
    e = parse_error("[stats]\nrun = \"" + std::string(257, 'a') + "\"");
    CHECK(e.find("at most 256") != std::string::npos);
    CHECK(parse_error("[stats]\nrun = \"" + std::string(256, 'a') + "\"").empty());
    e = parse_error("[stats]\nrun = \"a\\nb\"");
    CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("stats.run: SPILLWAY_STATS_RUN overrides the config's, and is checked") {
    std::map<std::string, std::string> env = {{"SPILLWAY_STATS_RUN", "outer/1f2e"}};
    auto lookup = [&](const char *name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    };
    Settings s;
    REQUIRE_FALSE(load_settings(s, lookup));
    CHECK(s.stats_run == "outer/1f2e");
    env["SPILLWAY_STATS_RUN"] = "a b";
    Settings bad;
    auto err = load_settings(bad, lookup);
    REQUIRE(err);
    CHECK(err->find("SPILLWAY_STATS_RUN") != std::string::npos);
}
