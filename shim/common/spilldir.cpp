// spilldir.cpp — see spilldir.h.
#include "spilldir.h"

#include "fd_policy.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <cstring>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace spillway {

// Permission denied on the way to a directory: it is another user's (most
// often inherited by a process that changed uid), not a typo to fix.
static bool denied(int err) { return err == EACCES || err == EPERM; }

// The end of every reason a missing directory could not be made.
static constexpr char kCreateRemedy[] = "; create it yourself (mkdir -m 0700) or name another directory";

static bool make_dirs(const std::string &path, std::string &why, bool &foreign) {
    // mkdir -p with 0700 for what we create; existing parents are left alone.
    for (size_t i = 1; i <= path.size(); i++) {
        if (i != path.size() && path[i] != '/') continue;
        std::string prefix = path.substr(0, i);
        if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
            foreign = denied(errno);
            why = "cannot create " + prefix + " (" + strerror(errno) + ")" +
                  (foreign ? " as uid " + std::to_string(geteuid()) : "") + kCreateRemedy;
            return false;
        }
    }
    return true;
}

bool is_ram_filesystem(unsigned long f_type) { return f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC; }

SpillDir open_spill_dir(const std::string &path, bool allow_tmpfs) {
    SpillDir d;
    d.path = path;
    while (d.path.size() > 1 && d.path.back() == '/') d.path.pop_back();
    if (!make_dirs(d.path, d.why_unusable, d.foreign)) return d;
    struct stat st;
    if (lstat(d.path.c_str(), &st) != 0) {
        d.foreign = denied(errno);
        d.why_unusable = "cannot stat " + d.path + " (" + strerror(errno) +
                         "); check the permissions of its parent directories, or name another directory";
        return d;
    }
    if (S_ISLNK(st.st_mode)) {
        d.why_unusable = d.path + " is a symlink; point spill.dir at a real directory";
        return d;
    }
    if (!S_ISDIR(st.st_mode)) {
        d.why_unusable = d.path + " is not a directory; name a directory";
        return d;
    }
    if (st.st_uid != geteuid()) {
        d.foreign = true;
        d.why_unusable = d.path + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by this user (uid " + std::to_string(geteuid()) +
                         "); use a directory of your own";
        return d;
    }
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        d.why_unusable = d.path + " is writable by others without the sticky bit; chmod 0700 it";
        return d;
    }
    d.fd = above_stdio(open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (d.fd < 0) {
        d.why_unusable = "cannot open " + d.path + " (" + strerror(errno) +
                         "); check its permissions, or name another directory";
        return d;
    }
    if (access(d.path.c_str(), W_OK) != 0) {
        d.why_unusable = d.path + " is not writable (" + strerror(errno) +
                         "); make it writable (chmod u+w) or name another directory";
        return d;
    }
    struct statfs fs;
    if (fstatfs(d.fd, &fs) == 0 && is_ram_filesystem((unsigned long)fs.f_type)) {
        d.on_tmpfs = true;
        if (!allow_tmpfs) {
            d.why_unusable = d.path + " is on tmpfs/ramfs, which is RAM: spilling there cannot "
                             "survive a memory limit; use a disk directory or set "
                             "spill.allow_tmpfs = true";
            return d;
        }
    }
    d.usable = true;
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
    int fd = above_stdio(openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (fd >= 0) return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -errno;
    // No O_TMPFILE here: a random name, unlinked at once, so that a crash
    // between the two calls is the only way a file can be left behind.
    for (int attempt = 0; attempt < 8; attempt++) {
        std::string suffix = random_hex(24);
        if (suffix.empty()) return -EIO;
        std::string name = kTmpPrefix + suffix;
        fd = above_stdio(openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (fd >= 0) {
            unlinkat(dir_fd, name.c_str(), 0);
            return fd;
        }
        if (errno != EEXIST) return -errno;
    }
    return -EEXIST;
}

} // namespace spillway
