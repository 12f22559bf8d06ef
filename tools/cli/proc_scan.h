// proc_scan.h — which processes map or hold which files, from /proc.
//
// Files are identified by (device, inode), not by name: a spill file is
// usually unnamed (O_TMPFILE), and an exported one may be renamed or
// unlinked while mapped, yet the kernel's maps line still carries its
// device and inode.
//
// Invariant: a process whose /proc entries we cannot read (another user's,
// when not root) is counted in `uninspected`, never silently taken to map
// nothing, so callers can say how sure they are.
#pragma once

#include <map>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>

namespace spillway::cli {

struct FileId {
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator<(const FileId &o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

// A file some process has open or mapped, with a /proc path that reopens it
// (works for unnamed and deleted files too).
struct HeldFile {
    pid_t pid = 0;
    std::string reopen_path; // /proc/PID/fd/N or /proc/PID/map_files/A-B
    std::string shown_path;  // what the kernel shows, e.g. "/dir/#123 (deleted)"
};

struct ProcessScan {
    std::map<FileId, std::set<pid_t>> mapped_by;
    std::map<FileId, HeldFile> held;
    std::map<pid_t, std::string> names; // comm of every pid mentioned above
    int uninspected = 0;

    // "123 (python3), 456 (pt_main_thread)"
    std::string describe(const std::set<pid_t> &pids) const;
};

// Scans every process but this one. With fds, also records open files.
ProcessScan scan_processes(bool with_fds);

// The file open as fd (st: its fstat), keyed as /proc/PID/maps shows it:
// by the device maps shows (maps_device.h: btrfs' superblock's, not stat's).
FileId file_id_of(int fd, const struct stat &st);

} // namespace spillway::cli
