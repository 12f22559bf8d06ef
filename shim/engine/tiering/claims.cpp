// claims.cpp — see claims.h.
#include "tiering/claims.h"

#include "fd_policy.h"
#include "proc_stat.h"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

std::vector<Claim> parse_claims(const std::string &text) {
    std::vector<Claim> out;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        Claim c;
        unsigned long long st = 0, bytes = 0;
        char extra;
        if (sscanf(line.c_str(), "%d %llu %llu %c", &c.pid, &st, &bytes, &extra) == 3 && c.pid > 0) {
            c.start_time = st;
            c.bytes = bytes;
            out.push_back(c);
        }
        at = end + 1;
    }
    return out;
}

std::string format_claims(const std::vector<Claim> &claims) {
    std::string out;
    char line[96];
    for (const Claim &c : claims) {
        snprintf(line, sizeof line, "%d %llu %llu\n", c.pid, (unsigned long long)c.start_time,
                 (unsigned long long)c.bytes);
        out += line;
    }
    return out;
}

uint64_t process_start_time(int pid) {
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    const char *p = proc_stat_fields(path, buf, sizeof buf); // field 3, the state, on
    if (!p || *p == 'Z') return 0; // a zombie holds nothing any more
    int field = 3;
    for (; *p && field < 22; p++) // field 22: the start time
        if (*p == ' ') field++;
    return field == 22 ? strtoull(p, nullptr, 10) : 0;
}

std::string claims_file_name(const std::string &cgroup) {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (unsigned char c : cgroup) h = (h ^ c) * 1099511628211ull;
    char name[64];
    snprintf(name, sizeof name, ".spillway-claims-%016" PRIx64, h);
    return name;
}

namespace {

// The descriptor of the claims file while this process has it open (one
// user: the tiering thread). A fork child closes its copy: a descriptor
// inherited in the middle of a claim would otherwise share the lock's open
// file and keep it held for as long as the child lives.
std::atomic<int> g_open_fd{-1};

// How long to wait for another process's claim before giving up on this
// promotion (a stuck holder must not stop this process's controller).
constexpr int kLockWaitMs = 1000;

bool lock_within(int fd, int wait_ms) {
    for (int waited = 0;; waited++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
        if (errno != EWOULDBLOCK && errno != EINTR) return false;
        if (waited >= wait_ms) return false;
        usleep(1000);
    }
}

// The locked file; unlocked and closed on destruction.
struct LockedFile {
    int fd = -1;
    int dir = -1;
    std::string name;
    LockedFile(int dir_fd, const std::string &cgroup) : dir(dir_fd), name(claims_file_name(cgroup)) {
        if (dir_fd < 0) return;
        // The last claimant unlinks an empty file (the spill directory must
        // hold nothing once a job is over): a file locked after that is
        // stale, so lock, then check it is still the one the name points at.
        for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
            fd = move_high(openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
            if (fd < 0) return;
            g_open_fd.store(fd);
            if (!lock_within(fd, kLockWaitMs)) {
                release();
                return;
            }
            struct stat held, named;
            if (fstat(fd, &held) == 0 && fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
                held.st_ino == named.st_ino && held.st_dev == named.st_dev)
                return;
            release();
        }
    }
    ~LockedFile() { release(); }
    void release() {
        if (fd < 0) return;
        // Explicitly: a fork child may hold a copy of this descriptor, and
        // the lock of a shared open file outlives one close.
        flock(fd, LOCK_UN);
        g_open_fd.store(-1);
        close(fd);
        fd = -1;
    }
    std::string read_all() const {
        std::string text;
        char buf[4096];
        off_t off = 0;
        for (;;) {
            ssize_t n = pread(fd, buf, sizeof buf, off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            text.append(buf, (size_t)n);
            off += n;
            if (text.size() > (1u << 20)) break; // a sane file is a few lines
        }
        return text;
    }
    void write_all(const std::string &text) const {
        if (text.empty()) { // nobody claims anything: leave no file behind
            unlinkat(dir, name.c_str(), 0);
            return;
        }
        if (ftruncate(fd, 0) != 0) return;
        ssize_t ignored = pwrite(fd, text.data(), text.size(), 0);
        (void)ignored;
    }
};

// The live claims of other processes (dead ones and our own are dropped).
std::vector<Claim> others_alive(const std::string &text, int self) {
    std::vector<Claim> kept;
    for (const Claim &c : parse_claims(text))
        if (c.pid != self && process_start_time(c.pid) == c.start_time && c.start_time) kept.push_back(c);
    return kept;
}

} // namespace

bool claim_headroom(int dir_fd, const std::string &cgroup, uint64_t bytes,
                    const std::function<bool(uint64_t others)> &fits, uint64_t *others_out) {
    LockedFile f(dir_fd, cgroup);
    if (f.fd < 0) return false;
    int self = (int)getpid();
    std::vector<Claim> claims = others_alive(f.read_all(), self);
    uint64_t others = 0;
    for (const Claim &c : claims) others += c.bytes;
    if (others_out) *others_out = others;
    bool ok = fits(others);
    if (ok) claims.push_back({self, process_start_time(self), bytes});
    f.write_all(format_claims(claims));
    return ok;
}

void claims_after_fork_child() {
    int fd = g_open_fd.exchange(-1);
    if (fd >= 0) close(fd); // the parent's lock is the parent's: closing our copy keeps it
}

void drop_claim(int dir_fd, const std::string &cgroup) {
    LockedFile f(dir_fd, cgroup);
    if (f.fd < 0) return;
    f.write_all(format_claims(others_alive(f.read_all(), (int)getpid())));
}

} // namespace spillway
