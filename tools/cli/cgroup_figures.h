// cgroup_figures.h — a process's memory cgroup and its figures, v1 or v2:
// usage against the limit, anon/file/shmem/dirty/writeback, major faults
// and file refaults (cumulative, for rates), and memory pressure (PSI).
//
// Where: /proc/PID/cgroup names the group; a v1 "memory" line wins (the
// memory controller is there on a hybrid host), else the v2 "0::" line.
// Its files are found by cgroup_location.h, or not: a group outside what
// this tool can see is unknown (unlocated says why), never shown with the
// figures of another group.
//
// Invariant: a figure the kernel does not offer is absent (known = false,
// or psi_scope empty), never zero; v1 has no per-group PSI, so there the
// system-wide /proc/pressure/memory is shown and labelled "system".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace spillway::cli {

struct CgroupFigures {
    std::string name; // as /proc/PID/cgroup shows it, e.g. "/job" ("/" for the root)
    std::string dir;  // where its files are; empty when unlocated
    int version = 0;  // 1 or 2; 0 when not found
    std::string unlocated; // why its files could not be found (one line); empty when found
    bool known = false;
    std::string mount; // the hierarchy's mount point: where a walk up the ancestors stops
    // limit: the lowest of this group's and its ancestors' (a Slurm step's or
    // a systemd slice's limit is set on a parent); 0: none anywhere.
    uint64_t usage = 0, limit = 0;
    uint64_t anon = 0, file = 0, shmem = 0, dirty = 0, writeback = 0;
    uint64_t majfault = 0, refault_file = 0; // cumulative
    std::string psi_scope;                   // "cgroup", "system" or "" (none)
    double psi_some10 = 0, psi_full10 = 0;   // avg10, percent
};

// Finds pid's memory cgroup (name, dir, version); figures not yet read.
CgroupFigures locate_cgroup(pid_t pid);
// Reads the figures of a located cgroup.
void read_cgroup_figures(CgroupFigures &c);

// Its key among a sample's groups: the directory, or for a group whose
// files were not found, its name (two unknown groups stay two).
std::string cgroup_key(const CgroupFigures &c);

// The lowest limit of a group and its ancestors (0: none), from the group's
// limit and a reader of any directory's limit (0: none or unreadable); dir
// is under mount, which ends the walk. For tests, with a fake reader.
uint64_t lowest_limit_up_to(const std::string &mount, const std::string &dir, uint64_t own_limit,
                            uint64_t (*limit_of)(const std::string &dir));

// Parsers, for tests.
bool parse_cgroup_membership(std::string_view proc_cgroup, int &version, std::string &name);
void parse_memory_stat(std::string_view text, int version, CgroupFigures &c);
bool parse_psi(std::string_view text, double &some10, double &full10);

} // namespace spillway::cli
