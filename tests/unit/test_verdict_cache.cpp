// test_verdict_cache.cpp — verdict_cache.cpp: a good config's verdict is
// found again only for the same bytes and the same engine; the cache is
// trusted only when private to this user; a damaged one only misses.
#include "threshold.h"
#include "verdict_cache.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace spillway;

namespace {

struct Scratch {
    std::string path;
    std::string cache; // the cache's directory, not made yet
    Scratch() {
        char tmpl[] = "/var/tmp/spillway-verdicttest.XXXXXX";
        path = mkdtemp(tmpl);
        cache = path + "/cache";
    }
    ~Scratch() { std::system(("rm -rf " + path).c_str()); }
    std::string file() const { return cache + "/" + kVerdictCacheName; }
};

EngineIdentity engine(uint64_t ino = 42) {
    EngineIdentity e;
    e.dev = 1;
    e.ino = ino;
    e.size = 1000;
    e.mtime_sec = 1700000000;
    e.mtime_nsec = 5;
    return e;
}

ConfigVerdict verdict(uint64_t threshold) {
    ConfigVerdict v;
    v.threshold = threshold;
    v.threshold_given = true;
    v.policy = Policy::memory;
    v.log_level = LogLevel::info;
    v.spill_dir_given = true;
    v.spill_dir = "/data/spill";
    v.log_file = "/var/log/job.log";
    v.stats_file = "";
    v.stats_run = "nightly/7";
    return v;
}

bool lookup(const Scratch &t, const EngineIdentity &e, const std::string &text, ConfigVerdict *out = nullptr) {
    ConfigVerdict v;
    void *storage = nullptr;
    bool hit = verdict_cache_lookup(t.cache.c_str(), e, text.data(), text.size(), out ? out : &v, &storage);
    CHECK(hit == (storage != nullptr));
    free(storage);
    return hit;
}

void store(const Scratch &t, const EngineIdentity &e, const std::string &text, uint64_t threshold = 2 << 20) {
    verdict_cache_store(t.cache.c_str(), e, text.data(), text.size(), verdict(threshold));
}

} // namespace

TEST_CASE("verdict_cache: a stored verdict is found for the same bytes and engine") {
    Scratch t;
    std::string text = "threshold = \"2MiB\"\n";
    CHECK_FALSE(lookup(t, engine(), text));
    store(t, engine(), text);
    struct stat st;
    REQUIRE(stat(t.cache.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(stat(t.file().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    ConfigVerdict v;
    void *storage = nullptr;
    REQUIRE(verdict_cache_lookup(t.cache.c_str(), engine(), text.data(), text.size(), &v, &storage));
    CHECK(v.threshold == 2u << 20);
    CHECK(v.threshold_given);
    CHECK(v.policy == Policy::memory);
    CHECK(v.log_level == LogLevel::info);
    CHECK(v.spill_dir_given);
    CHECK_FALSE(v.allow_tmpfs);
    CHECK(std::string(v.spill_dir) == "/data/spill");
    CHECK(std::string(v.log_file) == "/var/log/job.log");
    CHECK(std::string(v.stats_file).empty());
    CHECK(std::string(v.stats_run) == "nightly/7"); // the front writes it into a lazy process's line
    free(storage);
}

TEST_CASE("verdict_cache: other bytes or another engine miss") {
    Scratch t;
    std::string text = "threshold = \"2MiB\"\n";
    store(t, engine(), text);
    CHECK_FALSE(lookup(t, engine(), "threshold = \"3MiB\"\n")); // same length
    CHECK_FALSE(lookup(t, engine(), text + " "));
    CHECK_FALSE(lookup(t, engine(), text.substr(1)));
    CHECK_FALSE(lookup(t, engine(43), text));
    EngineIdentity touched = engine();
    touched.mtime_nsec++;
    CHECK_FALSE(lookup(t, touched, text));
    CHECK(lookup(t, engine(), text));
}

TEST_CASE("verdict_cache: two engines used in turn keep each other's verdicts") {
    Scratch t;
    for (int round = 0; round < 3; round++) {
        store(t, engine(7), "the same config");
        store(t, engine(8), "the same config");
        CHECK(lookup(t, engine(7), "the same config"));
        CHECK(lookup(t, engine(8), "the same config"));
    }
}

TEST_CASE("verdict_cache: the newest entries are kept, of any engine") {
    Scratch t;
    store(t, engine(7), "from an older engine");
    CHECK(lookup(t, engine(7), "from an older engine"));
    for (int i = 0; i < kVerdictCacheEntries + 3; i++) store(t, engine(), "config " + std::to_string(i), i);
    CHECK_FALSE(lookup(t, engine(7), "from an older engine")); // aged out
    for (int i = 0; i < kVerdictCacheEntries + 3; i++) {
        ConfigVerdict v;
        bool newest = i >= 3;
        CHECK(lookup(t, engine(), "config " + std::to_string(i), &v) == newest);
    }
    store(t, engine(), "config 5", 99); // again: replaced, not doubled
    ConfigVerdict v;
    void *storage = nullptr;
    std::string five = "config 5";
    REQUIRE(verdict_cache_lookup(t.cache.c_str(), engine(), five.data(), five.size(), &v, &storage));
    CHECK(v.threshold == 99);
    free(storage);
    CHECK(lookup(t, engine(), "config 3")); // still one of the 8
}

TEST_CASE("verdict_cache: a cache that is not private to this user is neither read nor written") {
    Scratch t;
    std::string text = "policy = \"disk\"\n";
    store(t, engine(), text);
    REQUIRE(lookup(t, engine(), text));

    chmod(t.file().c_str(), 0644); // readable by others: not ours alone any more
    CHECK_FALSE(lookup(t, engine(), text));
    chmod(t.file().c_str(), 0600);
    chmod(t.cache.c_str(), 0777); // others could have replaced the file
    CHECK_FALSE(lookup(t, engine(), text));
    store(t, engine(), "another");
    chmod(t.cache.c_str(), 0700);
    CHECK_FALSE(lookup(t, engine(), "another")); // was not written there
    CHECK(lookup(t, engine(), text));

    // A symlinked directory or file is not followed.
    std::string link = t.path + "/link";
    REQUIRE(symlink(t.cache.c_str(), link.c_str()) == 0);
    ConfigVerdict v;
    void *storage = nullptr;
    CHECK_FALSE(verdict_cache_lookup(link.c_str(), engine(), text.data(), text.size(), &v, &storage));
    std::string moved = t.cache + "/real";
    REQUIRE(rename(t.file().c_str(), moved.c_str()) == 0);
    REQUIRE(symlink(moved.c_str(), t.file().c_str()) == 0);
    CHECK_FALSE(lookup(t, engine(), text));

    if (geteuid() == 0) { // another owner (root can give it away)
        unlink(t.file().c_str());
        REQUIRE(rename(moved.c_str(), t.file().c_str()) == 0);
        REQUIRE(lookup(t, engine(), text));
        REQUIRE(chown(t.file().c_str(), 65534, 65534) == 0);
        CHECK_FALSE(lookup(t, engine(), text));
    }
}

TEST_CASE("verdict_cache: a damaged or truncated file misses, and is replaced by the next store") {
    Scratch t;
    std::string text = "threshold = \"8MiB\"\n";
    store(t, engine(), text); // the only entry: every cut reaches it
    struct stat st;
    REQUIRE(stat(t.file().c_str(), &st) == 0);
    for (off_t cut = st.st_size - 1; cut >= 0; cut -= 13) {
        REQUIRE(truncate(t.file().c_str(), cut) == 0);
        CHECK_FALSE(lookup(t, engine(), text));
    }
    int fd = open(t.file().c_str(), O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0);
    std::string junk(4096, '\xff');
    memcpy(junk.data(), "SPWVRD01", 8);
    REQUIRE(write(fd, junk.data(), junk.size()) == (ssize_t)junk.size());
    close(fd);
    CHECK_FALSE(lookup(t, engine(), text));
    store(t, engine(), text);
    CHECK(lookup(t, engine(), text));
}

TEST_CASE("verdict_cache: a config too large is never stored") {
    Scratch t;
    std::string big(kVerdictCacheMaxText + 1, '#');
    store(t, engine(), big);
    CHECK_FALSE(lookup(t, engine(), big));
}

TEST_CASE("verdict_cache: the engine's identity is its file's") {
    Scratch t;
    std::string f = t.path + "/engine.so";
    close(creat(f.c_str(), 0600));
    EngineIdentity a, b;
    REQUIRE(engine_identity(f.c_str(), &a));
    struct stat st;
    REQUIRE(stat(f.c_str(), &st) == 0);
    CHECK(a.ino == (uint64_t)st.st_ino);
    REQUIRE(truncate(f.c_str(), 10) == 0);
    REQUIRE(engine_identity(f.c_str(), &b));
    CHECK(b.size == 10);
    CHECK_FALSE(engine_identity((t.path + "/none").c_str(), &b));
}

namespace {
// A keep allocator as the front's (front/start_memory.h): a static area,
// never freed; counts what it gave.
alignas(8) char g_kept[4096];
size_t g_kept_used = 0;
void *keep_in_area(size_t n) {
    size_t rounded = (n + 7) & ~size_t(7);
    if (rounded > sizeof g_kept - g_kept_used) return nullptr;
    void *p = g_kept + g_kept_used;
    g_kept_used += rounded;
    return p;
}
bool in_area(const void *p) { return p >= (const void *)g_kept && p < (const void *)(g_kept + sizeof g_kept); }
} // namespace

TEST_CASE("verdict_cache: with a keep allocator the verdict is read into its memory, never malloc'd") {
    Scratch t;
    std::string text = "threshold = \"2MiB\"\n";
    store(t, engine(), text);
    ConfigVerdict v;
    void *storage = &v; // must come back nullptr: nothing for the caller to free
    g_kept_used = 0;
    REQUIRE(verdict_cache_lookup(t.cache.c_str(), engine(), text.data(), text.size(), &v, &storage, keep_in_area));
    CHECK(storage == nullptr);
    CHECK(g_kept_used > 0);
    CHECK(in_area(v.spill_dir));
    CHECK(in_area(v.log_file));
    CHECK(std::string(v.spill_dir) == "/data/spill");
    CHECK(std::string(v.log_file) == "/var/log/job.log");
    CHECK(v.threshold == 2u << 20);

    // A miss leaves nothing to free either (what was read stays in the area).
    std::string other = "threshold = \"3MiB\"\n";
    storage = &v;
    CHECK_FALSE(verdict_cache_lookup(t.cache.c_str(), engine(), other.data(), other.size(), &v, &storage,
                                     keep_in_area));
    CHECK(storage == nullptr);
    // An area too small to hold the cache file: a miss, never a crash.
    g_kept_used = sizeof g_kept;
    CHECK_FALSE(verdict_cache_lookup(t.cache.c_str(), engine(), text.data(), text.size(), &v, &storage,
                                     keep_in_area));
}

TEST_CASE("verdict_cache: a config that names no threshold is stored as such (derived at start-up)") {
    Scratch t;
    std::string text = "policy = \"memory\"\n";
    ConfigVerdict v = verdict(kDefaultThreshold);
    v.threshold_given = false;
    verdict_cache_store(t.cache.c_str(), engine(), text.data(), text.size(), v);
    ConfigVerdict got;
    REQUIRE(lookup(t, engine(), text, &got));
    CHECK_FALSE(got.threshold_given);
}

TEST_CASE("verdict_cache: stats.run is kept; without it an entry is laid out as an older build's") {
    Scratch t;
    std::string text = "[stats]\nfile = \"/tmp/s\"\n";
    ConfigVerdict v = verdict(2 << 20);
    v.stats_file = "/tmp/s";
    v.stats_run = "";
    verdict_cache_store(t.cache.c_str(), engine(), text.data(), text.size(), v);
    struct stat st;
    REQUIRE(stat(t.file().c_str(), &st) == 0);
    // The 8-byte magic, then the 88-byte head, the text and three strings
    // with their NULs, padded to 8: what a build before stats.run wrote
    // and reads, so builds of both ages keep each other's entries.
    size_t old_layout = 88 + text.size() + strlen(v.spill_dir) + 1 + strlen(v.log_file) + 1 + strlen(v.stats_file) + 1;
    CHECK((size_t)st.st_size == 8 + ((old_layout + 7) & ~size_t(7)));
    ConfigVerdict got;
    void *storage = nullptr;
    REQUIRE(verdict_cache_lookup(t.cache.c_str(), engine(), text.data(), text.size(), &got, &storage));
    CHECK(std::string(got.stats_run).empty());
    CHECK(std::string(got.stats_file) == "/tmp/s");
    free(storage);

    std::string tagged = text + "run = \"nightly\"\n";
    v.stats_run = "nightly";
    verdict_cache_store(t.cache.c_str(), engine(), tagged.data(), tagged.size(), v);
    REQUIRE(verdict_cache_lookup(t.cache.c_str(), engine(), tagged.data(), tagged.size(), &got, &storage));
    CHECK(std::string(got.stats_run) == "nightly");
    free(storage);
    CHECK(lookup(t, engine(), text)); // the older-layout entry, still read after the newer one
}
