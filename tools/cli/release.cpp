// release.cpp — `spillway release PATH...`: give a spill file's page cache
// back to the kernel, when nothing maps it.
//
// Invariants: a file that any process maps is refused, with the mappers
// named: POSIX_FADV_DONTNEED silently skips mapped pages, so "released"
// would be a lie, and only the mapping process can drop its own page-table
// entries (spillway_release_page_cache does all three steps). For an
// unmapped file the two remaining steps run in order: fdatasync (dirty
// pages cannot be dropped), then POSIX_FADV_DONTNEED. The result is
// measured before and after, never assumed. File contents never change.
#include "cli.h"
#include "commands.h"
#include "file_residency.h"
#include "proc_scan.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway::cli {

static const char kReleaseHelp[] =
    "usage: spillway release PATH...\n\n"
    "Drops each file's pages from the page cache: writes dirty pages back (fdatasync),\n"
    "then advises the kernel to drop them (POSIX_FADV_DONTNEED), and reports the\n"
    "resident bytes before and after. A file that some process maps is refused,\n"
    "naming the process: the advice would skip its mapped pages; that process must\n"
    "release the region itself (spillway_release_page_cache) or exit first.\n\n"
    "options:\n"
    "  -h, --help   this text\n\n"
    "exit status: 0 every file released; 1 some file refused or failed; 2 usage error.\n";

namespace {

// Returns true when released; prints one line either way.
bool release_one(const std::string &path, const ProcessScan &scan) {
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fail("release", path + ": " + strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        fail("release", path + ": refused: not a regular file (name the spill files, e.g. DIR/*)");
        return false;
    }
    if (auto it = scan.mapped_by.find(file_id_of(fd, st)); it != scan.mapped_by.end()) {
        close(fd);
        fail("release", path + ": refused: mapped by " + scan.describe(it->second) +
                            "; the kernel skips mapped pages, so that process must call "
                            "spillway_release_page_cache (or exit) first");
        return false;
    }
    Residency before = measure_residency(fd, (uint64_t)st.st_size);
    if (fdatasync(fd) != 0) {
        int err = errno;
        close(fd);
        fail("release", path + ": writing dirty pages back failed (" + strerror(err) +
                            "); nothing was dropped and nothing is lost: free space on its disk (or "
                            "check the disk, dmesg shows its errors) and run it again");
        return false;
    }
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    Residency after = measure_residency(fd, (uint64_t)st.st_size);
    close(fd);
    if (rc != 0) {
        fail("release", path + ": POSIX_FADV_DONTNEED failed (" + strerror(rc) +
                            "); its pages were written back but stay cached, where the kernel can "
                            "still reclaim them: nothing to do");
        return false;
    }
    auto shown = [](const Residency &r) { return r.known ? human_size(r.resident) : std::string("?"); };
    std::cout << path << ": released: resident " << shown(before) << " -> " << shown(after) << "\n";
    return true;
}

} // namespace

int release_command(const Args &args) {
    Options o("release", args);
    while (o.at_option()) {
        if (o.flag("--help", "-h")) {
            std::cout << kReleaseHelp;
            return kExitOk;
        }
        return usage_error("release", "unknown option " + o.peek());
    }
    Args paths = o.rest();
    if (paths.empty()) return usage_error("release", "name at least one file");
    ProcessScan scan = scan_processes(/*with_fds=*/false);
    if (scan.uninspected)
        warn("release", std::to_string(scan.uninspected) +
                            " process(es) could not be inspected (permission denied); a file they map keeps "
                            "its mapped pages; run as root to be sure");
    bool all = true;
    for (const std::string &path : paths) all = release_one(path, scan) && all;
    return all ? kExitOk : kExitFailure;
}

} // namespace spillway::cli
