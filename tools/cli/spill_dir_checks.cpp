// spill_dir_checks.cpp — see spill_dir_checks.h.
#include "spill_dir_checks.h"

#include <cerrno>
#include <cstring>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif
#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

namespace spillway::cli {

static bool on_ram_filesystem(const std::string &path) {
    struct statfs fs;
    return statfs(path.c_str(), &fs) == 0 && is_ram_filesystem((unsigned long)fs.f_type);
}

std::string filesystem_name(const std::string &path) {
    struct statfs fs;
    if (statfs(path.c_str(), &fs) != 0) return "unknown";
    switch ((unsigned long)fs.f_type) {
    case EXT4_SUPER_MAGIC: return "ext4"; // same magic as ext2/ext3
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
    case NFS_SUPER_MAGIC: return "nfs";
    case FUSE_SUPER_MAGIC: return "fuse";
    default: {
        char buf[32];
        snprintf(buf, sizeof buf, "fs 0x%lx", (unsigned long)fs.f_type);
        return buf;
    }
    }
}

SpillDir inspect_spill_dir(const Settings &s, std::string &note) {
    struct stat st;
    if (lstat(s.spill_dir.c_str(), &st) == 0) {
        // It exists, so open_spill_dir creates nothing: every mkdir is EEXIST.
        SpillDir d = open_spill_dir(s.spill_dir, s.allow_tmpfs);
        if (d.fd >= 0) close(d.fd);
        d.fd = -1;
        return d;
    }
    SpillDir d;
    d.path = s.spill_dir;
    std::string ancestor = s.spill_dir, missing = s.spill_dir;
    while (ancestor.size() > 1) {
        size_t slash = ancestor.find_last_of('/');
        missing = ancestor;
        ancestor = slash == 0 ? "/" : ancestor.substr(0, slash);
        if (stat(ancestor.c_str(), &st) == 0) break;
    }
    if (!S_ISDIR(st.st_mode)) {
        d.why_unusable = "cannot create " + missing + " (" + ancestor +
                         " is not a directory); create it yourself (mkdir -m 0700) or name another directory";
        return d;
    }
    if (access(ancestor.c_str(), W_OK | X_OK) != 0) {
        d.foreign = errno == EACCES || errno == EPERM; // as the shim judges it
        d.why_unusable = "cannot create " + missing + " (" + strerror(errno) +
                         "); create it yourself (mkdir -m 0700) or name another directory";
        return d;
    }
    if (on_ram_filesystem(ancestor)) {
        d.on_tmpfs = true;
        if (!s.allow_tmpfs) {
            d.why_unusable = d.path + " would be on tmpfs/ramfs, which is RAM: spilling there cannot "
                                      "survive a memory limit; use a disk directory or set "
                                      "spill.allow_tmpfs = true";
            return d;
        }
    }
    note = s.spill_dir + " does not exist yet; the shim creates it (mode 0700) at start-up";
    d.usable = true;
    return d;
}

bool spill_dir_is_fatal(const Settings &s, const SpillDir &d) {
    if (spill_dir_falls_back(d, s.spill_dir_given)) return false; // the shim uses a private one
    return spill_dir_refusal_is_fatal(d, policy_needs_disk(s.policy));
}

} // namespace spillway::cli
