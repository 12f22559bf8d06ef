// test_top.cpp — the pieces of `spillway top`: /proc and cgroup parsers (v1
// and v2), the live snapshot reader, rates between two samples, the frame
// (what a user reads, and no escape sequence without colour) and the JSON
// line `run --record` writes.
#include "cgroup_figures.h"
#include "job_sample.h"
#include "json.h"
#include "live_snapshot.h"
#include "proc_figures.h"
#include "sample_fixture.h"
#include "text_sum.h"
#include "top_frame.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace spillway::cli;

namespace {

std::string joined(const std::vector<std::string> &lines) {
    std::string out;
    for (const std::string &l : lines) out += l + "\n";
    return out;
}

const char kSnapshot[] =
    "{\"pid\":4242,\"mono_ns\":5000000000,\"live_bytes\":{\"disk\":67108864,\"memory\":0,\"anon\":0},"
    "\"peak_bytes\":{\"disk\":67108864,\"memory\":0,\"anon\":0},\"fallbacks\":2,\"regions\":["
    "{\"start\":140000000000,\"len\":67108864,\"backing\":\"disk\",\"phase\":\"random\",\"phase_ms\":2500,"
    "\"advice\":\"random\",\"fault_pages_s\":300},"
    "{\"start\":150000000000,\"len\":8388608,\"backing\":\"memory\",\"phase\":\"undecided\",\"phase_ms\":0,"
    "\"advice\":\"normal\",\"fault_pages_s\":0,\"moving_to\":\"disk\"}],\"unlisted\":3}\n";

// text as the shim writes it since the text_sum head: the head, then text
// without its opening brace (text_sum.h).
std::string summed(const std::string &text) {
    std::string out(spillway::text_sum::kHeadLen, ' ');
    out += text.substr(1);
    spillway::text_sum::write_head(out.data(), out.size() - spillway::text_sum::kHeadLen);
    return out;
}

JobSample sample_at(uint64_t mono_ns, uint64_t majflt, uint64_t read_bytes, uint64_t cg_majfault) {
    JobSample s;
    s.mono_ns = mono_ns;
    ProcessSample p;
    p.pid = 4242;
    p.comm = "python3";
    p.rank = "1";
    p.local_rank = "1";
    p.cgroup = "/job";
    p.counters_known = true;
    p.counters.majflt = majflt;
    p.counters.read_bytes = read_bytes;
    p.counters.io_known = true;
    p.has_snapshot = true;
    auto snap = parse_live_snapshot(kSnapshot);
    REQUIRE(snap);
    p.unlisted = snap->unlisted;
    p.fallbacks = snap->fallbacks;
    for (const LiveRegionView &r : snap->regions) p.regions.push_back(RegionSample{r, r.len / 4});
    s.processes.push_back(p);
    CgroupSample c;
    c.figures.name = "/job";
    c.figures.dir = "/sys/fs/cgroup/job";
    c.figures.version = 2;
    c.figures.known = true;
    c.figures.usage = 768ull << 20;
    c.figures.limit = 1ull << 30;
    c.figures.anon = 100ull << 20;
    c.figures.file = 600ull << 20;
    c.figures.majfault = cg_majfault;
    c.figures.psi_scope = "cgroup";
    c.figures.psi_some10 = 12.5;
    s.cgroups.push_back(c);
    return s;
}

} // namespace

TEST_CASE("top: /proc/PID/stat, io, smaps and environ are read as the kernel writes them") {
    ProcCounters c;
    // comm with a space and a parenthesis: fields are counted from the last ')'.
    REQUIRE(parse_stat("123 (a b) c) S 77 123 123 0 -1 4194560 1500 0 42 0 9 1 0 0 20 0 1 0", c));
    CHECK(c.state == 'S');
    CHECK(c.start_ticks == 0); // a line cut before field 22
    CHECK_FALSE(has_exited(c));
    CHECK(c.ppid == 77);
    CHECK(c.minflt == 1500);
    CHECK(c.majflt == 42);
    REQUIRE(parse_stat("9 (python3) S 1 9 9 0 -1 4194560 64 0 0 0 0 0 0 0 20 0 1 0 123456 1000 50", c));
    CHECK(c.start_ticks == 123456);
    REQUIRE(parse_stat("9 (python3) Z 77 9 9 0 -1 4227148 64 0 0 0 0 0 0 0 20 0 1 0", c));
    CHECK(has_exited(c)); // a zombie: its /proc/PID/cgroup already names the root
    REQUIRE(parse_stat("9 (python3) R 77 9 9 0 -1 4227148 64 0 0 0 0 0 0 0 20 0 1 0", c));
    CHECK(has_exited(c)); // still running its exit (PF_EXITING): the same
    REQUIRE(parse_stat("9 (python3) R 77 9 9 0 -1 4194560 64 0 0 0 0 0 0 0 20 0 1 0", c));
    CHECK_FALSE(has_exited(c));
    CHECK_FALSE(parse_stat("garbage", c));
    uint64_t rb = 0;
    REQUIRE(parse_io("rchar: 10\nwchar: 0\nsyscr: 1\nsyscw: 0\nread_bytes: 8192\nwrite_bytes: 0\n", rb));
    CHECK(rb == 8192);

    auto vmas = parse_smaps("7f0000000000-7f0000400000 rw-s 00000000 fd:01 12 /spill/#12 (deleted)\n"
                            "Size:               4096 kB\nRss:                1024 kB\nPss: 1024 kB\n"
                            "7f0000400000-7f0000800000 rw-p 00000000 00:00 0 \nSize: 4096 kB\nRss: 2048 kB\n");
    REQUIRE(vmas.size() == 2);
    CHECK(vmas[0].start == 0x7f0000000000ull);
    CHECK(vmas[0].rss == 1024 * 1024);
    CHECK(resident_in(vmas, 0x7f0000000000ull, 4 << 20) == 1024 * 1024);
    CHECK(resident_in(vmas, 0x7f0000000000ull, 8 << 20) == 3 * 1024 * 1024);
    CHECK(resident_in(vmas, 0x7f0000600000ull, 2 << 20) == 1024 * 1024); // half of the second, pro rata
    CHECK(resident_in(vmas, 0x100000, 4096) == 0);
    CHECK(is_mapped(vmas, 0x7f0000000000ull, 8 << 20)); // two adjacent mappings
    CHECK(is_mapped(vmas, 0x7f0000200000ull, 1 << 20));
    CHECK_FALSE(is_mapped(vmas, 0x7f0000600000ull, 4 << 20)); // runs past the end: freed meanwhile
    CHECK_FALSE(is_mapped(vmas, 0x100000, 4096));
    CHECK(vmas[0].accessible);
    CHECK(vmas[0].path == "/spill/#12 (deleted)");
    CHECK(vmas[1].path.empty());

    // The snapshot is up to a second old: a region freed since keeps its
    // range mapped PROT_NONE in the arena, and a new region at the address
    // may have another backing. Neither is the snapshot's region any more.
    auto arena = parse_smaps("7f0000000000-7f0000400000 rw-s 00000000 fd:01 12 /var/tmp/spillway-0/#12 (deleted)\n"
                             "Rss: 1024 kB\n"
                             "7f0000400000-7f0000800000 ---p 00000000 00:00 0 \nRss: 0 kB\n"
                             "7f0000800000-7f0000c00000 rw-s 00000000 00:01 7 /memfd:spillway (deleted)\nRss: 4096 kB\n"
                             "7f0000c00000-7f0001000000 rw-p 00000000 00:00 0\nRss: 4096 kB\n");
    REQUIRE(arena.size() == 4);
    CHECK_FALSE(arena[1].accessible);
    CHECK(arena[2].path == "/memfd:spillway (deleted)");
    CHECK(arena[3].path.empty()); // no trailing space after the inode
    const uint64_t at = 0x7f0000000000ull, MiB4 = 4 << 20;
    CHECK(is_mapped(arena, at, MiB4, "disk"));
    CHECK_FALSE(is_mapped(arena, at, MiB4, "memory"));         // a disk region now where a memory one was
    CHECK_FALSE(is_mapped(arena, at + MiB4, MiB4, "disk"));    // freed: PROT_NONE
    CHECK_FALSE(is_mapped(arena, at + MiB4, MiB4));
    CHECK(is_mapped(arena, at + 2 * MiB4, MiB4, "memory"));
    CHECK_FALSE(is_mapped(arena, at + 2 * MiB4, MiB4, "anon"));
    CHECK(is_mapped(arena, at + 3 * MiB4, MiB4, "anon"));
    CHECK_FALSE(is_mapped(arena, at + 3 * MiB4, MiB4, "disk"));
    CHECK(is_mapped(arena, at + 2 * MiB4, 2 * MiB4, "memory", "anon")); // a move under way: either

    std::string env("PATH=/bin\0RANK=3\0LOCAL_RANK=1\0RANKING=no\0", 41);
    auto vars = parse_environ(env, {"RANK", "LOCAL_RANK", "WORLD_SIZE"});
    CHECK(vars.size() == 2);
    CHECK(vars["RANK"] == "3");
    CHECK(vars["LOCAL_RANK"] == "1");

    CHECK(maps_mention_shim("7f-80 r-xp 0 fd:01 9 /usr/lib/libspillway.so\n"));
    CHECK(maps_mention_shim("7f-80 r-xp 0 fd:01 9 /build/shim/libspillway.so.0\n"));
    CHECK_FALSE(maps_mention_shim("7f-80 r-xp 0 fd:01 9 /usr/lib/libspillwayish.so\n"));
    // Reinstalled or rebuilt while the job runs: still the shim the job has.
    CHECK(maps_mention_shim("7f-80 r-xp 0 fd:01 9 /build/shim/libspillway.so (deleted)\n"));
}

TEST_CASE("top: the memory cgroup is found and read for v1 and v2") {
    int version = 0;
    std::string name;
    REQUIRE(parse_cgroup_membership("12:pids:/\n4:memory:/job/a\n0::/\n", version, name));
    CHECK(version == 1);
    CHECK(name == "/job/a");
    REQUIRE(parse_cgroup_membership("0::/kubepods/pod1/c1\n", version, name));
    CHECK(version == 2);
    CHECK(name == "/kubepods/pod1/c1");
    REQUIRE(parse_cgroup_membership("5:cpu,memory:/x\n", version, name)); // co-mounted controllers
    CHECK(version == 1);
    CHECK_FALSE(parse_cgroup_membership("3:cpu:/x\n", version, name));

    // Where the group's files are: test_cgroup_location.cpp. A sample keys
    // its groups by directory; two whose files were not found stay two.
    CgroupFigures found, lost_a, lost_b;
    found.name = "/job";
    found.dir = "/sys/fs/cgroup/job";
    lost_a.name = "/../a";
    lost_b.name = "/../b";
    CHECK(cgroup_key(found) == "/sys/fs/cgroup/job");
    CHECK(cgroup_key(lost_a) != cgroup_key(lost_b));
    CHECK(cgroup_key(lost_a) != cgroup_key(found));

    CgroupFigures v1;
    parse_memory_stat("cache 10\nrss 20\nshmem 1\ndirty 2\nwriteback 3\npgmajfault 4\n"
                      "total_cache 100\ntotal_rss 200\ntotal_shmem 5\ntotal_dirty 6\ntotal_writeback 7\n"
                      "total_pgmajfault 8\ntotal_workingset_refault_file 9\n",
                      1, v1);
    CHECK(v1.file == 100);
    CHECK(v1.anon == 200);
    CHECK(v1.shmem == 5);
    CHECK(v1.dirty == 6);
    CHECK(v1.writeback == 7);
    CHECK(v1.majfault == 8);
    CHECK(v1.refault_file == 9);
    CgroupFigures v2;
    parse_memory_stat("anon 11\nfile 22\nshmem 3\nfile_dirty 4\nfile_writeback 5\npgmajfault 6\n"
                      "workingset_refault_file 7\n",
                      2, v2);
    CHECK(v2.anon == 11);
    CHECK(v2.file == 22);
    CHECK(v2.dirty == 4);
    CHECK(v2.writeback == 5);
    CHECK(v2.majfault == 6);
    CHECK(v2.refault_file == 7);

    // A limit set on an ancestor (a Slurm job's, a systemd slice's) binds
    // the group too: v1 gives the lowest as hierarchical_memory_limit...
    CgroupFigures step;
    parse_memory_stat("hierarchical_memory_limit 1073741824\ntotal_rss 1\n", 1, step);
    CHECK(step.limit == 1073741824); // no limit of its own
    step.limit = 2147483648;
    parse_memory_stat("hierarchical_memory_limit 1073741824\n", 1, step);
    CHECK(step.limit == 1073741824);
    CgroupFigures free_v1;
    parse_memory_stat("hierarchical_memory_limit 9223372036854771712\n", 1, free_v1);
    CHECK(free_v1.limit == 0); // v1's "none"
    // ... v2 by walking up to the mount point.
    auto fake_limit = [](const std::string &dir) -> uint64_t {
        if (dir == "/sys/fs/cgroup/job") return 1000;
        if (dir == "/sys/fs/cgroup/job/step") return 0; // "max"
        if (dir == "/sys/fs/cgroup") return 1; // the root has no memory.max: never read
        return 5000;
    };
    CHECK(lowest_limit_up_to("/sys/fs/cgroup", "/sys/fs/cgroup/job/step/task", 0, fake_limit) == 1000);
    CHECK(lowest_limit_up_to("/sys/fs/cgroup", "/sys/fs/cgroup/job/step/task", 700, fake_limit) == 700);
    CHECK(lowest_limit_up_to("/sys/fs/cgroup", "/sys/fs/cgroup/other", 0, fake_limit) == 0);
    CHECK(lowest_limit_up_to("/sys/fs/cgroup", "/sys/fs/cgroup", 0, fake_limit) == 0);

    double some = 0, full = 0;
    REQUIRE(parse_psi("some avg10=16.49 avg60=12.79 avg300=5.16 total=262647447\n"
                      "full avg10=8.54 avg60=7.42 avg300=3.18 total=77358758\n",
                      some, full));
    CHECK(some == Approx(16.49));
    CHECK(full == Approx(8.54));
    CHECK_FALSE(parse_psi("", some, full));

    // This process's own group, read for real: whichever version the host has.
    CgroupFigures mine = locate_cgroup(getpid());
    REQUIRE(mine.version != 0);
    read_cgroup_figures(mine);
    if (mine.name != "/" || mine.version == 1) CHECK(mine.known);
}

TEST_CASE("top: a live snapshot is read whole, or not at all") {
    auto s = parse_live_snapshot(kSnapshot);
    REQUIRE(s);
    CHECK(s->pid == 4242);
    CHECK(s->unlisted == 3);
    CHECK(s->fallbacks == 2);
    CHECK(s->live_bytes[0] == 67108864);
    REQUIRE(s->regions.size() == 2);
    CHECK(s->regions[0].phase == "random");
    CHECK(s->regions[0].advice == "random");
    CHECK(s->regions[0].phase_ms == 2500);
    CHECK(s->regions[0].fault_pages_s == 300);
    CHECK(s->regions[1].backing == "memory");
    CHECK(s->regions[0].moving_to.empty());
    CHECK(s->regions[1].moving_to == "disk"); // being moved: in two homes until the move ends
    std::string cut(kSnapshot);
    CHECK_FALSE(parse_live_snapshot(cut.substr(0, cut.size() / 2)));
    CHECK_FALSE(find_live_snapshot(getpid())); // the test process runs no shim
}

TEST_CASE("top: the snapshot is found in the process's spillway-live memfd, and only its own") {
    CHECK(is_live_memfd_link("/memfd:spillway-live (deleted)"));
    CHECK_FALSE(is_live_memfd_link("/memfd:spillway (deleted)"));
    CHECK_FALSE(is_live_memfd_link("/spill/spillway-live (deleted)"));
    // The snapshot names the pid the shim sees: inside a container, its own
    // namespace's, the last of NSpid.
    CHECK(innermost_pid("Name:\tpython3\nTgid:\t4242\nNSpid:\t4242\t7\nNSpgid:\t4242\t7\n", 4242) == 7);
    CHECK(innermost_pid("Name:\tpython3\nNSpid:\t4242\n", 4242) == 4242);
    CHECK(innermost_pid("Name:\tpython3\nNSpid:\t4242\t7", 4242) == 7); // the last line, no newline
    CHECK(innermost_pid("Name:\told kernel\n", 4242) == 4242);
    CHECK(innermost_pid("", 4242) == 4242); // exited
    int fd = memfd_create("spillway-live", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    std::string mine = kSnapshot;
    mine.replace(mine.find("4242"), 4, std::to_string(getpid()));
    REQUIRE(pwrite(fd, mine.data(), mine.size(), 0) == (ssize_t)mine.size());
    auto s = find_live_snapshot(getpid());
    REQUIRE(s);
    CHECK(s->regions.size() == 2);
    // A parent's snapshot inherited across fork names another pid: not ours.
    REQUIRE(ftruncate(fd, 0) == 0);
    REQUIRE(pwrite(fd, kSnapshot, strlen(kSnapshot), 0) == (ssize_t)strlen(kSnapshot));
    CHECK_FALSE(find_live_snapshot(getpid()));
    close(fd);
}

TEST_CASE("top: a fork child's private copy of a region is its anonymous memory, as far as it wrote it") {
    const char child_snapshot[] =
        "{\"pid\":4243,\"mono_ns\":5000000000,\"live_bytes\":{\"disk\":0,\"memory\":0,\"anon\":0},"
        "\"peak_bytes\":{\"disk\":0,\"memory\":0,\"anon\":0},\"fallbacks\":0,\"regions\":["
        "{\"start\":140000000000,\"len\":67108864,\"backing\":\"disk\",\"phase\":\"undecided\",\"phase_ms\":0,"
        "\"advice\":\"normal\",\"fault_pages_s\":0,\"private\":true}],\"unlisted\":0}\n";
    auto snap = parse_live_snapshot(child_snapshot);
    REQUIRE(snap);
    REQUIRE(snap->regions.size() == 1);
    CHECK(snap->regions[0].is_private);
    CHECK_FALSE(parse_live_snapshot(kSnapshot)->regions[0].is_private);

    // Its mapping: 64 MiB of the parent's file, 16 MiB of it resident, 4 MiB copied on write.
    auto vmas = parse_smaps("2098a67800-209ca67800 rw-p 00000000 fd:01 12 /var/tmp/spillway-0/#12 (deleted)\n"
                            "Size: 65536 kB\nRss: 16384 kB\nAnonymous: 4096 kB\n");
    REQUIRE(vmas.size() == 1);
    CHECK(vmas[0].anonymous == 4u << 20);
    CHECK(anonymous_in(vmas, 140000000000ull, 64u << 20) == 4u << 20);
    CHECK(is_mapped(vmas, 140000000000ull, 64u << 20, "disk"));

    JobSample s = spillway::test::derived_sample(
        4243, "python3", {RegionSample{snap->regions[0], anonymous_in(vmas, 140000000000ull, 64u << 20)}});
    const ProcessSample &c = s.processes[0];
    CHECK(c.count[0] == 0); // no disk bytes of its own: the parent's pages are the parent's
    CHECK(c.resident[0] == 0);
    CHECK(c.count[2] == 1);
    CHECK(c.reserved[2] == 64u << 20);
    CHECK(c.resident[2] == 4u << 20);
    FrameStyle plain;
    std::string frame = joined(render_frame(s, plain));
    CHECK(frame.find("disk+cow res/reserved 4.00MiB/64.0MiB") != std::string::npos);
    std::string line = sample_json(s, 0);
    CHECK(line.find("\"backing\":\"disk\",\"private\":true") != std::string::npos);
}

TEST_CASE("top: a job's process whose parent exits stays in the job, with its start time") {
    // This process -> child -> grandchild; the child exits, and the
    // grandchild is reparented out of this process's tree.
    int to_child[2], to_grandchild[2], pid_pipe[2];
    REQUIRE(pipe(to_child) == 0);
    REQUIRE(pipe(to_grandchild) == 0);
    REQUIRE(pipe(pid_pipe) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(to_child[1]);
        close(to_grandchild[1]);
        pid_t g = fork();
        if (g == 0) {
            char c;
            while (read(to_grandchild[0], &c, 1) > 0) {
            } // until the test closes its end
            _exit(0);
        }
        if (write(pid_pipe[1], &g, sizeof g) != sizeof g) _exit(3);
        char c;
        while (read(to_child[0], &c, 1) > 0) {
        }
        _exit(0);
    }
    close(to_child[0]);
    close(to_grandchild[0]);
    close(pid_pipe[1]);
    pid_t grandchild = 0;
    REQUIRE(read(pid_pipe[0], &grandchild, sizeof grandchild) == sizeof grandchild);
    close(pid_pipe[0]);

    std::map<pid_t, uint64_t> job = job_processes({{getpid(), 0}});
    CHECK(job.count(child));
    CHECK(job.count(grandchild));
    CHECK(job[getpid()] != 0); // start times are read

    close(to_child[1]); // the child exits; the grandchild is reparented
    REQUIRE(waitpid(child, nullptr, 0) == child);
    job = job_processes(job);
    CHECK_FALSE(job.count(child));
    CHECK(job.count(grandchild)); // still the job's
    CHECK_FALSE(job_processes({{getpid(), 0}}).count(grandchild)); // no longer in this process's tree
    CHECK(job_processes({{grandchild, 1}}).empty()); // the same pid started at another time: not the job's

    close(to_grandchild[1]);
}

TEST_CASE("top: rates come from two samples; the frame shows them, plainly without colour") {
    JobSample first = sample_at(1'000'000'000, 100, 4096 * 100, 1000);
    derive(first, JobSample{});
    CHECK(first.processes[0].majflt_per_s < 0); // no previous sample: unknown
    CHECK(first.processes[0].count[0] == 1);
    CHECK(first.processes[0].reserved[0] == 67108864);
    CHECK(first.processes[0].resident[0] == 67108864 / 4);
    CHECK(first.processes[0].count[1] == 1);

    JobSample second = sample_at(3'000'000'000, 300, 4096 * 100 + 200 * 8192, 1600);
    derive(second, first);
    CHECK(second.processes[0].majflt_per_s == Approx(100));
    CHECK(second.processes[0].bytes_per_fault == Approx(8192));
    CHECK(second.cgroups[0].majfault_per_s == Approx(300));
    // The same pid, another process (it started at another time): no rate
    // across the two.
    JobSample reused = second;
    reused.processes[0].counters.start_ticks = first.processes[0].counters.start_ticks + 1;
    derive(reused, first);
    CHECK(reused.processes[0].majflt_per_s < 0);

    FrameStyle plain;
    std::string frame = joined(render_frame(second, plain));
    CHECK(frame.find('\033') == std::string::npos);
    CHECK(frame.find("spillway top: 1 process under the shim") != std::string::npos);
    CHECK(frame.find("cgroup /job (v2): 768MiB of 1.00GiB (75%)") != std::string::npos);
    CHECK(frame.find("anon 100MiB  file 600MiB") != std::string::npos);
    CHECK(frame.find("major faults/s 300") != std::string::npos);
    CHECK(frame.find("PSI (cgroup) some 12.50%") != std::string::npos);
    CHECK(frame.find("4242     1      python3") != std::string::npos);
    CHECK(frame.find("100     8.00KiB  16.0MiB/64.0MiB (1)") != std::string::npos);
    CHECK(frame.find("disk   res/reserved 16.0MiB/64.0MiB") != std::string::npos);
    CHECK(frame.find("memory>disk res/reserved") != std::string::npos); // the region being moved
    CHECK(frame.find("phase random 2.5s  advice random  faulted 300 pages/s") != std::string::npos);
    CHECK(frame.find("... 3 more regions") != std::string::npos);
    CHECK(frame.find("fallbacks so far: 2") != std::string::npos);

    FrameStyle coloured;
    coloured.color = true;
    CHECK(joined(render_frame(second, coloured)).find("\033[") != std::string::npos);

    JobSample none;
    CHECK(joined(render_frame(none, plain)).find("no process maps libspillway.so") != std::string::npos);

    // A group outside what the tool sees: "?" and why, never figures.
    JobSample elsewhere = second;
    CgroupFigures &cg = elsewhere.cgroups[0].figures;
    cg.name = "/../b";
    cg.dir.clear();
    cg.known = false;
    cg.unlocated = "outside what this tool sees of the v1 memory hierarchy";
    frame = joined(render_frame(elsewhere, plain));
    CHECK(frame.find("cgroup /../b (v2): ? (outside what this tool sees of the v1 memory hierarchy)") != std::string::npos);
    CHECK(frame.find("768MiB") == std::string::npos);
    CHECK(frame.find("major faults/s") == std::string::npos);
}

TEST_CASE("top: a sample is one JSON line that reads back") {
    JobSample first = sample_at(1'000'000'000, 100, 0, 1000);
    JobSample second = sample_at(2'000'000'000, 150, 0, 1000);
    derive(second, first);
    std::string line = sample_json(second, 500'000'000);
    CHECK(line.find('\n') == std::string::npos);
    auto v = parse_object(line);
    REQUIRE(v);
    CHECK(number(member(*v, "t")) == Approx(1.5));
    const Json &cg = items(member(*v, "cgroups")).at(0);
    CHECK(count(cg, "limit") == (1ull << 30));
    CHECK(count(cg, "usage") == (768ull << 20));
    CHECK_FALSE(member(cg, "unlocated")); // only for a group whose files were not found

    JobSample elsewhere = second;
    elsewhere.cgroups[0].figures.dir.clear();
    elsewhere.cgroups[0].figures.known = false;
    elsewhere.cgroups[0].figures.unlocated = "outside";
    auto e = parse_object(sample_json(elsewhere, 500'000'000));
    REQUIRE(e);
    const Json &ecg = items(member(*e, "cgroups")).at(0);
    CHECK_FALSE(boolean(member(ecg, "known"))); // `report` leaves it out
    CHECK(text(member(ecg, "unlocated")) == "outside");
    const Json &p = items(member(*v, "processes")).at(0);
    CHECK(count(p, "pid") == 4242);
    CHECK(text(member(p, "rank")) == "1");
    CHECK(number(member(p, "majflt_s")) == Approx(50));
    CHECK(items(member(p, "regions")).size() == 2);
    CHECK(text(member(items(member(p, "regions"))[0], "phase")) == "random");
}

TEST_CASE("top: a snapshot whose head does not hold is a torn read, rejected even when it parses") {
    std::string whole = summed(kSnapshot);
    auto s = parse_live_snapshot(whole);
    REQUIRE(s);
    CHECK(s->pid == 4242);
    CHECK(s->regions.size() == 2);
    // A figure rewritten meanwhile (same length, still valid JSON): the hash tells.
    std::string changed = whole;
    size_t at = changed.find("\"fault_pages_s\":300");
    REQUIRE(at != std::string::npos);
    changed[at + 17] = '9';
    REQUIRE(parse_object(changed)); // still one valid JSON object
    CHECK_FALSE(parse_live_snapshot(changed));
    // The new text over a longer old one not yet truncated: the length tells.
    CHECK_FALSE(parse_live_snapshot(whole + "\"unlisted\":3}\n"));
    // The new text cut short while the file grows.
    CHECK_FALSE(parse_live_snapshot(whole.substr(0, whole.size() - 2)));
    // An older shim's text (no head) is judged as before: it parses.
    CHECK(parse_live_snapshot(kSnapshot));

    // Read from a memfd as top finds it: a torn text that stays torn is never believed.
    int fd = memfd_create("spillway-live", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    std::string mine = kSnapshot;
    mine.replace(mine.find("4242"), 4, std::to_string(getpid()));
    std::string good = summed(mine);
    REQUIRE(pwrite(fd, good.data(), good.size(), 0) == (ssize_t)good.size());
    REQUIRE(find_live_snapshot(getpid()));
    std::string torn = good;
    torn[torn.find("\"fault_pages_s\":300") + 17] = '9';
    REQUIRE(pwrite(fd, torn.data(), torn.size(), 0) == (ssize_t)torn.size());
    CHECK_FALSE(find_live_snapshot(getpid()));
    close(fd);
}

TEST_CASE("top: a disk region's resident is its page cache as the shim measured it") {
    const char snapshot[] =
        "{\"pid\":4244,\"mono_ns\":5000000000,\"live_bytes\":{\"disk\":134217728,\"memory\":0,\"anon\":0},"
        "\"peak_bytes\":{\"disk\":134217728,\"memory\":0,\"anon\":0},\"fallbacks\":0,\"regions\":["
        "{\"start\":140000000000,\"len\":67108864,\"backing\":\"disk\",\"phase\":\"undecided\",\"phase_ms\":0,"
        "\"advice\":\"normal\",\"fault_pages_s\":0,\"cached\":67108864,\"dirty\":8388608},"
        "{\"start\":150000000000,\"len\":67108864,\"backing\":\"disk\",\"phase\":\"undecided\",\"phase_ms\":0,"
        "\"advice\":\"normal\",\"fault_pages_s\":0}],\"unlisted\":0}\n";
    auto snap = parse_live_snapshot(summed(snapshot));
    REQUIRE(snap);
    REQUIRE(snap->regions.size() == 2);
    const LiveRegionView &measured = snap->regions[0], &unmeasured = snap->regions[1];
    CHECK(measured.cache_known);
    CHECK(measured.cached == 64u << 20);
    CHECK(measured.dirty == 8u << 20);
    CHECK_FALSE(unmeasured.cache_known); // absent: unknown, not 0
    CHECK_FALSE(parse_live_snapshot(kSnapshot)->regions[0].cache_known);

    // 64 MiB cached, 1 MiB of it mapped (the job or the pacer unmapped the rest).
    auto vmas = parse_smaps("2098a67800-209ca67800 rw-s 00000000 fd:01 12 /var/tmp/spillway-0/#12 (deleted)\n"
                            "Size: 65536 kB\nRss: 1024 kB\n"
                            "22ecb25c00-22f0b25c00 rw-s 04000000 fd:01 12 /var/tmp/spillway-0/#12 (deleted)\n"
                            "Size: 65536 kB\nRss: 2048 kB\n");
    RegionSample a = region_sample(measured, vmas);
    CHECK(a.cache_counted);
    CHECK(a.mapped == 1u << 20);
    CHECK(a.resident == 64u << 20);
    RegionSample b = region_sample(unmeasured, vmas); // no figure (Linux before 6.5): mapped pages, said so
    CHECK_FALSE(b.cache_counted);
    CHECK(b.resident == 2u << 20);
    // Mapped now beyond the cache measured up to a second ago (the job is
    // filling it): every mapped page of a shared file mapping is cached, so
    // Rss is a floor.
    LiveRegionView stale = measured;
    stale.cached = 512 << 10;
    CHECK(region_sample(stale, vmas).resident == 1u << 20);
    // A fork child's private copy: what it copied, never the parent's cache,
    // even if an entry carried a figure.
    auto child = parse_smaps("2098a67800-209ca67800 rw-p 00000000 fd:01 12 /var/tmp/spillway-0/#12 (deleted)\n"
                             "Size: 65536 kB\nRss: 16384 kB\nAnonymous: 4096 kB\n");
    LiveRegionView copy = measured;
    copy.is_private = true;
    RegionSample c = region_sample(copy, child);
    CHECK(c.resident == 4u << 20);
    CHECK_FALSE(c.cache_counted);
    // A memory (memfd) region: its pages in the memfd, as a disk region's
    // in the page cache (a page unmapped by MADV_DONTNEED stays, charged).
    LiveRegionView memory = measured;
    memory.backing = "memory";
    CHECK(region_sample(memory, vmas).resident == 64u << 20);
    CHECK(region_sample(memory, vmas).cache_counted);
    // An anonymous region has no file to measure: Rss, a figure or not.
    LiveRegionView anon = measured;
    anon.backing = "anon";
    CHECK(region_sample(anon, vmas).resident == 1u << 20);
    CHECK_FALSE(region_sample(anon, vmas).cache_counted);

    JobSample s;
    s.mono_ns = 1;
    ProcessSample p;
    p.pid = 4244;
    p.comm = "python3";
    p.has_snapshot = true;
    p.regions = {a, b};
    s.processes.push_back(p);
    derive(s, JobSample{});
    CHECK(s.processes[0].resident[0] == (64u << 20) + (2u << 20));
    FrameStyle plain;
    std::string frame = joined(render_frame(s, plain));
    CHECK(frame.find("disk   res/reserved 64.0MiB/64.0MiB") != std::string::npos);
    CHECK(frame.find("dirty 8.00MiB") != std::string::npos);
    CHECK(frame.find("66.0MiB/128MiB (2)") != std::string::npos);
    CHECK(frame.find("disk resident counts mapped pages only") != std::string::npos); // the unmeasured one
    s.processes[0].regions = {a};
    derive(s, JobSample{});
    CHECK(joined(render_frame(s, plain)).find("mapped pages only") == std::string::npos);

    std::string line = sample_json(s, 0);
    auto v = parse_object(line);
    REQUIRE(v);
    const Json &r = items(member(items(member(*v, "processes")).at(0), "regions")).at(0);
    CHECK(count(r, "resident") == 64u << 20);
    CHECK(count(r, "mapped") == 1u << 20);
    CHECK(count(r, "cached") == 64u << 20);
    CHECK(count(r, "dirty") == 8u << 20);
    s.processes[0].regions = {b};
    std::string unmeasured_line = sample_json(s, 0);
    CHECK(unmeasured_line.find("\"cached\"") == std::string::npos);
    CHECK(unmeasured_line.find("\"mapped\":2097152") != std::string::npos);
}

TEST_CASE("top: a column's total holding an estimated region is marked ~ as the region is") {
    LiveRegionView exact, guessed, disk;
    exact.start = 0x7f0000000000;
    exact.len = 8u << 20;
    exact.backing = "anon";
    exact.phase = "undecided";
    exact.advice = "normal";
    guessed = exact;
    guessed.start = 0x7f0000800000;
    disk = exact;
    disk.start = 0x7f1000000000;
    disk.backing = "disk";
    RegionSample a{exact, 8u << 20}, b{guessed, 4u << 20}, d{disk, 2u << 20};
    b.estimated = true; // shares a VMA with a, pagemap not read: prorated
    JobSample s = spillway::test::derived_sample(4244, "python3", {a, b, d});
    CHECK(s.processes[0].estimated[2]);
    CHECK_FALSE(s.processes[0].estimated[0]);
    std::string frame = joined(render_frame(s, FrameStyle{}));
    INFO(frame);
    // The process's row: disk exact, memory empty, anon a sum with an estimate in it.
    CHECK(frame.find(" 2.00MiB/8.00MiB (1)") != std::string::npos);
    CHECK(frame.find("~2.00MiB/8.00MiB") == std::string::npos);
    CHECK(frame.find("~12.0MiB/16.0MiB (2)") != std::string::npos);
    CHECK(frame.find("res/reserved ~4.00MiB/8.00MiB") != std::string::npos);
    CHECK(frame.find("res/reserved 8.00MiB/8.00MiB") != std::string::npos);
    CHECK(frame.find("~ estimated") != std::string::npos);
    // The columns stay aligned: the row's anon column starts where its header does.
    size_t header = frame.find("ANON res/resv"), row = frame.find("\n4244 ");
    REQUIRE(header != std::string::npos);
    REQUIRE(row != std::string::npos);
    size_t header_col = header - frame.rfind('\n', header) - 1;
    CHECK(frame.substr(row + 1 + header_col, 1) == "~");
}
