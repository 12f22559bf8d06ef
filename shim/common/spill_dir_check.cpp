// spill_dir_check.cpp — see spill_dir_check.h.
#include "spill_dir_check.h"

#include "fd_policy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace spillway {

namespace {

// Permission denied on the way to a directory: it is another user's (most
// often inherited by a process that changed uid), not a typo to fix.
bool denied(int err) { return err == EACCES || err == EPERM; }

void refuse(SpillDirCheck *d, int length) { d->why_needed = length < 0 ? 0 : (size_t)length; }

// mkdir -p with 0700 for what is created; existing parents are left alone.
bool make_dirs(char *path, SpillDirCheck *d, char *why, size_t cap) {
    size_t len = strlen(path);
    for (size_t i = 1; i <= len; i++) {
        if (i != len && path[i] != '/') continue;
        char cut = path[i];
        path[i] = 0;
        int err = mkdir(path, 0700) != 0 && errno != EEXIST ? errno : 0;
        if (err) {
            d->foreign = denied(err);
            int n = d->foreign ? snprintf(why, cap, "cannot create %s (%s) as uid %u; create it yourself (mkdir -m 0700) or name another directory", path, strerror(err),
                                          (unsigned)geteuid())
                               : snprintf(why, cap, "cannot create %s (%s); create it yourself (mkdir -m 0700) or name another directory", path, strerror(err));
            path[i] = cut;
            refuse(d, n);
            return false;
        }
        path[i] = cut;
    }
    return true;
}

// The checks on what lstat (or, on the fast path, fstat of the opened
// directory) says: a real directory, this user's, not open to others.
bool owner_and_mode(const char *path, const struct stat &st, SpillDirCheck *d, char *why, size_t cap) {
    if (S_ISLNK(st.st_mode)) {
        refuse(d, snprintf(why, cap, "%s is a symlink; point spill.dir at a real directory", path));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        refuse(d, snprintf(why, cap, "%s is not a directory; name a directory", path));
        return false;
    }
    if (st.st_uid != geteuid()) {
        d->foreign = true;
        refuse(d, snprintf(why, cap, "%s is owned by uid %u, not by this user (uid %u); use a directory of your own",
                           path, (unsigned)st.st_uid, (unsigned)geteuid()));
        return false;
    }
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        refuse(d, snprintf(why, cap, "%s is writable by others without the sticky bit; chmod 0700 it", path));
        return false;
    }
    return true;
}

// Writable (unless the caller asked already), and on a disk (or allowed);
// asked of d->fd when it is open, else of the path.
void writable_and_on_disk(const char *path, bool allow_tmpfs, SpillDirCheck *d, char *why, size_t cap,
                          bool ask_writable = true) {
    if (ask_writable && access(path, W_OK) != 0) {
        refuse(d, snprintf(why, cap, "%s is not writable (%s); make it writable (chmod u+w) or name another directory", path, strerror(errno)));
        return;
    }
    struct statfs fs;
    int got = d->fd >= 0 ? fstatfs(d->fd, &fs) : statfs(path, &fs);
    if (got == 0 && is_ram_filesystem((unsigned long)fs.f_type)) {
        d->on_tmpfs = true;
        if (!allow_tmpfs) {
            refuse(d, snprintf(why, cap,
                               "%s is on tmpfs/ramfs, which is RAM: spilling there cannot survive a memory "
                               "limit; use a disk directory or set spill.allow_tmpfs = true",
                               path));
            return;
        }
    }
    d->usable = true;
}

// Missing or refused at the first look: each step in turn, for its own
// reason (mkdir of every prefix, lstat, the checks, open).
void check_spill_dir_slow(char *path, bool allow_tmpfs, SpillDirCheck *d, char *why, size_t cap);

} // namespace

// snprintf's way (the length it needs; cut to fit cap), by hand: the
// front asks it before main when a config is named (verdict_cache.h), and
// printf's first call faulted in and bound its formatting code there.
int default_spill_dir_text(char *out, size_t cap) {
    static const char kPrefix[] = "/var/tmp/spillway-";
    char text[sizeof kPrefix + 10], digits[10];
    int n = 0;
    unsigned uid = (unsigned)geteuid();
    do digits[n++] = (char)('0' + uid % 10);
    while ((uid /= 10) != 0);
    size_t len = sizeof kPrefix - 1;
    memcpy(text, kPrefix, len);
    while (n) text[len++] = digits[--n];
    if (cap) {
        size_t k = len < cap ? len : cap - 1;
        memcpy(out, text, k);
        out[k] = 0;
    }
    return (int)len;
}

bool is_ram_filesystem(unsigned long f_type) { return f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC; }

bool fd_may_be_on_ram_filesystem(int fd) {
    struct statfs fs;
    return fstatfs(fd, &fs) != 0 || is_ram_filesystem((unsigned long)fs.f_type);
}

void check_spill_dir(char *path, bool allow_tmpfs, SpillDirCheck *d, char *why, size_t cap) {
    *d = SpillDirCheck{};
    if (cap) why[0] = 0;
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') path[--len] = 0;
    const int kOpenFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    struct stat st;

    // The directory exists and is a directory, not a symlink: every mkdir
    // below would be EEXIST and lstat would say what fstat says.
    int fd = move_high(open(path, kOpenFlags));
    if (fd >= 0 && fstat(fd, &st) == 0) {
        if (!owner_and_mode(path, st, d, why, cap)) {
            close(fd);
            return;
        }
        d->fd = fd;
        writable_and_on_disk(path, allow_tmpfs, d, why, cap);
        return;
    }
    if (fd >= 0) close(fd);

    // Missing or refused: each step in turn, for its own reason.
    check_spill_dir_slow(path, allow_tmpfs, d, why, cap);
}

void check_spill_dir_verdict(char *path, bool allow_tmpfs, SpillDirCheck *d, char *why, size_t cap) {
    *d = SpillDirCheck{};
    if (cap) why[0] = 0;
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') path[--len] = 0;
    // A directory of this user's, private, that the engine can open and
    // create in: what lstat says is what fstat of it would. Anything else
    // takes check_spill_dir's own steps, for its own reason.
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        access(path, R_OK | W_OK | X_OK) == 0) {
        if (owner_and_mode(path, st, d, why, cap)) writable_and_on_disk(path, allow_tmpfs, d, why, cap, false);
        return;
    }
    check_spill_dir(path, allow_tmpfs, d, why, cap);
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
}

namespace {

void check_spill_dir_slow(char *path, bool allow_tmpfs, SpillDirCheck *d, char *why, size_t cap) {
    const int kOpenFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    struct stat st;
    if (!make_dirs(path, d, why, cap)) return;
    if (lstat(path, &st) != 0) {
        int err = errno;
        d->foreign = denied(err);
        refuse(d, snprintf(why, cap, "cannot stat %s (%s); check the permissions of its parent directories, or name another directory", path, strerror(err)));
        return;
    }
    if (!owner_and_mode(path, st, d, why, cap)) return;
    d->fd = move_high(open(path, kOpenFlags));
    if (d->fd < 0) {
        refuse(d, snprintf(why, cap, "cannot open %s (%s); check its permissions, or name another directory", path, strerror(errno)));
        return;
    }
    writable_and_on_disk(path, allow_tmpfs, d, why, cap);
}

} // namespace

} // namespace spillway
