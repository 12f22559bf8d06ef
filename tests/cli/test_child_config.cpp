// test_child_config.cpp — child_config.cpp: the child's config loads to the
// user's settings plus a stats file, keeping the user's line numbers.
#include "child_config.h"
#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace spillway;
using namespace spillway::cli;

namespace {

std::string read(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

Settings load(const std::string &text, const std::string &source) {
    Settings s;
    auto err = parse_config_text(text, source, s);
    INFO(err.value_or(""));
    REQUIRE_FALSE(err);
    return s;
}

// describe_settings without its first line (the source) or the stats file.
std::string essence(Settings s) {
    s.stats_file.clear();
    std::string d = describe_settings(s);
    return d.substr(d.find('\n') + 1);
}

bool exists(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

} // namespace

TEST_CASE("no stats file configured: the user's text with [stats] appended") {
    TempDir dir;
    std::string user = dir.path + "/user.toml";
    std::string text = "threshold = \"2MiB\"\n\n[[rule]]\nmatch = \"scatter*\"\npolicy = \"memory\"\n";
    std::ofstream(user) << text;
    Settings settings = load(text, user);
    ChildConfig c = compose_child_config(settings, user, text);
    REQUIRE(c.error.empty());
    CHECK(c.stats_are_ours);
    CHECK(c.stats_pattern == c.temp_dir + "/stats.jsonl");
    std::string child_text = read(c.config_path);
    CHECK(child_text.rfind(text, 0) == 0); // unchanged, line for line
    CHECK(child_text == c.text);           // what the marker names
    Settings child = load(child_text, c.config_path);
    CHECK(child.stats_file == c.stats_pattern);
    CHECK(essence(child) == essence(settings));
    CHECK(child.rules.at(0).line == settings.rules.at(0).line);
    remove_child_config(c);
    CHECK_FALSE(exists(c.temp_dir));
}

TEST_CASE("an empty [stats] table cannot be extended: the effective settings instead") {
    TempDir dir;
    std::string user = dir.path + "/user.toml";
    std::string text = "policy = \"disk\"\n[stats]\n[spill]\ndir = \"/var/tmp/elsewhere\"\n";
    std::ofstream(user) << text;
    Settings settings = load(text, user);
    ChildConfig c = compose_child_config(settings, user, text);
    REQUIRE(c.error.empty());
    Settings child = load(read(c.config_path), c.config_path);
    CHECK(child.stats_file == c.stats_pattern);
    CHECK(essence(child) == essence(settings));
    remove_child_config(c);
}

TEST_CASE("no user config: only the stats file") {
    Settings defaults;
    ChildConfig c = compose_child_config(defaults, "", "");
    REQUIRE(c.error.empty());
    Settings child = load(read(c.config_path), c.config_path);
    CHECK(child.stats_file == c.stats_pattern);
    CHECK(essence(child) == essence(defaults));
    remove_child_config(c);
}

TEST_CASE("a configured stats file: the user's config as it is, nothing temporary") {
    Settings settings;
    settings.stats_file = "/var/tmp/mine-%p.jsonl";
    ChildConfig c = compose_child_config(settings, "/etc/spillway/job.toml", "threshold = \"2MiB\"\n");
    CHECK(c.error.empty());
    CHECK(c.config_path == "/etc/spillway/job.toml");
    CHECK(c.stats_pattern == "/var/tmp/mine-%p.jsonl");
    CHECK(c.temp_dir.empty());
    CHECK_FALSE(c.stats_are_ours);
    CHECK(c.text == "threshold = \"2MiB\"\n"); // the text judged, for the marker
}
