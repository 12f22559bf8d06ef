// spill_dir_check.h — whether a directory may hold spill files: made if
// missing (0700, parents as needed), then refused if it is a symlink, not a
// directory, another user's, writable by others without the sticky bit,
// not writable, or RAM (tmpfs, ramfs) unless allowed. The one set of rules
// the engine (spilldir.h, open_spill_dir), the tool and the front run: the
// front checks a directory the job named at start-up, before the engine is
// loaded, so a bad one stops the job before it runs (front/start_verdict.h).
//
// Invariant: no allocation, no exception, no libstdc++; the reason is the
// line open_spill_dir has always given, word for word. An existing private
// directory costs one open and four calls on it (fstat, access, fstatfs,
// close), or three calls for a verdict alone; the mkdir of every prefix
// is made only when the first look fails, in the order that gives each
// failure its own reason.
#pragma once

#include <cstddef>

namespace spillway {

struct SpillDirCheck {
    int fd = -1;           // the directory, when it could be opened (without following a symlink)
    bool usable = false;
    bool on_tmpfs = false;
    bool foreign = false;  // another user's, or this uid may not reach it
    size_t why_needed = 0; // the reason's whole length (why[] holds at most cap - 1)
};

// Checks the directory `path` (NUL-terminated; trailing slashes are cut in
// place, and the string is cut and restored while its parents are made).
// The reason a refused directory is refused goes to why[0..cap).
void check_spill_dir(char *path, bool allow_tmpfs, SpillDirCheck *out, char *why, size_t cap);

// The same checks and reasons, for a caller that needs the verdict only
// (the front, before main): out->fd is always -1. An existing private
// directory costs lstat, access and statfs, nothing opened.
void check_spill_dir_verdict(char *path, bool allow_tmpfs, SpillDirCheck *out, char *why, size_t cap);

// The default spill directory, one per user so that no user's directory can
// stand in another's way: /var/tmp/spillway-<euid>. snprintf's count.
int default_spill_dir_text(char *out, size_t cap);

// Whether a filesystem of this statfs f_type is RAM (tmpfs, ramfs).
bool is_ram_filesystem(unsigned long f_type);

// false when the descriptor's filesystem is known not to be RAM (one
// fstatfs); true when it is, or fstatfs cannot tell. Why: a descriptor
// that is not on tmpfs names no /dev/shm directory, and this costs a fifth
// of the readlink of /proc/self/fd that resolving its path would (measured
// 0.45 against 2.5 us), on every openat and unlinkat of every program.
bool fd_may_be_on_ram_filesystem(int fd);

} // namespace spillway
