// claims.h — one memory budget per cgroup, shared by all its processes.
//
// DataLoader workers and the ranks of a job share a cgroup; each would see
// the same headroom and promote into it. A small file in the spill
// directory, one per cgroup (".spillway-claims-<hash of the cgroup path>"),
// holds the claims of moves under way: one line "PID START_TIME BYTES".
//
// Invariants: the file is read, decided on and rewritten only under
// flock(LOCK_EX) (waited for at most a second: no claim then, no move), so
// two processes never both claim the same headroom; the lock is dropped
// with LOCK_UN, never by close alone (a fork child's copy of the
// descriptor would keep it); a
// claim is dropped once its bytes are charged to the cgroup (then the
// cgroup's own usage counts them); a line whose process is gone (no such
// pid, or a pid reused by a process with another start time) is dropped by
// whoever reads it next, so a killed process leaks nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace spillway {

struct Claim {
    int pid = 0;
    uint64_t start_time = 0; // /proc/PID/stat field 22, clock ticks since boot
    uint64_t bytes = 0;
};

// Pure helpers (unit-tested). Lines that do not parse are dropped.
std::vector<Claim> parse_claims(const std::string &text);
std::string format_claims(const std::vector<Claim> &claims);

// Start time of a live process, or 0 when there is none with that pid.
uint64_t process_start_time(int pid);

// The claims file of cgroup `cgroup` (a path) in directory dir_fd.
std::string claims_file_name(const std::string &cgroup);

// Under the lock: drops dead claimants and this process's old claim, sums the
// others' claims, asks fits(others), and records a claim of `bytes` for this
// process if it says yes. Returns whether it claimed; *others_out gets the
// sum. False (no claim) when the file cannot be opened or locked.
bool claim_headroom(int dir_fd, const std::string &cgroup, uint64_t bytes,
                    const std::function<bool(uint64_t others)> &fits, uint64_t *others_out = nullptr);

// Removes this process's claim (after its move, or when it failed).
void drop_claim(int dir_fd, const std::string &cgroup);

// Fork child: closes the descriptor of a claims file the parent had open
// (see claims.cpp; fork_safety.h lists it).
void claims_after_fork_child();

} // namespace spillway
