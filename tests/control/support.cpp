// support.cpp — see support.h.
#include "support.h"

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <sstream>
#include <unistd.h>

extern char **environ;

namespace control_test {

size_t page_size() { return (size_t)sysconf(_SC_PAGESIZE); }

static inline uint64_t word_at(uint64_t seed, uint64_t index) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | 1; // never zero: a zero word always means "not written"
}

void fill(void *base, size_t off, size_t len, uint64_t seed) {
    uint64_t *w = (uint64_t *)((char *)base + off);
    for (size_t i = 0; i < len / 8; i++) w[i] = word_at(seed, off / 8 + i);
}

size_t first_mismatch(const void *base, size_t off, size_t len, uint64_t seed) {
    const uint64_t *w = (const uint64_t *)((const char *)base + off);
    for (size_t i = 0; i < len / 8; i++)
        if (w[i] != word_at(seed, off / 8 + i)) return off + i * 8;
    return SIZE_MAX;
}

size_t first_nonzero(const void *base, size_t off, size_t len) {
    const uint64_t *w = (const uint64_t *)((const char *)base + off);
    for (size_t i = 0; i < len / 8; i++)
        if (w[i]) return off + i * 8;
    return SIZE_MAX;
}

long file_cached_bytes(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct {
        uint64_t off, len;
    } range{0, 0}; // len 0: to the end of the file
    struct {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
    } cs{};
    long result;
    if (syscall(451 /* cachestat */, fd, &range, &cs, 0) == 0) {
        result = (long)(cs.nr_cache * page_size());
    } else {
        // Older kernel: mincore over a read-only mapping (mapping faults nothing in).
        struct stat st;
        fstat(fd, &st);
        size_t len = (size_t)st.st_size;
        result = 0;
        if (len) {
            void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
            if (m == MAP_FAILED) {
                result = -errno;
            } else {
                size_t pages = (len + page_size() - 1) / page_size();
                std::vector<unsigned char> vec(pages);
                if (mincore(m, len, vec.data()) != 0) result = -errno;
                else
                    for (unsigned char v : vec) result += (v & 1) ? (long)page_size() : 0;
                munmap(m, len);
            }
        }
    }
    close(fd);
    return result;
}

std::string spill_dir() {
    const char *d = getenv("SPILLWAY_DIR");
    if (!d || !*d) {
        fprintf(stderr, "control test: SPILLWAY_DIR is not set; run it with `meson test --suite control`\n");
        exit(2);
    }
    return d;
}

std::vector<std::string> list_dir(const std::string &dir) {
    std::vector<std::string> names;
    if (DIR *d = opendir(dir.c_str())) {
        while (struct dirent *e = readdir(d))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names.push_back(e->d_name);
        closedir(d);
    }
    return names;
}

static void remove_tree(const std::string &path) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        for (const std::string &n : list_dir(path)) remove_tree(path + "/" + n);
        rmdir(path.c_str());
    } else {
        unlink(path.c_str());
    }
}

void empty_spill_dir() {
    std::string dir = spill_dir();
    for (const std::string &n : list_dir(dir)) remove_tree(dir + "/" + n);
}

bool file_exists(const std::string &path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

std::string maps_line_of(const void *p) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return "";
    char line[PATH_MAX + 256];
    std::string found;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi) {
            found = line;
            if (!found.empty() && found.back() == '\n') found.pop_back();
            break;
        }
    }
    fclose(f);
    return found;
}

std::string vm_flags_of(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f) return "";
    char line[PATH_MAX + 256];
    bool inside = false;
    std::string flags;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char dash;
        if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-') {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            flags = line + 8;
            break;
        }
    }
    fclose(f);
    while (!flags.empty() && (flags.back() == '\n' || flags.back() == ' ')) flags.pop_back();
    return flags.empty() || flags[0] == ' ' ? flags : " " + flags;
}

bool eventually(const std::function<bool()> &pred, int seconds) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > until) return pred();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

static std::string helper_path() {
    const char *h = getenv("SPILLWAY_TEST_HELPER");
    if (!h || !*h) {
        fprintf(stderr, "control test: SPILLWAY_TEST_HELPER is not set; run it with `meson test --suite control`\n");
        exit(2);
    }
    return h;
}

static int decode_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

Helper spawn_helper(const std::vector<std::string> &args, const SpawnOptions &opts) {
    // Everything the child needs is built before fork: after it, only
    // async-signal-safe calls (this process has threads).
    std::vector<std::string> argv_s = {opts.program.empty() ? helper_path() : opts.program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (std::string &a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_s;
    for (char **e = environ; *e; e++) {
        std::string entry = *e, name = entry.substr(0, entry.find('='));
        bool drop = false;
        for (const std::string &u : opts.unset_env) drop |= name == u;
        for (const std::string &s : opts.set_env) drop |= name == s.substr(0, s.find('='));
        if (!drop) env_s.push_back(entry);
    }
    env_s.insert(env_s.end(), opts.set_env.begin(), opts.set_env.end());
    std::vector<char *> envp;
    for (std::string &e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);

    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        perror("control test: pipe2");
        exit(2);
    }
    Helper h;
    h.pid = fork();
    if (h.pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (opts.before_exec) opts.before_exec();
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    h.to_child = in[1];
    h.from_child = out[0];
    return h;
}

std::string Helper::send(const std::string &line) {
    std::string msg = line + "\n";
    if (write(to_child, msg.data(), msg.size()) != (ssize_t)msg.size()) return "<helper gone>";
    return read_line();
}

std::string Helper::read_line() {
    std::string reply;
    char c;
    while (read(from_child, &c, 1) == 1) {
        if (c == '\n') return reply;
        reply += c;
    }
    return reply.empty() ? "<helper gone>" : reply;
}

int Helper::wait() {
    if (to_child >= 0) close(to_child);
    to_child = -1;
    int st = 0;
    waitpid(pid, &st, 0);
    if (from_child >= 0) close(from_child);
    from_child = -1;
    return decode_status(st);
}

std::string run_helper(const std::vector<std::string> &args, int *status, const SpawnOptions &opts) {
    Helper h = spawn_helper(args, opts);
    close(h.to_child);
    h.to_child = -1;
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(h.from_child, buf, sizeof buf)) > 0) out.append(buf, (size_t)n);
    *status = h.wait();
    return out;
}

int in_fork_child(const std::function<int()> &fn) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) _exit(fn());
    int st = 0;
    waitpid(pid, &st, 0);
    return decode_status(st);
}

std::unique_ptr<LoopFilesystem> LoopFilesystem::create(const std::string &work_dir, size_t mib,
                                                       std::string *why) {
    auto fs = std::unique_ptr<LoopFilesystem>(new LoopFilesystem());
    fs->image_ = work_dir + "/loopfs-" + std::to_string(getpid()) + ".ext4";
    fs->mount_ = work_dir + "/loopfs-" + std::to_string(getpid()) + ".mnt";
    fs->spill_ = fs->mount_ + "/spill";
    mkdir(work_dir.c_str(), 0700);
    std::string make = "truncate -s " + std::to_string(mib) + "M '" + fs->image_ + "' && mkfs.ext4 -q -F -m 0 -E nodiscard '" +
                       fs->image_ + "' && mkdir -p '" + fs->mount_ + "' && mount -o loop '" + fs->image_ + "' '" +
                       fs->mount_ + "'";
    if (std::system(make.c_str()) != 0) {
        *why = "cannot make and mount an ext4 image at " + fs->mount_ +
               " (run as root, with e2fsprogs and loop devices)";
        unlink(fs->image_.c_str());
        rmdir(fs->mount_.c_str());
        fs->image_.clear(); // nothing to undo
        return nullptr;
    }
    if (mkdir(fs->spill_.c_str(), 0700) != 0) {
        *why = "cannot create " + fs->spill_ + " (" + strerror(errno) + ")";
        return nullptr; // the destructor unmounts
    }
    return fs;
}

LoopFilesystem::~LoopFilesystem() {
    if (image_.empty()) return;
    std::string undo = "umount '" + mount_ + "' || umount -l '" + mount_ + "'";
    if (std::system(undo.c_str()) != 0) fprintf(stderr, "control test: could not unmount %s; unmount it by hand\n", mount_.c_str());
    rmdir(mount_.c_str());
    unlink(image_.c_str());
}

int userfaultfd_level() {
    constexpr uint64_t kWpAsync = 1u << 15, kWpUnpopulated = 1u << 13;
    constexpr uint64_t kFull = kWpAsync | kWpUnpopulated | UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_MINOR_SHMEM |
                               UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
    auto features = [](int flags) -> int64_t {
        int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | flags);
        if (fd < 0) return -1;
        uffdio_api api{};
        api.api = UFFD_API;
        int rc = ioctl(fd, UFFDIO_API, &api);
        close(fd);
        return rc == 0 ? (int64_t)api.features : -1;
    };
    int64_t f = features(0);
    if (f >= 0 && (f & kFull) == kFull) return 2;
    if (f < 0) f = features(1 /* UFFD_USER_MODE_ONLY */);
    return f >= 0 && (f & (kWpAsync | kWpUnpopulated)) == (kWpAsync | kWpUnpopulated) ? 1 : 0;
}

bool refuse_userfaultfd(bool allow_user_only) {
    sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
        // flags & UFFD_USER_MODE_ONLY, when user faults only are allowed
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, allow_user_only ? 1u : 0u, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    sock_fprog fp = {(unsigned short)(sizeof prog / sizeof prog[0]), prog};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) == 0;
}

std::map<std::string, std::string> keys(const std::string &out) {
    std::map<std::string, std::string> m;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
        if (size_t eq = line.find('='); eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
    return m;
}

std::string job_path() {
    const char *p = getenv("SPILLWAY_TIERING_JOB");
    if (!p) {
        fprintf(stderr, "control test: SPILLWAY_TIERING_JOB is not set; run it with meson test (tests/control/meson.build sets it)\n");
        exit(2);
    }
    return p;
}

} // namespace control_test
