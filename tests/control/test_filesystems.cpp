// test_filesystems.cpp — the spill directory on the filesystems users have:
// run by on_filesystem.sh with SPILLWAY_DIR on a fresh XFS, btrfs, overlayfs
// (a container's writable layer) or ext4, each small (320 MiB) and mounted
// with online discard. Through each: the reservation, a tiering promotion
// and demotion, a fork child's private remap, spillway_export, the
// disk-full fallback, a page written again after writeback on a full
// filesystem, and the closes and punches a discard mount makes slow (on the
// reaper thread, never in free()).
//
// The program is also its own jobs (argv[1]): "full-job" fills the
// filesystem, "reaper-job" frees regions under strace (see their comments).
#include "catch_session.h"
#include <catch2/catch.hpp>

#include "memcg.h"
#include "spillway.h"
#include "support.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <linux/fs.h>
#include <linux/magic.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

using namespace control_test;

namespace {

// Free bytes of the spill directory's filesystem, after syncfs: btrfs and
// XFS return freed extents at their transaction's commit, not at close.
// 0 when it cannot be read (the checks then fail).
uint64_t fs_free() {
    int fd = open(spill_dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    syncfs(fd);
    struct statvfs st;
    bool ok = fstatvfs(fd, &st) == 0;
    close(fd);
    return ok ? (uint64_t)st.f_bavail * st.f_frsize : 0;
}

std::string slurp(const std::string &path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string self_exe() {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    REQUIRE(n > 0);
    return std::string(buf, (size_t)n);
}

// A scratch file beside the spill directory's filesystem, on the real disk.
std::string scratch(const std::string &name) {
    const char *base = getenv("SPILLWAY_FS_SCRATCH");
    REQUIRE(base);
    return std::string(base) + "/" + name;
}

// full-job: policy disk, 64 MiB regions until twelve exist (768 MiB, more
// than the 320 MiB filesystem holds), then every byte of each written and
// checked. The ones that found no room fall back to anonymous memory with a
// warning; none may raise SIGBUS (a page written into a file whose blocks
// were not all reserved, or a filesystem that needs space of its own for
// the write, such as btrfs' metadata). Prints how many were disk-backed.
int full_job() {
    std::vector<void *> regions;
    int on_disk = 0;
    for (int i = 0; i < 12; i++) {
        void *p = malloc(64 * MiB);
        if (!p) return 3;
        on_disk += spillway_backing(p) == SPILLWAY_DISK;
        regions.push_back(p);
    }
    for (size_t i = 0; i < regions.size(); i++) fill(regions[i], 0, 64 * MiB, 100 + i);
    for (size_t i = 0; i < regions.size(); i++)
        if (first_mismatch(regions[i], 0, 64 * MiB, 100 + i) != SIZE_MAX) return 4;
    printf("on_disk=%d\nregions=%zu\n", on_disk, regions.size());
    for (void *p : regions) free(p);
    return 0;
}

// The descriptors of spill files this process holds open.
std::vector<int> open_spill_files() {
    std::vector<int> fds;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return fds;
    std::string dir = spill_dir() + "/";
    while (struct dirent *e = readdir(d)) {
        char target[4096];
        std::string link = std::string("/proc/self/fd/") + e->d_name;
        ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (strncmp(target, dir.c_str(), dir.size()) == 0) fds.push_back(atoi(e->d_name));
    }
    closedir(d);
    return fds;
}

// Whether every spill file this process holds open writes in place (btrfs'
// FS_NOCOW_FL): 1 yes, 0 one does not, -1 no spill file open.
int spill_files_write_in_place() {
    int verdict = -1;
    for (int fd : open_spill_files()) {
        int flags = 0;
        bool in_place = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_NOCOW_FL);
        verdict = (verdict == 0 || !in_place) ? 0 : 1;
    }
    return verdict;
}

// rewrite-full-job: a disk region written and written back (clean), the
// filesystem then filled to its last block by another file, and pages of
// the region written again. ext4 and XFS write them where they are; btrfs
// copies a copy-on-write file's page to new space, which a full filesystem
// does not have: SIGBUS, whatever fallocate reserved. The shim's spill
// files on btrfs are FS_NOCOW_FL, so the write stays in place.
// Prints whether the spill files write in place.
int rewrite_full_job() {
    const size_t n = 32 * MiB, page = 4096, stride = 128 * page; // 64 pages written again
    char *p = (char *)spillway_alloc_disk(n, 0);
    if (!p || spillway_backing(p) != SPILLWAY_DISK) return 3;
    fill(p, 0, n, 7);
    if (msync(p, n, MS_SYNC) != 0) return 4;
    int in_place = spill_files_write_in_place();
    std::string filler = spill_dir() + "/../filler"; // on the spill filesystem, outside the directory
    int fd = open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return 5;
    static char block[1 << 20];
    memset(block, 1, sizeof block);
    for (size_t chunk : {sizeof block, (size_t)page}) // MiBs, then the last pages
        while (write(fd, block, chunk) == (ssize_t)chunk) fsync(fd);
    fsync(fd);
    syncfs(fd);
    close(fd);
    for (size_t off = 0; off < n; off += stride) fill(p, off, 8, 11); // one word a page: the page faults again
    for (size_t off = 0; off < n; off += stride)
        if (first_mismatch(p, off, 8, 11) != SIZE_MAX || first_mismatch(p, off + 8, stride - 8, 7) != SIZE_MAX) return 6;
    unlink(filler.c_str());
    printf("in_place=%d\nfree_kib=%llu\n", in_place, (unsigned long long)(fs_free() >> 10));
    free(p);
    return 0;
}

// reaper-job: the frees whose closes and punches a discard mount makes slow.
// A region in a file of its own, one in the pool, and a pool region
// exported (moved into a file of its own, leaving its pool range behind),
// each written and freed; prints this thread's id and the reaper thread's,
// for the strace log to be read against.
// Every spill file closed but one (the pool's), and that one holding no
// blocks: the reaper has retired every region, the recycle cache's too.
// Why not the filesystem's free space alone: it also grows when the
// filesystem frees an earlier case's deleted files in the background
// (XFS's inode inactivation, a journal commit), and it came back above
// the start with two regions still cached (free_change_kib=16384): the
// strace log was read before their close and punch.
bool spill_files_released() {
    std::vector<int> fds = open_spill_files();
    bool empty = true;
    for (int fd : fds) {
        struct stat st;
        if (fstat(fd, &st) != 0 || st.st_blocks != 0) empty = false;
    }
    return fds.size() <= 1 && empty;
}

int reaper_job() {
    const uint64_t free0 = fs_free();
    void *own = spillway_alloc_disk(48 * MiB, 0);
    void *pooled = malloc(16 * MiB);
    void *exported = malloc(16 * MiB);
    if (!own || !pooled || !exported) return 3;
    if (spillway_backing(pooled) != SPILLWAY_DISK || spillway_backing(exported) != SPILLWAY_DISK) return 4;
    fill(own, 0, 48 * MiB, 1);
    fill(pooled, 0, 16 * MiB, 2);
    fill(exported, 0, 16 * MiB, 3);
    char path[4096];
    if (spillway_export(exported, path, sizeof path) != 0) return 5;
    unlink(path);
    free(own);
    free(pooled);
    free(exported);
    // The reaper retires them (the recycle cache keeps two for a second
    // first): wait until the filesystem has every block back and every
    // spill file but the pool is closed, the pool empty.
    bool done = eventually([&] { return fs_free() >= free0 && spill_files_released(); });
    long reaper = -1;
    if (DIR *d = opendir("/proc/self/task")) {
        while (struct dirent *e = readdir(d)) {
            std::string comm = slurp(std::string("/proc/self/task/") + e->d_name + "/comm");
            if (comm == "spillway-reap\n") reaper = atol(e->d_name);
        }
        closedir(d);
    }
    printf("retired=%d\nfree_change_kib=%lld\nmain_tid=%ld\nreaper_tid=%ld\n", done,
           ((long long)fs_free() - (long long)free0) / 1024, (long)syscall(SYS_gettid), reaper);
    return 0;
}

} // namespace

TEST_CASE("the reservation: a disk region's blocks come off this filesystem before a page is touched") {
    empty_spill_dir();
    for (bool own_file : {true, false}) {
        const size_t n = own_file ? 64 * MiB : 16 * MiB; // a file of its own, or a range of the pool
        uint64_t free0 = fs_free();
        void *p = own_file ? spillway_alloc_disk(n, 0) : malloc(n);
        REQUIRE(p);
        REQUIRE(spillway_backing(p) == SPILLWAY_DISK);
        uint64_t free1 = fs_free();
        INFO((own_file ? "own file" : "pool") << ": " << (free0 - free1) / MiB << " MiB taken for " << n / MiB
                                              << " MiB");
        CHECK(free0 >= free1 + n); // fallocate: every block, now, not at the first write
        CHECK(first_nonzero(p, 0, n) == SIZE_MAX);
        fill(p, 0, n, 7);
        CHECK(first_mismatch(p, 0, n, 7) == SIZE_MAX);
        free(p);
        // Retired by the reaper: the blocks come back (the pool range is
        // punched). Exactly: measured on all four, 0 KiB of difference.
        CHECK(eventually([&] { return fs_free() >= free0; }));
    }
}

TEST_CASE("a tiering move: a random-access disk region is promoted into memory, a memory region demoted to disk") {
    empty_spill_dir();
    const char *job = getenv("SPILLWAY_TIERING_JOB");
    REQUIRE(job);
    SpawnOptions plain;
    plain.program = job;
    int status = -1;
    // Without a limit every random disk region fits in memory (tiering.h).
    std::string out = run_helper({"want-promotion", "64", "4"}, &status, plain);
    INFO("want-promotion, exit " << status << ":\n" << out);
    auto k = keys(out);
    CHECK(status == 0);
    CHECK(k["placed"] == "1");
    CHECK(k["promoted"] == "1");
    CHECK(k["intact"] == "1");

    // Demotion: a margin larger than any limit makes the controller move
    // memory regions to disk at its first look (tiering.h: near_limit); the
    // growth job with nothing to grow waits for the move and checks every page.
    std::string why;
    auto cg = MemoryCgroup::create(&why);
    REQUIRE(cg);
    REQUIRE(cg->set_limit(2 * GiB));
    std::string cfg = scratch("demote-now.toml");
    std::ofstream(cfg) << "[tiering]\ndemote_margin = \"64GiB\"\n";
    SpawnOptions o = plain;
    o.set_env = {"SPILLWAY_CONFIG=" + cfg, "SPILLWAY_LOG=info"};
    std::string procs = cg->procs_file();
    o.before_exec = [procs] {
        if (!join_cgroup(procs.c_str())) _exit(3);
    };
    out = run_helper({"growth", "64", "0", "100"}, &status, o);
    INFO("growth, exit " << status << ":\n" << out);
    k = keys(out);
    CHECK(status == 0);
    CHECK(k["placed"] == "2");       // memory
    CHECK(k["after_growth"] == "1"); // disk, moved in place
    CHECK(k["intact"] == "1");
    unlink(cfg.c_str());
}

TEST_CASE("a fork child maps its inherited disk regions privately: its writes never reach the parent's files") {
    empty_spill_dir();
    const size_t n = 64 * MiB, m = 16 * MiB;
    void *own = spillway_alloc_disk(n, 0);
    void *pooled = malloc(m);
    REQUIRE(own);
    REQUIRE(pooled);
    REQUIRE(spillway_backing(pooled) == SPILLWAY_DISK);
    fill(own, 0, n, 11);
    fill(pooled, 0, m, 12);
    int st = in_fork_child([&] {
        // The inherited mappings are private copies now (rw-p), of the same files.
        std::string a = maps_line_of(own), b = maps_line_of(pooled);
        if (a.find(" rw-p ") == std::string::npos || b.find(" rw-p ") == std::string::npos) return 10;
        if (a.find(spill_dir()) == std::string::npos) return 11;
        if (first_mismatch(own, 0, n, 11) != SIZE_MAX || first_mismatch(pooled, 0, m, 12) != SIZE_MAX) return 12;
        fill(own, 0, n, 21);
        fill(pooled, 0, m, 22);
        if (first_mismatch(own, 0, n, 21) != SIZE_MAX || first_mismatch(pooled, 0, m, 22) != SIZE_MAX) return 13;
        free(own);
        free(pooled);
        return 0;
    });
    CHECK(st == 0);
    CHECK(first_mismatch(own, 0, n, 11) == SIZE_MAX);
    CHECK(first_mismatch(pooled, 0, m, 12) == SIZE_MAX);
    // The files themselves: dropping the parent's page cache and reading
    // from the filesystem gives the parent's bytes too.
    CHECK(spillway_release_page_cache(own) == 0);
    CHECK(first_mismatch(own, 0, n, 11) == SIZE_MAX);
    free(own);
    free(pooled);
}

TEST_CASE("spillway_export names the region's file on this filesystem; another process maps the same bytes") {
    empty_spill_dir();
    const size_t n = 32 * MiB;
    for (bool pooled : {false, true}) {
        void *p = pooled ? malloc(n) : spillway_alloc_disk(n, 0);
        REQUIRE(p);
        fill(p, 0, n, 31);
        char path[4096];
        REQUIRE(spillway_export(p, path, sizeof path) == 0);
        INFO(path);
        CHECK(std::string(path).rfind(spill_dir() + "/", 0) == 0);
        struct stat st;
        REQUIRE(stat(path, &st) == 0);
        CHECK((st.st_mode & 0777) == 0600);
        CHECK((size_t)st.st_size == n);
        std::string named = path;
        int child = in_fork_child([&] {
            // A mapping of the named file, as another process makes it.
            void *q = spillway_map(named.c_str(), n);
            if (!q) return 20;
            if (first_mismatch(q, 0, n, 31) != SIZE_MAX) return 21;
            fill(q, 0, 8 * MiB, 32); // shared: the exporter sees it
            free(q);
            return 0;
        });
        CHECK(child == 0);
        CHECK(first_mismatch(p, 0, 8 * MiB, 32) == SIZE_MAX);
        CHECK(first_mismatch(p, 8 * MiB, n - 8 * MiB, 31) == SIZE_MAX);
        // Found among this process's mappings by the device maps shows: on
        // btrfs not stat's (maps_device.h); a release by path refuses.
        CHECK(spillway_has_live_mapping(path) == 1);
        CHECK(spillway_release_page_cache_by_path(path) == -EBUSY);
        free(p);
        CHECK(eventually([&] { return spillway_has_live_mapping(path) == 0; }));
        CHECK(unlink(path) == 0);
    }
}

TEST_CASE("a filesystem that fills: the allocations that find no room fall back loudly, none raises SIGBUS") {
    empty_spill_dir();
    std::string err = scratch("full-job.err");
    SpawnOptions o;
    o.program = self_exe();
    o.set_env = {"SPILLWAY_POLICY=disk", "SPILLWAY_LOG=warn"};
    o.before_exec = [err] {
        int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0) _exit(3);
    };
    int status = -1;
    std::string out = run_helper({"full-job"}, &status, o);
    std::string log = slurp(err);
    INFO("full-job, exit " << status << " (135: SIGBUS):\n" << out << log);
    auto k = keys(out);
    CHECK(status == 0);
    CHECK(k["regions"] == "12");
    CHECK(std::stoi(k["on_disk"].empty() ? "0" : k["on_disk"]) >= 1); // the filesystem took some
    CHECK(std::stoi(k["on_disk"].empty() ? "99" : k["on_disk"]) < 12); // and could not take them all
    CHECK(log.find("could not reserve") != std::string::npos);
    CHECK(log.find("no_space") != std::string::npos);
    CHECK(list_dir(spill_dir()).empty());
    unlink(err.c_str());
}

TEST_CASE("a full filesystem: a spilled page written again after writeback does not raise SIGBUS") {
    empty_spill_dir();
    SpawnOptions o;
    o.program = self_exe();
    o.set_env = {"SPILLWAY_LOG=warn"};
    int status = -1;
    std::string out = run_helper({"rewrite-full-job"}, &status, o);
    unlink((spill_dir() + "/../filler").c_str()); // a job killed by SIGBUS left the filesystem full
    INFO("rewrite-full-job, exit " << status << " (135: SIGBUS):\n" << out);
    CHECK(status == 0);
    struct statfs fs;
    REQUIRE(statfs(spill_dir().c_str(), &fs) == 0);
    auto k = keys(out);
    if ((unsigned long)fs.f_type == BTRFS_SUPER_MAGIC) CHECK(k["in_place"] == "1");
    CHECK(list_dir(spill_dir()).empty());
}

// The spill file a strace -y annotation names at or after pos ("<DIR/#INODE>"):
// "DIR/#INODE", or "" when none of the spill directory's.
static std::string spill_file_named(const std::string &line, size_t pos, const std::string &dir) {
    size_t at = line.find("<" + dir, pos);
    if (at == std::string::npos) return "";
    size_t end = line.find('>', at);
    return end == std::string::npos ? "" : line.substr(at + 1, end - at - 1);
}

TEST_CASE("closes and punches, which a discard mount makes slow, are the reaper's: free() never waits for one") {
    empty_spill_dir();
    std::string log = scratch("reaper-job.strace");
    SpawnOptions o;
    o.program = "/usr/bin/strace";
    int status = -1;
    // -y names each descriptor's file: the spill files are the ones in the
    // spill directory. Every call that makes a descriptor is traced, so the
    // descriptors each file has open are counted.
    std::string out = run_helper({"-f", "-qq", "-y", "-e", "trace=openat,close,fallocate,fcntl,dup,dup2,dup3", "-o",
                                  log, self_exe(), "reaper-job"},
                                 &status, o);
    INFO("reaper-job under strace, exit " << status << ":\n" << out);
    REQUIRE(status == 0);
    auto k = keys(out);
    REQUIRE(k["retired"] == "1");
    long main_tid = std::stol(k["main_tid"]), reaper_tid = std::stol(k["reaper_tid"]);
    REQUIRE(reaper_tid > 0);
    // The slow close is a file's LAST close (the one that frees its blocks).
    // Other threads close descriptors of the same files that are never the
    // last: the writeback thread's and the sampler's dups, a move's O_DIRECT
    // view through /proc/self/fd. So each file's open descriptors are
    // counted (openat, dup, fcntl F_DUPFD give one; close takes one), by the
    // file strace names, not by descriptor number.
    std::ifstream in(log);
    std::string line, dir = spill_dir() + "/";
    std::map<long, std::string> unfinished; // tid: its call's first half
    std::map<std::string, int> open_fds;    // spill file: descriptors open
    std::map<long, int> closes, last_closes, punches;
    std::string main_lines, spill_lines; // for the message (the whole log is long)
    while (std::getline(in, line)) {
        long tid = atol(line.c_str());
        size_t call = line.find_first_not_of(' ', line.find(' '));
        if (call == std::string::npos) continue;
        // A call another thread's line interrupted: "TID call(... <unfinished ...>"
        // then "TID <... call resumed>...) = R": joined into one line.
        size_t cut = line.find(" <unfinished ...>");
        if (cut != std::string::npos) {
            unfinished[tid] = line.substr(0, cut);
            continue;
        }
        if (line.compare(call, 5, "<... ") == 0) {
            size_t resumed = line.find("resumed>", call);
            if (resumed == std::string::npos || !unfinished.count(tid)) continue;
            line = unfinished[tid] + line.substr(resumed + 8);
            unfinished.erase(tid);
            call = line.find_first_not_of(' ', line.find(' '));
        }
        // " = ", not ") = ": strace pads a short line's result to a column,
        // and a resumed call's line is short ("<... openat resumed>)     = 13</...>").
        // Matching ") = " missed those results: a view or dup opened by a
        // call another thread's line had split went uncounted, and its close
        // looked like the file's last (stop 41's CI failure, found in a kept
        // log: "<... fcntl resumed>)              = 17</...#133>").
        size_t eq = line.rfind(" = ");
        bool made = line.compare(call, 7, "openat(") == 0 || line.compare(call, 4, "dup") == 0 ||
                    (line.compare(call, 6, "fcntl(") == 0 && line.find("F_DUPFD") != std::string::npos);
        if (made) {
            if (eq != std::string::npos) {
                std::string file = spill_file_named(line, eq, dir);
                if (!file.empty()) open_fds[file]++;
            }
            continue;
        }
        std::string file = spill_file_named(line, call, dir);
        if (file.empty()) continue;
        spill_lines += line + "\n";
        if (tid == main_tid) main_lines += line + "\n";
        if (line.compare(call, 6, "close(") == 0) {
            closes[tid]++;
            if (--open_fds[file] <= 0) last_closes[tid]++;
        }
        if (line.compare(call, 10, "fallocate(") == 0 && line.find("PUNCH_HOLE") != std::string::npos)
            punches[tid]++;
    }
    // Short enough to survive meson's last-100-lines cut, so a failure says
    // which thread did what (CI run 16 failed here on every filesystem,
    // under load, with only the strace log's tail in its output); the main
    // thread's own calls first.
    std::string by_thread;
    for (auto &[tid, n] : closes) by_thread += " " + std::to_string(tid) + ":" + std::to_string(n) + "c";
    for (auto &[tid, n] : last_closes) by_thread += " " + std::to_string(tid) + ":" + std::to_string(n) + "l";
    for (auto &[tid, n] : punches) by_thread += " " + std::to_string(tid) + ":" + std::to_string(n) + "p";
    INFO("main " << main_tid << ", reaper " << reaper_tid << "; closes (c), last closes (l) and punches (p) of "
                 << "spill files by thread:" << by_thread << "\nthe main thread's calls on spill files:\n"
                 << main_lines << "every thread's:\n" << spill_lines);
    CHECK(closes[reaper_tid] >= 2);  // the file of its own, and the exported one
    CHECK(punches[reaper_tid] >= 2); // the pooled region, and the range the exported one left
    CHECK(last_closes[main_tid] == 0);
    CHECK(punches[main_tid] == 0);
    unlink(log.c_str());
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "full-job") == 0) return full_job();
    if (argc == 2 && strcmp(argv[1], "reaper-job") == 0) return reaper_job();
    if (argc == 2 && strcmp(argv[1], "rewrite-full-job") == 0) return rewrite_full_job();
    std::string why;
    if (!MemoryCgroup::create(&why)) {
        fprintf(stderr, "SKIP: %s\n", why.c_str());
        return 77;
    }
    return run_catch_session(argc, argv);
}
