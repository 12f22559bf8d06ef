// memcg.cpp — see memcg.h.
#include "memcg.h"

#include "support.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace control_test {

uint64_t read_u64_file(const std::string &path) {
    FILE *f = fopen(path.c_str(), "re");
    if (!f) return UINT64_MAX;
    unsigned long long v = 0;
    int n = fscanf(f, "%llu", &v);
    fclose(f);
    return n == 1 ? (uint64_t)v : UINT64_MAX;
}

static bool write_text(const std::string &path, const std::string &text) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = write(fd, text.data(), text.size()) == (ssize_t)text.size();
    close(fd);
    return ok;
}

// This process's cgroup path in the memory hierarchy: v1 "N:memory:/path",
// v2 "0::/path" (used only when no v1 memory line exists).
static bool own_cgroup(bool *v2, std::string *path) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f) return false;
    char line[4096];
    std::string v1_path, v2_path;
    bool have_v1 = false, have_v2 = false;
    while (fgets(line, sizeof line, f)) {
        std::string l = line;
        if (!l.empty() && l.back() == '\n') l.pop_back();
        if (l.rfind("0::", 0) == 0) {
            have_v2 = true;
            v2_path = l.substr(3);
        } else if (size_t at = l.find(":memory:"); at != std::string::npos) {
            have_v1 = true;
            v1_path = l.substr(at + 8);
        }
    }
    fclose(f);
    if (have_v1) {
        *v2 = false;
        *path = "/sys/fs/cgroup/memory" + (v1_path == "/" ? std::string() : v1_path);
        return true;
    }
    if (have_v2) {
        *v2 = true;
        *path = "/sys/fs/cgroup" + (v2_path == "/" ? std::string() : v2_path);
        return true;
    }
    return false;
}

std::unique_ptr<MemoryCgroup> MemoryCgroup::create(std::string *why) {
    bool v2 = false;
    std::string parent;
    if (!own_cgroup(&v2, &parent)) {
        *why = "no memory cgroup found in /proc/self/cgroup; run on Linux with cgroup v1 "
               "(memory controller) or v2";
        return nullptr;
    }
    unsigned char rnd[4] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) memset(rnd, 0x5a, sizeof rnd);
    char name[64];
    snprintf(name, sizeof name, "spillway-test-%d-%02x%02x%02x%02x", (int)getpid(), rnd[0], rnd[1],
             rnd[2], rnd[3]);
    std::string dir = parent + "/" + name;
    if (v2) {
        // The memory controller must be enabled for children of our cgroup.
        // (On v2 a non-root cgroup that holds processes cannot enable it for
        // its children; run the test from a cgroup without processes then.)
        std::string control = parent + "/cgroup.subtree_control";
        std::string current;
        if (FILE *f = fopen(control.c_str(), "re")) {
            char buf[512] = {0};
            if (fgets(buf, sizeof buf, f)) current = buf;
            fclose(f);
        }
        if (current.find("memory") == std::string::npos && !write_text(control, "+memory")) {
            *why = "cannot enable the memory controller in " + control + " (" + strerror(errno) +
                   "); run the test as root from a cgroup v2 subtree delegated to it";
            return nullptr;
        }
    }
    if (mkdir(dir.c_str(), 0755) != 0) {
        *why = "cannot create " + dir + " (" + strerror(errno) +
               "); run the test as root with a writable memory cgroup";
        return nullptr;
    }
    auto cg = std::unique_ptr<MemoryCgroup>(new MemoryCgroup());
    cg->v2_ = v2;
    cg->dir_ = dir;
    if (cg->usage() == UINT64_MAX) {
        *why = "created " + dir + " but " + cg->usage_file() +
               " is unreadable; the memory controller is not enabled there";
        return nullptr; // destructor removes it
    }
    return cg;
}

MemoryCgroup::~MemoryCgroup() {
    // A cgroup is removable once its processes have exited; exiting is not
    // instantaneous after waitpid on every kernel, so retry briefly.
    for (int i = 0; i < 500; i++) {
        if (rmdir(dir_.c_str()) == 0 || errno == ENOENT) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    fprintf(stderr, "control test: could not remove cgroup %s (%s); remove it with rmdir\n",
            dir_.c_str(), strerror(errno));
}

std::string MemoryCgroup::usage_file() const {
    return dir_ + (v2_ ? "/memory.current" : "/memory.usage_in_bytes");
}

uint64_t MemoryCgroup::usage() const { return read_u64_file(usage_file()); }

// Swap is forbidden too, as `docker run --memory-swap` equal to --memory
// does: the tests assert OOM kills, and a machine whose swap is on (a
// benchmark here turns a swap file on and off) would otherwise let a job
// that must be killed survive (control/tiering-cgroup's tiering-off run did,
// 1 in 5, reading its memfd region back at swap-in speed).
bool MemoryCgroup::set_limit(uint64_t bytes) {
    std::string n = std::to_string(bytes);
    if (v2_) {
        if (!write_text(dir_ + "/memory.max", n)) return false;
        return write_text(dir_ + "/memory.swap.max", "0") || access((dir_ + "/memory.swap.max").c_str(), F_OK) != 0;
    }
    // v1: memory+swap may never be below memory: lower memory first, raise memsw first.
    std::string memsw = dir_ + "/memory.memsw.limit_in_bytes";
    bool has_memsw = access(memsw.c_str(), F_OK) == 0;
    if (!write_text(dir_ + "/memory.limit_in_bytes", n)) {
        if (!has_memsw || !write_text(memsw, n) || !write_text(dir_ + "/memory.limit_in_bytes", n)) return false;
    }
    return !has_memsw || write_text(memsw, n);
}

bool join_cgroup(const char *procs_path) {
    int fd = open(procs_path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    // getpid() formatted by hand: snprintf is not async-signal-safe.
    char buf[24];
    int n = 0;
    pid_t pid = getpid();
    char rev[24];
    do rev[n++] = (char)('0' + pid % 10);
    while ((pid /= 10) > 0);
    for (int i = 0; i < n; i++) buf[i] = rev[n - 1 - i];
    bool ok = write(fd, buf, (size_t)n) == n;
    close(fd);
    return ok;
}

} // namespace control_test
