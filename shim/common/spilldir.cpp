// spilldir.cpp — see spilldir.h.
#include "spilldir.h"

#include "fd_policy.h"
#include "spill_dir_check.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <cstring>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace spillway {

SpillDir open_spill_dir(const std::string &path, bool allow_tmpfs) {
    // The rules are spill_dir_check.cpp's (the front runs them too).
    SpillDir d;
    std::string work = path;
    SpillDirCheck check;
    std::string why(work.size() + 256, '\0'); // the longest reason: the path, an errno text, two uids
    check_spill_dir(work.data(), allow_tmpfs, &check, why.data(), why.size());
    if (check.why_needed >= why.size()) { // cannot happen with the room above; never cut a reason
        why.assign(check.why_needed + 1, '\0');
        work = path;
        if (check.fd >= 0) close(check.fd);
        check_spill_dir(work.data(), allow_tmpfs, &check, why.data(), why.size());
    }
    d.path = work.c_str(); // without its trailing slashes
    d.fd = check.fd;
    d.usable = check.usable;
    d.on_tmpfs = check.on_tmpfs;
    d.foreign = check.foreign;
    why.resize(check.why_needed < why.size() ? check.why_needed : why.size() - 1);
    d.why_unusable = std::move(why);
    return d;
}

bool is_spillway_file_name(const std::string &name) {
    for (const char *prefix : {kExportPrefix, kShmPrefix, kTmpPrefix})
        if (name.rfind(prefix, 0) == 0) return true;
    return false;
}

bool spill_dir_falls_back(const SpillDir &d, bool dir_given) {
    return !d.usable && !d.on_tmpfs && (!dir_given || d.foreign);
}

SpillDir open_private_spill_dir(bool allow_tmpfs) {
    std::string name = "/spillway-" + std::to_string(geteuid()) + ".XXXXXX";
    SpillDir last;
    std::string tried; // every base mkdtemp failed in, with its reason
    const char *tmpdir = getenv("TMPDIR");
    for (const char *base : {kPrivateSpillBase, tmpdir}) {
        if (!base || base[0] != '/' || (base != kPrivateSpillBase && strcmp(base, kPrivateSpillBase) == 0))
            continue;
        std::string path = base + name;
        if (!mkdtemp(path.data())) { // mode 0700
            tried += (tried.empty() ? "" : " nor in ") + std::string(base) + " (" + strerror(errno) + ")";
            last = SpillDir();
            last.path = base;
            last.why_unusable = "cannot create a private directory in " + tried;
            continue;
        }
        last = open_spill_dir(path, allow_tmpfs);
        if (last.usable) return last;
        if (last.fd >= 0) close(last.fd);
        last.fd = -1;
        rmdir(path.c_str());
    }
    return last;
}

bool spill_dir_refusal_is_fatal(const SpillDir &d, bool policy_needs_disk) {
    return !d.usable && !d.on_tmpfs && policy_needs_disk;
}

// The exporter of "spillway-export-<pid>-<hex>" is alive (and not us).
static bool exporter_alive(const std::string &name) {
    if (name.rfind(kExportPrefix, 0) != 0) return false;
    long pid = strtol(name.c_str() + strlen(kExportPrefix), nullptr, 10);
    if (pid <= 0 || pid == getpid()) return false;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

StaleRemoval remove_stale_files(int dir_fd) {
    StaleRemoval out;
    int scan_fd = dup(dir_fd);
    DIR *scan = scan_fd >= 0 ? fdopendir(scan_fd) : nullptr;
    if (!scan) {
        if (scan_fd >= 0) close(scan_fd);
        out.kept.push_back(std::string(".: cannot list (") + strerror(errno) + ")");
        return out;
    }
    rewinddir(scan);
    while (struct dirent *e = readdir(scan)) {
        std::string name = e->d_name;
        if (!is_spillway_file_name(name)) continue;
        struct stat st;
        if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue; // not ours to judge
        if (exporter_alive(name)) {
            out.kept.push_back(name + ": its exporting process is still running");
            continue;
        }
        if (unlinkat(dir_fd, name.c_str(), 0) == 0) out.removed++;
        else out.kept.push_back(name + ": " + strerror(errno));
    }
    closedir(scan);
    return out;
}

std::string random_hex(int n) {
    unsigned char bytes[32];
    size_t want = (size_t)(n + 1) / 2;
    if (want > sizeof bytes) want = sizeof bytes;
    size_t got = 0;
    while (got < want) {
        ssize_t r = getrandom(bytes + got, want - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got < want) { // no getrandom (old kernel, seccomp): the device, or nothing
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        while (fd >= 0 && got < want) {
            ssize_t r = read(fd, bytes + got, want - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (fd >= 0) close(fd);
    }
    if (got < want) return ""; // never a guessable name
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < want && (int)out.size() < n; i++) {
        out += digits[bytes[i] >> 4];
        if ((int)out.size() < n) out += digits[bytes[i] & 15];
    }
    return out;
}

int create_unnamed_file(int dir_fd) {
    if (dir_fd < 0) return -EBADF;
    int fd = move_high(openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (fd >= 0) return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -errno;
    // No O_TMPFILE here: a random name, unlinked at once, so that a crash
    // between the two calls is the only way a file can be left behind.
    for (int attempt = 0; attempt < 8; attempt++) {
        std::string suffix = random_hex(24);
        if (suffix.empty()) return -EIO;
        std::string name = kTmpPrefix + suffix;
        fd = move_high(openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (fd >= 0) {
            unlinkat(dir_fd, name.c_str(), 0);
            return fd;
        }
        if (errno != EEXIST) return -errno;
    }
    return -EEXIST;
}

int keep_writes_in_place(int fd) {
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return 0; // not ours to judge: the reservation says what it can
    bool btrfs = (unsigned long)fs.f_type == BTRFS_SUPER_MAGIC;
    if (!btrfs && (unsigned long)fs.f_type != OVERLAYFS_SUPER_MAGIC) return 0; // writes in place already
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return btrfs ? errno : 0;
    if (flags & FS_NOCOW_FL) return 0; // inherited from the directory
    flags |= FS_NOCOW_FL;
    if (ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) return btrfs ? errno : 0; // an overlay's upper layer without the flag: nothing to do
    return 0;
}

} // namespace spillway
