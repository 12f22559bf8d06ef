// test_env_overrides.cpp — env_overrides.cpp: the single-setting variables'
// rules, word for word the messages load_settings returns (the front runs
// these rules before the engine is loaded, the engine through
// load_settings: the two can never disagree).
#include "env_overrides.h"

#include "config.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>

using namespace spillway;

namespace {

using Env = std::map<std::string, std::string>;

const char *from_map(void *ctx, const char *name) {
    auto *env = static_cast<Env *>(ctx);
    auto it = env->find(name);
    return it == env->end() ? nullptr : it->second.c_str();
}

// apply_env_overrides' message, or "" when the variables are good.
std::string judge(Env env, SimpleSettings *s = nullptr) {
    SimpleSettings local;
    if (!s) s = &local;
    char message[1024];
    size_t needed = 0;
    if (apply_env_overrides(s, from_map, &env, message, sizeof message, &needed)) return "";
    CHECK(needed == strlen(message));
    return message;
}

// load_settings' message for the same variables (no config file).
std::string engine_says(const Env &env) {
    Settings s;
    auto err = load_settings(s, [&](const char *name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    });
    return err.value_or("");
}

} // namespace

TEST_CASE("env_overrides: good variables override the settings") {
    SimpleSettings s;
    CHECK(judge({{"SPILLWAY_DIR", "/srv/spill"}, {"SPILLWAY_THRESHOLD", "8MiB"}, {"SPILLWAY_POLICY", "memory"},
                 {"SPILLWAY_LOG", "warning"}, {"SPILLWAY_STATS", "/tmp/s-%p"}, {"SPILLWAY_STATS_RUN", "job-7/3fa9"}},
                &s) == "");
    CHECK(std::string(s.spill_dir) == "/srv/spill");
    CHECK(s.spill_dir_given);
    CHECK(s.threshold == 8ull << 20);
    CHECK(s.threshold_origin == ThresholdOrigin::environment);
    CHECK(s.policy == Policy::memory);
    CHECK(s.log_level == LogLevel::warn);
    CHECK(std::string(s.stats_file) == "/tmp/s-%p");
    CHECK(std::string(s.stats_run) == "job-7/3fa9");
}

TEST_CASE("env_overrides: an empty variable is unset") {
    SimpleSettings s;
    CHECK(judge({{"SPILLWAY_DIR", ""}, {"SPILLWAY_THRESHOLD", ""}, {"SPILLWAY_POLICY", ""}}, &s) == "");
    CHECK(s.spill_dir == nullptr);
    CHECK_FALSE(s.spill_dir_given);
    CHECK(s.threshold == kDefaultThreshold);
    CHECK(s.threshold_origin == ThresholdOrigin::not_given);
}

TEST_CASE("env_overrides: each bad variable's line, the same as the engine's") {
    const Env cases[] = {
        {{"SPILLWAY_THRESHOLD", "bogus"}},
        {{"SPILLWAY_THRESHOLD", "1.5"}},
        {{"SPILLWAY_THRESHOLD", "1KiB"}},
        {{"SPILLWAY_THRESHOLD", "12 parsecs"}},
        {{"SPILLWAY_POLICY", "disco"}},
        {{"SPILLWAY_POLICY", "x\ny"}},
        {{"SPILLWAY_LOG", "loud"}},
        {{"SPILLWAY_DIR", "relative/dir"}},
        {{"SPILLWAY_STATS_RUN", "has space"}},
        {{"SPILLWAY_STATS_RUN", "quote\"d"}},
        {{"SPILLWAY_STATS_RUN", std::string(257, 'r')}},
        {{"SPILLWAY_THRESHOLD", "bogus"}, {"SPILLWAY_POLICY", "x"}, {"SPILLWAY_DIR", "rel"}}, // the first, in order
        {{"SPILLWAY_POLICY", "x"}, {"SPILLWAY_DIR", "rel"}},
    };
    for (const Env &env : cases) {
        std::string front = judge(env);
        INFO(front);
        CHECK_FALSE(front.empty());
        CHECK(front == engine_says(env));
        CHECK(front.find('\n') == std::string::npos);
    }
    CHECK(judge({{"SPILLWAY_THRESHOLD", "1KiB"}}) == "environment: SPILLWAY_THRESHOLD: must be at least 64KiB, got 1KiB");
    CHECK(judge({{"SPILLWAY_POLICY", "x\ny"}}) ==
          "environment: SPILLWAY_POLICY: expected one of disk, memory, anon, auto, got \"x\\ny\"");
    CHECK(judge({{"SPILLWAY_STATS_RUN", "a\nb"}}) ==
          "environment: SPILLWAY_STATS_RUN: expected at most 256 letters, digits, '.', '_', '-' or '/' (a tag that "
          "marks this job's lines in the stats file), got \"a\\nb\"");
    CHECK(judge({{"SPILLWAY_DIR", "rel"}}) ==
          "(defaults): key 'spill.dir': expected an absolute directory path, got \"rel\"");
    CHECK(judge({{"SPILLWAY_THRESHOLD", "bogus"}, {"SPILLWAY_POLICY", "x"}}).find("SPILLWAY_THRESHOLD") == 13);
}

TEST_CASE("env_overrides: a message that does not fit is cut, and says how long it is") {
    Env env = {{"SPILLWAY_POLICY", std::string(500, 'p')}};
    SimpleSettings s;
    char small[64];
    size_t needed = 0;
    CHECK_FALSE(apply_env_overrides(&s, from_map, &env, small, sizeof small, &needed));
    CHECK(strlen(small) == sizeof small - 1);
    CHECK(needed == judge(env).size());
    CHECK(needed > sizeof small);
}

TEST_CASE("env_overrides: a config's source names the file in the directory's message") {
    SimpleSettings s;
    s.source = "/etc/job.toml";
    s.spill_dir = "/data/spill";
    s.spill_dir_given = true;
    CHECK(judge({{"SPILLWAY_DIR", "spill"}}, &s) ==
          "/etc/job.toml: key 'spill.dir': expected an absolute directory path, got \"spill\"");
}
