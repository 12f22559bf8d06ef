// spilldir.h — the spill directory: created private, checked, held open.
//
// Invariants: the directory is opened once, by fd, without following a
// symlink; every spill file is created relative to that fd (O_TMPFILE when
// the filesystem allows, else a random name unlinked at once), mode 0600.
// A directory on tmpfs/ramfs is RAM and is refused unless forced. A directory
// that is not this user's (another owner, a symlink, writable by others) is
// refused; when it was the default, or belongs to another user (inherited
// across a uid change), the shim spills to a fresh private directory
// instead, so that nobody can stop another user's job by creating a path.
#pragma once

#include "spill_dir_check.h"

#include <string>
#include <vector>

namespace spillway {

struct SpillDir {
    int fd = -1;
    std::string path;
    bool usable = false;
    bool on_tmpfs = false;
    bool foreign = false;     // it belongs to another user, or this uid may not reach it
    std::string why_unusable; // one line, for the warning
};

// Creates (0700, parents as needed) and checks the directory, by the rules
// of spill_dir_check.h (which also has is_ram_filesystem, the one list of
// RAM filesystems).
SpillDir open_spill_dir(const std::string &path, bool allow_tmpfs);

// Whether a refused directory is replaced by a private one (instead of
// stopping the job, or running it on anonymous memory): the default was
// refused, or the directory is another user's. Not for tmpfs: the private
// directory would be RAM as well.
bool spill_dir_falls_back(const SpillDir &d, bool dir_given);

// A fresh private directory (mkdtemp, 0700) for this process:
// /var/tmp/spillway-<euid>.XXXXXX, else the same under $TMPDIR.
SpillDir open_private_spill_dir(bool allow_tmpfs);
constexpr const char *kPrivateSpillBase = "/var/tmp";

// A new unnamed 0600 file in the directory open as dir_fd; fd or -errno.
int create_unnamed_file(int dir_fd);

// Asks the filesystem to write the empty file fd in place (FS_NOCOW_FL),
// where it would copy on write: btrfs, or an overlayfs whose upper layer
// may be btrfs. Call it before the file is reserved (the flag only takes
// on an empty file). Why: btrfs reserves fresh data space for every page
// written again after writeback in a copy-on-write file, so fallocate's
// reservation does not hold: on a full filesystem that write raises
// SIGBUS; and random rewrites of a mapped file split its extents, which
// made xz -9 under the shim 5x slower or worse (docs/filesystems.md).
// 0 when done or not needed (ext4, XFS, ...); an errno when btrfs refused.
int keep_writes_in_place(int fd);

// Random lower-case hex of n characters (n <= 64), from getrandom or
// /dev/urandom; "" when neither answers (callers then refuse to name).
std::string random_hex(int n);

// Exported and redirected files carry these prefixes; preparing a directory
// removes only files that start with one of them. kTmpPrefix names a spill
// file whose unlink a crash interrupted (filesystems without O_TMPFILE).
constexpr const char *kExportPrefix = "spillway-export-";
constexpr const char *kShmPrefix = "spillway-shm-";
constexpr const char *kTmpPrefix = ".spillway-tmp-";
// Environment marker: an ancestor already prepared the directory this run.
constexpr const char *kPreparedMarker = "SPILLWAY_PREPARED";

bool is_spillway_file_name(const std::string &name);

// Whether a refused directory must stop the job at start-up: it would run
// unprotected. A tmpfs directory is only a warning (it still works, as RAM);
// policies that never touch the disk do not need one.
bool spill_dir_refusal_is_fatal(const SpillDir &d, bool policy_needs_disk);

struct StaleRemoval {
    int removed = 0;
    std::vector<std::string> kept; // "name: why"
};

// Removes stale spillway files from the directory: regular files owned by
// this user with one of the prefixes above, except exports whose exporting
// process (the pid in the name) is still alive: another job sharing the
// directory may still be handing them out. Never age-based.
StaleRemoval remove_stale_files(int dir_fd);

} // namespace spillway
