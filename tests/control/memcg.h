// memcg.h — a fresh memory cgroup for one test, removed when it goes away.
//
// Created as a child of this process's own memory cgroup (so a supervisor's
// limits and accounting still apply, and it works where only one's own
// subtree is writable). cgroup v1 (memory controller mounted at
// /sys/fs/cgroup/memory: memory.usage_in_bytes, memory.limit_in_bytes) and
// cgroup v2 (unified at /sys/fs/cgroup: memory.current, memory.max).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>

namespace control_test {

class MemoryCgroup {
  public:
    // nullptr and *why (one line saying what to do) when none can be made.
    static std::unique_ptr<MemoryCgroup> create(std::string *why);
    ~MemoryCgroup(); // rmdir, after its processes have exited

    bool v2() const { return v2_; }
    const std::string &dir() const { return dir_; }
    // The file whose number is the cgroup's charged memory.
    std::string usage_file() const;
    std::string procs_file() const { return dir_ + "/cgroup.procs"; }
    uint64_t usage() const; // UINT64_MAX when unreadable
    bool set_limit(uint64_t bytes); // and no swap (memory.swap.max 0, v1 memsw = limit)

  private:
    bool v2_ = false;
    std::string dir_;
};

// Moves the calling process into the cgroup whose cgroup.procs is procs_path.
// Async-signal-safe (for use between fork and exec). True on success.
bool join_cgroup(const char *procs_path);

uint64_t read_u64_file(const std::string &path); // UINT64_MAX when unreadable

} // namespace control_test
