// support.h — what the control tests share: byte patterns that prove data
// survived, page-cache measurement of a file independent of the shim, and
// running the second process (control_helper) with pipes to talk to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <sys/types.h>

namespace control_test {

constexpr size_t KiB = size_t(1) << 10;
constexpr size_t MiB = size_t(1) << 20;
constexpr size_t GiB = size_t(1) << 30;

size_t page_size();

// Fills [off, off+len) of base with a pattern that depends on seed and on
// the absolute offset, so a byte moved, lost or duplicated is detected.
// off and len are multiples of 8.
void fill(void *base, size_t off, size_t len, uint64_t seed);
// Offset of the first byte that does not match fill(base, off, len, seed),
// or SIZE_MAX when all of them do.
size_t first_mismatch(const void *base, size_t off, size_t len, uint64_t seed);
// Same check, but for bytes that must read as zero.
size_t first_nonzero(const void *base, size_t off, size_t len);

// Bytes of the file at path that are in the page cache, measured from the
// file itself (cachestat(2), or mincore over a fresh read-only mapping);
// -errno on failure.
long file_cached_bytes(const std::string &path);

// The directory the shim spills to in this test (SPILLWAY_DIR).
std::string spill_dir();
// Removes every entry of the spill directory (a test's clean start).
void empty_spill_dir();
// Names of the entries of dir, without "." and "..".
std::vector<std::string> list_dir(const std::string &dir);
bool file_exists(const std::string &path);

// The /proc/self/maps line of the mapping holding p, or "".
std::string maps_line_of(const void *p);
// The VmFlags of that mapping, space-separated with a leading space
// (" rd wr sh mr mw me ms rr"), or "".
std::string vm_flags_of(const void *p);
inline bool has_random_advice(const void *p) { return vm_flags_of(p).find(" rr") != std::string::npos; }

// Waits (polling) until pred() is true or about `seconds` have passed;
// returns pred()'s last value. For events the shim completes in the
// background, such as the reaper unmapping a freed region: never used to
// assert timing.
bool eventually(const std::function<bool()> &pred, int seconds = 10);

// A second process: control_helper (SPILLWAY_TEST_HELPER) with args, its
// stdin and stdout connected to this process.
struct Helper {
    pid_t pid = -1;
    int to_child = -1;   // write commands here
    int from_child = -1; // read replies here
    std::string send(const std::string &line); // writes line, returns the reply line
    std::string read_line();                   // the next line it printed, without '\n'
    int wait();                                // closes the pipes; exit status, or 128+signal
};

struct SpawnOptions {
    std::vector<std::string> set_env;   // "NAME=value"
    std::vector<std::string> unset_env; // "NAME"
    // Runs in the child between fork and exec (async-signal-safe calls only).
    std::function<void()> before_exec;
    std::string program; // another program than control_helper (a full path)
};

Helper spawn_helper(const std::vector<std::string> &args, const SpawnOptions &opts = {});
// Runs the helper to completion; returns its whole stdout, sets *status.
std::string run_helper(const std::vector<std::string> &args, int *status,
                       const SpawnOptions &opts = {});

// The "key=value" lines of a helper's or a job's output, by key (the last
// value of a key repeated).
std::map<std::string, std::string> keys(const std::string &out);
// The tiering job program (tests/control/tiering_job.cpp), from
// SPILLWAY_TIERING_JOB as meson sets it; the test stops without it.
std::string job_path();

// A small ext4 filesystem on a loop device for one test (root only),
// unmounted and its image removed when it goes away. Its "spill"
// subdirectory (mode 0700, empty) is a spill directory that fills up.
class LoopFilesystem {
  public:
    // nullptr and *why (one line saying what to do) when none can be made.
    static std::unique_ptr<LoopFilesystem> create(const std::string &work_dir, size_t mib, std::string *why);
    ~LoopFilesystem();
    const std::string &spill() const { return spill_; }

  private:
    std::string image_, mount_, spill_;
};

// What userfaultfd this process may use for moves, as the shim's probe
// (shim/engine/os/uffd.h) finds it: 2 kernel faults too (no system call
// into a moving region fails), 1 user faults only, 0 none (seccomp, kernel
// before 6.7).
int userfaultfd_level();
// Installs a seccomp filter on the calling process (for a fork child: it
// cannot be removed) under which userfaultfd(2) fails with EPERM, or with
// allow_user_only, fails unless it asks for UFFD_USER_MODE_ONLY (what
// vm.unprivileged_userfaultfd=0 leaves a process without CAP_SYS_PTRACE).
// True when installed.
bool refuse_userfaultfd(bool allow_user_only);

// Runs fn in a forked child of this process and returns its exit status
// (128+signal when it was killed). For refusals that only a fork child can
// see, and for scenarios that may crash.
int in_fork_child(const std::function<int()> &fn);

} // namespace control_test
