// proc_figures.h — what /proc says about one process under the shim:
// whether it is one, its fault and read counters, its memory mappings with
// their resident bytes, and a few environment variables (RANK, LOCAL_RANK).
//
// Why /proc for these: the kernel's own counts are authoritative and need
// no cooperation from the process; the shim's live snapshot
// (live_snapshot.h) adds only what the kernel cannot know.
//
// Invariant: a reader that cannot read (the process exited, or is another
// user's) returns false or an empty result, never a made-up zero taken for
// a measurement: callers show "?" for what they could not read.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

struct ProcCounters {
    char state = '?';       // 'Z' or 'X': exited
    unsigned long flags = 0; // the kernel's PF_* flags; PF_EXITING (0x4) from the start of exit
    uint64_t start_ticks = 0; // when it started (clock ticks after boot): tells a reused pid apart
    pid_t ppid = 0;
    uint64_t minflt = 0, majflt = 0;
    uint64_t read_bytes = 0; // from /proc/PID/io; valid when io_known
    bool io_known = false;
};

// One mapping (VMA): its range, whether it can be read or written (a
// freed arena range stays mapped, PROT_NONE), what it maps ("" anonymous,
// "/memfd:NAME (deleted)", a file's path) and its resident bytes.
struct Vma {
    uint64_t start = 0, end = 0, rss = 0;
    uint64_t anonymous = 0; // smaps Anonymous: in a private file mapping, the pages copied on write
    bool accessible = false;
    std::string path;
};

// Processes other than this one that map libspillway.so, ascending; with
// `among`, only those pids are looked at.
std::vector<pid_t> shim_processes(const std::set<pid_t> *among = nullptr);
// The processes of a job, by pid with their start times: every process in
// `members` still running (the same start time; 0 matches any) and every
// process descending from one (from each process's ppid). A job's
// process whose parent exits is reparented out of the job's tree (to init
// or a subreaper): kept as a member, it stays in the job, with its children.
std::map<pid_t, uint64_t> job_processes(const std::map<pid_t, uint64_t> &members);
// Whether a maps text maps libspillway.so.
bool maps_mention_shim(std::string_view maps_text);

bool read_counters(pid_t pid, ProcCounters &out);
// Whether the process is exiting or has exited. From then on a v1
// /proc/PID/cgroup names the root, not the job's group, and its memory is going.
inline bool has_exited(const ProcCounters &c) { return c.state == 'Z' || c.state == 'X' || (c.flags & 0x4); }
// The fields after "PID (comm)" of /proc/PID/stat.
bool parse_stat(std::string_view stat_text, ProcCounters &out);
// read_bytes of /proc/PID/io.
bool parse_io(std::string_view io_text, uint64_t &read_bytes);

std::vector<Vma> read_smaps(pid_t pid);
std::vector<Vma> parse_smaps(std::string_view smaps_text);
// Resident bytes of the mappings within [start, start+len) (a mapping that
// straddles the range counts in proportion to its overlap).
uint64_t resident_in(const std::vector<Vma> &vmas, uint64_t start, uint64_t len);
// The same for the mappings' anonymous bytes (Anonymous:).
uint64_t anonymous_in(const std::vector<Vma> &vmas, uint64_t start, uint64_t len);
// Whether [start, start+len) is wholly covered by accessible mappings, each
// of the kind a region of `backing` maps ("disk": a file, "memory": a
// memfd, "anon": no file; "" or `moving_to` too: either). A live snapshot
// is up to a second old: its region may have been freed since (its range
// PROT_NONE in the arena) or replaced by another backing at that address.
bool is_mapped(const std::vector<Vma> &vmas, uint64_t start, uint64_t len, std::string_view backing = "",
               std::string_view moving_to = "");

// The values of `names` in the process's initial environment (absent ones
// are left out).
std::map<std::string, std::string> read_environ(pid_t pid, const std::vector<std::string> &names);
std::map<std::string, std::string> parse_environ(std::string_view environ_text, const std::vector<std::string> &names);

std::string read_comm(pid_t pid);
// The whole file, or "" with ok=false.
std::string read_text(const std::string &path, bool *ok = nullptr);

} // namespace spillway::cli
