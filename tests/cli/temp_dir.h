// temp_dir.h — a private scratch directory on disk for one unit test
// (under SPILLWAY_TEST_TMP, else /var/tmp: tests/meson.build), removed with
// everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <string>

struct TempDir {
    std::string path;
    TempDir() {
        const char *base = getenv("SPILLWAY_TEST_TMP");
        std::string templ = std::string(base && *base ? base : "/var/tmp") + "/spillway-cli-unit.XXXXXX";
        path = mkdtemp(templ.data());
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
};
