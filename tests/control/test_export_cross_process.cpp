// test_export_cross_process.cpp — proves an exported region can be handed to
// another process by its path alone: the peer (control_helper, a separate
// program) maps it with spillway_map and reads the exporter's bytes; the
// peer's writes are visible to the exporter and the exporter's later writes
// to the peer (one page cache, no copy); the peer's release drops the cache
// both see; and the file outlives the exporter's region, so the peer keeps
// the data after the exporter freed it. Runs with SPILLWAY_POLICY=disk.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace control_test;

static std::string cmd(const char *verb, size_t off, size_t len, uint64_t seed) {
    return std::string(verb) + " " + std::to_string(off) + " " + std::to_string(len) + " " +
           std::to_string(seed);
}

TEST_CASE("an exported region is shared with another process, writes visible both ways") {
    empty_spill_dir();
    const size_t size = 64 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    REQUIRE(p != nullptr);
    fill(p, 0, size, 1);
    char path[4096];
    REQUIRE(spillway_export(p, path, sizeof path) == 0);

    Helper peer = spawn_helper({"peer", path, std::to_string(size)});
    REQUIRE(peer.read_line() == "mapped backing=1");
    CHECK(peer.send("live") == "1");
    // The exporter's bytes, as written before the export.
    CHECK(peer.send(cmd("expect", 0, size, 1)) == "ok");
    // Peer to exporter.
    CHECK(peer.send(cmd("fill", 0, 4 * MiB, 2)) == "done");
    CHECK(first_mismatch(p, 0, 4 * MiB, 2) == SIZE_MAX);
    // Exporter to peer, after the peer mapped.
    fill(p, 8 * MiB, 4 * MiB, 3);
    CHECK(peer.send(cmd("expect", 8 * MiB, 4 * MiB, 3)) == "ok");
    // The peer's release drops the cache the exporter sees too, once the
    // exporter has released its own page-table entries as well.
    CHECK(peer.send("release") == "0");
    CHECK(spillway_release_page_cache(p) == 0);
    CHECK(spillway_residency(p, size) < (long)(size / 20));
    CHECK(first_mismatch(p, 0, 4 * MiB, 2) == SIZE_MAX);
    CHECK(first_mismatch(p, 8 * MiB, 4 * MiB, 3) == SIZE_MAX);
    // The exporter lets go of its region; the peer's data stays.
    free(p);
    CHECK(peer.send(cmd("expect", 8 * MiB, 4 * MiB, 3)) == "ok");
    CHECK(peer.send(cmd("expect", 12 * MiB, size - 12 * MiB, 1)) == "ok");
    CHECK(peer.wait() == 0);
    unlink(path);
}

TEST_CASE("another process refuses to map an exported file with the wrong size") {
    empty_spill_dir();
    char *p = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_DISK);
    char path[4096];
    REQUIRE(spillway_export(p, path, sizeof path) == 0);
    int status = -1;
    std::string out = run_helper({"peer", path, std::to_string(8 * MiB)}, &status);
    CHECK(out == "error errno=22\n"); // EINVAL
    CHECK(status == 1);
    free(p);
    unlink(path);
}
