// temp_dir.h — a private scratch directory on disk for one unit test,
// removed with everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <string>

struct TempDir {
    std::string path;
    TempDir() {
        char templ[] = "/var/tmp/spillway-cli-unit.XXXXXX";
        path = mkdtemp(templ);
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
};
