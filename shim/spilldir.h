// spilldir.h — the spill directory: created private, checked, held open.
//
// Invariants: the directory is opened once, by fd, without following a
// symlink; every spill file is created relative to that fd (O_TMPFILE when
// the filesystem allows, else a random name unlinked at once), mode 0600.
// A directory on tmpfs/ramfs is RAM and is refused unless forced.
#pragma once

#include <string>

namespace spillway {

struct SpillDir {
    int fd = -1;
    std::string path;
    bool usable = false;
    bool on_tmpfs = false;
    std::string why_unusable; // one line, for the warning
};

// Creates (0700, parents as needed) and checks the directory.
SpillDir open_spill_dir(const std::string &path, bool allow_tmpfs);

// A new unnamed 0600 file in dir; returns fd or -errno.
int create_unnamed_file(const SpillDir &dir);

// Random lower-case hex of n characters (n <= 64), from getrandom.
std::string random_hex(int n);

// Exported and redirected files carry these prefixes; prepare_dir removes
// only files that start with one of them.
constexpr const char *kExportPrefix = "spillway-export-";
constexpr const char *kShmPrefix = "spillway-shm-";

} // namespace spillway
