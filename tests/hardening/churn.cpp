// churn.cpp — long-running mixed churn under the shim: 8 threads of small
// and large malloc/calloc/realloc/posix_memalign/free, each verifying its own
// bytes, while the main thread forks (children write into inherited regions,
// allocate and free their own, exit) and fork+execs (itself in "exec-child"
// mode, which reports the descriptors it inherited and churns briefly).
// Runs for CHURN_SECONDS (default 20). Afterwards, compared with a snapshot
// taken after a warm-up: the same descriptors (by number and target), no new
// file or memfd mapping, the arena back to PROT_NONE, and the spill directory
// empty. An exec'ed child must inherit no descriptor the shim opened.
// Run under the shim with SPILLWAY_THRESHOLD=1MiB and a private SPILLWAY_DIR.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "../shim_threads_state.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "churn: %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

struct Maps {
    std::multiset<std::string> files; // pathnames of file/memfd mappings (incl. deleted)
    size_t lines = 0, arena_live = 0; // arena_live: accessible mappings inside huge PROT_NONE ranges
    std::vector<std::string> all;     // every line, to show what a growth is made of
};

static Maps read_maps() {
    Maps m;
    std::ifstream in("/proc/self/maps");
    std::string line;
    while (std::getline(in, line)) {
        m.lines++;
        m.all.push_back(line);
        size_t slash = line.find('/');
        size_t mem = line.find("memfd:");
        if (mem != std::string::npos) m.files.insert(line.substr(mem));
        else if (slash != std::string::npos && line.find("(deleted)") != std::string::npos)
            m.files.insert(line.substr(slash));
    }
    return m;
}

// Mappings of spill regions: spill files in dir, the memory pool and promoted memfds.
static size_t region_mappings(const Maps &m, const char *dir) {
    size_t n = 0;
    for (const std::string &f : m.files)
        if (f.rfind(dir, 0) == 0 || f == "memfd:spillway (deleted)" ||
            f == "memfd:spillway-promoted (deleted)")
            n++;
    return n;
}

static size_t dir_entries(const char *dir) {
    size_t n = 0;
    if (DIR *d = opendir(dir)) {
        while (struct dirent *e = readdir(d))
            if (e->d_name[0] != '.') n++;
        closedir(d);
    }
    return n;
}

static std::atomic<bool> g_failed{false}, g_stop{false};
// posix_memalign alignments are 64 << (0..15), up to 2 MiB; CHURN_ALIGN_SHIFTS=15
// keeps them at or below 1 MiB (used to look past the realloc bug of a
// small over-aligned region, the realloc-aligned regression, tests/hardening/README.md).
static unsigned g_align_shifts = 16;
static std::atomic<long> g_ops{0}, g_large{0};

static void fail_at(const char *what, int line) {
    fprintf(stderr, "churn: worker check failed: %s (line %d)\n", what, line);
    g_failed = true;
}
#define WCHECK(c) do { if (!(c)) fail_at(#c, __LINE__); } while (0)

struct Slot {
    unsigned char *p = nullptr;
    size_t n = 0;
    unsigned char tag = 0;
};

static void fill(Slot &s) {
    s.p[0] = s.p[s.n - 1] = s.p[s.n / 2] = s.tag;
    if (s.n >= 4096) for (size_t i = 0; i < s.n; i += 65536) s.p[i] = s.tag; // touch pages
}
static bool intact(const Slot &s) {
    if (s.p[0] != s.tag || s.p[s.n - 1] != s.tag || s.p[s.n / 2] != s.tag) return false;
    if (s.n >= 4096) for (size_t i = 0; i < s.n; i += 65536) if (s.p[i] != s.tag) return false;
    return true;
}

static size_t pick_size(std::mt19937_64 &rng) {
    switch (rng() % 8) {
    case 0: case 1: case 2: case 3: return 1 + rng() % 4096;
    case 4: return 4096 + rng() % (512 << 10);
    case 5: return (1 << 20) - 64 + rng() % 128; // right at the threshold
    case 6: return (1 << 20) + rng() % (8 << 20);
    default: return (rng() % 64 == 0) ? (32 << 20) + rng() % (64 << 20) : (1 << 20) + rng() % (2 << 20);
    }
}

static void worker(unsigned seed, bool until_stop, long rounds) {
    std::mt19937_64 rng(seed);
    std::vector<Slot> slots(48);
    for (long round = 0; (until_stop ? !g_stop.load() : round < rounds) && !g_failed; round++) {
        Slot &s = slots[rng() % slots.size()];
        if (s.p) {
            WCHECK(intact(s));
            unsigned op = rng() % 4;
            if (op == 0) {
                size_t n = pick_size(rng);
                unsigned char *q = (unsigned char *)realloc(s.p, n);
                if (!q) { fail_at("realloc returned NULL", __LINE__); break; }
                WCHECK(q[0] == s.tag);
                if (n >= s.n) WCHECK(q[s.n - 1] == s.tag && q[s.n / 2] == s.tag);
                s.p = q;
                s.n = n;
            } else {
                free(s.p);
                s.p = nullptr;
                g_ops++;
                continue;
            }
        } else {
            size_t n = pick_size(rng);
            unsigned kind = rng() % 4;
            void *p = nullptr;
            if (kind == 0) p = calloc(1, n);
            else if (kind == 1) { if (posix_memalign(&p, size_t(64) << (rng() % g_align_shifts), n)) p = nullptr; }
            else p = malloc(n);
            if (!p) { fail_at("allocation returned NULL", __LINE__); break; }
            s.p = (unsigned char *)p;
            if (kind == 0) WCHECK(s.p[0] == 0 && s.p[n - 1] == 0 && s.p[n / 2] == 0);
            s.n = n;
            if (n >= (1 << 20)) g_large++;
        }
        s.tag = (unsigned char)(1 + rng() % 250);
        fill(s);
        g_ops++;
    }
    for (Slot &s : slots) {
        if (s.p && !intact(s)) fail_at("bytes changed before the final free", __LINE__);
        free(s.p);
    }
}

static std::string g_self;

// Forks: the child writes into inherited (private copy-on-write) regions,
// churns a little on its own and exits; the parent's bytes must not change.
static void do_fork(std::mt19937_64 &rng) {
    size_t n = (2 << 20) + rng() % (4 << 20);
    unsigned char *p = (unsigned char *)malloc(n);
    CHECK(p);
    memset(p, 0x5a, n);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        memset(p, 0xa5, n);
        worker((unsigned)getpid(), false, 300);
        free(p);
        _exit(g_failed ? 3 : 0);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "churn: fork child status 0x%x\n", st);
        g_failed = true;
    }
    for (size_t i = 0; i < n; i += 4096) if (p[i] != 0x5a) { fail_at("a fork child's write reached the parent", __LINE__); break; }
    free(p);
}

// fork+exec of ourselves: the new image reports the descriptors it got.
static int do_exec(std::string *fds_out) {
    int pipefd[2];
    CHECK(pipe2(pipefd, O_CLOEXEC) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], 1);
        execl(g_self.c_str(), g_self.c_str(), "exec-child", (char *)nullptr);
        _exit(126);
    }
    close(pipefd[1]);
    std::string out;
    char buf[4096];
    ssize_t k;
    while ((k = read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, (size_t)k);
    close(pipefd[0]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (fds_out) *fds_out = out;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int exec_child() {
    // Report inherited descriptors first (before we open anything ourselves).
    auto fds = fd_table();
    std::string line;
    for (auto &[fd, target] : fds) {
        // pipe:[inode] and socket:[inode]: the kind matters, not the inode
        std::string t = target.substr(0, target.find(":["));
        line += std::to_string(fd) + "=" + t + " ";
    }
    printf("%s\n", line.c_str());
    fflush(stdout);
    worker((unsigned)getpid(), false, 200);
    return g_failed ? 3 : 0;
}

int main(int argc, char **argv) {
    g_self = "/proc/self/exe";
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) g_self.assign(exe, (size_t)k);
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0) return exec_child();
    const char *dir = getenv("SPILLWAY_DIR");
    CHECK(dir && *dir);
    if (getenv("CHURN_ALIGN_SHIFTS")) g_align_shifts = (unsigned)atoi(getenv("CHURN_ALIGN_SHIFTS"));
    double seconds = getenv("CHURN_SECONDS") ? atof(getenv("CHURN_SECONDS")) : 20;
    auto *active = (int (*)())dlsym(RTLD_DEFAULT, "spillway_is_active");
    CHECK(active && active()); // the shim is preloaded and routing

    // Warm-up: brings up what legitimately stays for the process lifetime
    // (the reaper and sampler threads, the pool file and memfd, glibc's
    // cached thread stacks, the learner's descriptors).
    // The memory pool (memfd "spillway", backing.h) opens at the first memory
    // region and stays open. A plain malloc gets one only once the detector
    // has classified its site random-access, which depends on when its
    // thread runs: on a loaded machine (load 8-17 on 2 cores) no site was
    // classified during the warm-up, the pool opened during the churn, and
    // the descriptor check failed on it. So both pools open here, by request.
    auto *alloc = (void *(*)(size_t, unsigned))dlsym(RTLD_DEFAULT, "spillway_alloc");
    auto *backing = (int (*)(const void *))dlsym(RTLD_DEFAULT, "spillway_backing");
    CHECK(alloc && backing);
    for (unsigned flags : {2u /* SPILLWAY_PREFER_MEMORY */, 1u /* SPILLWAY_PREFER_DISK */}) {
        void *p = alloc(2 << 20, flags);
        CHECK(p && backing(p) == (flags == 2u ? 2 /* memory */ : 1 /* disk */));
        free(p);
    }
    std::string baseline_exec_fds;
    CHECK(do_exec(&baseline_exec_fds) == 0);
    {
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < 8; t++) ts.emplace_back(worker, 100 + t, false, 400);
        for (auto &t : ts) t.join();
    }
    std::mt19937_64 rng(42);
    do_fork(rng);
    // Every warm-up region is freed; the baseline waits until none is
    // mapped any more: past the recycle cache's idle time (1 s, trimmed
    // every 250 ms, shim/engine/large/recycle.h) and the reaper's queue. A fixed 2 s
    // sleep assumed the reaper ran within it; a starved one had not, and
    // the check then blamed the churn for mappings the warm-up left.
    // It also waits for the detector thread's first tick, which opens the
    // descriptors it keeps (pagemap, the live stats memfd): a thread that
    // had not run yet would open them during the churn.
    usleep(1000000);
    Maps maps0 = read_maps();
    auto fds0 = fd_table();
    for (int i = 0; i < 300 && (region_mappings(maps0, dir) || !detector_ticked(fds0)); i++) {
        usleep(100000);
        maps0 = read_maps();
        fds0 = fd_table();
    }
    CHECK(region_mappings(maps0, dir) == 0 && detector_ticked(fds0));
    CHECK(!g_failed);

    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 8; t++) ts.emplace_back(worker, 1000 + t, true, 0);
    long forks = 0, execs = 0;
    std::string exec_fds;
    while (!g_failed &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
        usleep(50000 + rng() % 150000);
        if (rng() % 2) { do_fork(rng); forks++; }
        else {
            int st = do_exec(&exec_fds);
            execs++;
            if (st != 0) { fprintf(stderr, "churn: exec child exited %d\n", st); g_failed = true; }
            else if (exec_fds != baseline_exec_fds) {
                fprintf(stderr, "churn: an exec'ed child inherited different descriptors:\n  before: %s  now:    %s",
                        baseline_exec_fds.c_str(), exec_fds.c_str());
                g_failed = true;
            }
        }
    }
    g_stop = true;
    for (auto &t : ts) t.join();
    CHECK(!g_failed);

    // Let the reaper retire the last frees, then compare.
    std::map<int, std::string> fds1;
    Maps maps1;
    for (int i = 0; i < 50; i++) {
        usleep(100000);
        fds1 = fd_table();
        maps1 = read_maps();
        if (fds1 == fds0 && maps1.files == maps0.files && dir_entries(dir) == 0) break;
    }
    int bad = 0;
    if (fds1 != fds0) {
        fprintf(stderr, "churn: descriptors differ after the churn:\n");
        for (auto &[fd, t] : fds0) if (!fds1.count(fd) || fds1[fd] != t) fprintf(stderr, "  before: %d -> %s\n", fd, t.c_str());
        for (auto &[fd, t] : fds1) if (!fds0.count(fd) || fds0[fd] != t) fprintf(stderr, "  after:  %d -> %s\n", fd, t.c_str());
        bad++;
    }
    if (maps1.files != maps0.files) {
        fprintf(stderr, "churn: file/memfd mappings differ: %zu before, %zu after\n", maps0.files.size(), maps1.files.size());
        std::map<std::string, int> diff;
        for (auto &f : maps1.files) diff[f]++;
        for (auto &f : maps0.files) diff[f]--;
        int shown = 0;
        for (auto &[f, d] : diff) if (d && shown++ < 10) fprintf(stderr, "  %+d %s\n", d, f.c_str());
        bad++;
    }
    // Mapping count: a VMA split or two may remain in the arena, and
    // mimalloc's own segments (anonymous rw-p/---p pairs outside it) change
    // their committed/reserved split with the small-allocation load: +1 to
    // +5 lines in 8 runs of session 26 (CI run 71 failed at +5 with +4
    // allowed). Leaked regions over files show in the exact comparison above.
    if (maps1.lines > maps0.lines + 8) {
        fprintf(stderr, "churn: /proc/self/maps grew from %zu to %zu lines; the lines not there before:\n",
                maps0.lines, maps1.lines);
        std::set<std::string> before(maps0.all.begin(), maps0.all.end());
        for (const std::string &l : maps1.all)
            if (!before.count(l)) fprintf(stderr, "  %s\n", l.c_str());
        bad++;
    }
    if (size_t n = dir_entries(dir)) {
        fprintf(stderr, "churn: %zu entries left in the spill directory %s\n", n, dir);
        bad++;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("churn: %.0f s, %ld operations (%ld large allocations), %ld forks, %ld execs; fds %zu, maps %zu -> %zu%s\n",
           secs, g_ops.load(), g_large.load(), forks, execs, fds1.size(), maps0.lines, maps1.lines,
           bad ? "" : "; ok");
    return bad ? 1 : 0;
}
