// stat.cpp — `spillway stat [DIR]`: what a spill directory holds right now.
//
// Invariants: read-only (files are opened O_RDONLY only to measure them;
// nothing is faulted in, written or removed); every number is measured:
// size from stat, reservation from st_blocks, residency from cachestat or
// mincore, mappers from /proc/*/maps by device and inode. Unnamed spill
// files (O_TMPFILE, the normal case) have no directory entry, so they are
// found through the processes that hold them and listed as well.
#include "cli.h"
#include "commands.h"
#include "file_residency.h"
#include "proc_scan.h"
#include "settings_source.h"
#include "spill_dir_checks.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway::cli {

static const char kStatHelp[] =
    "usage: spillway stat [DIR]\n\n"
    "Lists a spill directory (default: spill.dir of $SPILLWAY_CONFIG and the SPILLWAY_*\n"
    "environment, else /var/tmp/spillway-<uid>): every file's size, reserved bytes (st_blocks),\n"
    "bytes resident in the page cache (cachestat, or mincore where the kernel lacks it),\n"
    "and the processes that map it (from /proc/*/maps); then totals. Live unnamed spill\n"
    "files, which have no name in the directory, are found through the processes holding\n"
    "them. Run as root to see other users' processes.\n\n"
    "options:\n"
    "  -h, --help   this text\n\n"
    "exit status: 0 listed; 1 the directory cannot be read; 2 usage error.\n";

namespace {

struct Row {
    std::string label;
    uint64_t size = 0, reserved = 0;
    Residency residency;
    std::set<pid_t> mappers;
};

Row measure(int fd, const struct stat &st, std::string label, const ProcessScan &scan) {
    Row row;
    row.label = std::move(label);
    row.size = (uint64_t)st.st_size;
    row.reserved = (uint64_t)st.st_blocks * 512;
    row.residency = measure_residency(fd, row.size);
    if (auto it = scan.mapped_by.find(file_id_of(fd, st)); it != scan.mapped_by.end()) row.mappers = it->second;
    return row;
}

bool is_unnamed_file_of(const std::string &shown, const std::string &dir) {
    static const std::string deleted = " (deleted)";
    return shown.size() > dir.size() + 1 + deleted.size() && shown.compare(0, dir.size() + 1, dir + "/") == 0 &&
           shown.compare(shown.size() - deleted.size(), deleted.size(), deleted) == 0;
}

std::string resolve_dir(const Args &positional, std::string &error) {
    if (!positional.empty()) return positional[0];
    Settings s;
    if (auto err = load_effective_settings(s, EnvOverlay{})) {
        error = "cannot tell which spill directory to list (" + *err + "); name it: spillway stat DIR";
        return "";
    }
    return s.spill_dir;
}

} // namespace

int stat_command(const Args &args) {
    Options o("stat", args);
    while (o.at_option()) {
        if (o.flag("--help", "-h")) {
            std::cout << kStatHelp;
            return kExitOk;
        }
        return usage_error("stat", "unknown option " + o.peek());
    }
    Args positional = o.rest();
    if (positional.size() > 1) return usage_error("stat", "expected at most one DIR");
    std::string error;
    std::string dir = resolve_dir(positional, error);
    if (dir.empty()) return fail("stat", error);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return fail("stat", dir + ": " + strerror(errno) +
                                (errno == ENOENT ? "; nothing has spilled there yet, or name another DIR" : ""));
    char real[4096];
    std::string canonical = realpath(dir.c_str(), real) ? real : dir;

    ProcessScan scan = scan_processes(/*with_fds=*/true);
    std::vector<Row> rows;
    std::set<FileId> listed;

    int scan_fd = dup(dfd);
    DIR *d = scan_fd >= 0 ? fdopendir(scan_fd) : nullptr;
    if (!d) {
        close(dfd);
        return fail("stat", dir + ": cannot list (" + strerror(errno) +
                                "); run it as the directory's owner (or root), or name another DIR");
    }
    std::vector<std::string> names;
    while (struct dirent *e = readdir(d)) names.push_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
        int fd = openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            rows.push_back(measure(fd, st, name, scan));
            listed.insert(file_id_of(fd, st));
        }
        close(fd);
    }
    close(dfd);

    for (const auto &[id, held] : scan.held) {
        if (listed.count(id) || !is_unnamed_file_of(held.shown_path, canonical)) continue;
        int fd = open(held.reopen_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue; // gone meanwhile, or not ours to open
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            std::string how = held.reopen_path.find("/fd/") != std::string::npos ? "fd " : "mapping ";
            how += held.reopen_path.substr(held.reopen_path.find_last_of('/') + 1);
            rows.push_back(measure(fd, st, "(unnamed: pid " + std::to_string(held.pid) + " " + how + ")", scan));
            listed.insert(id);
        }
        close(fd);
    }

    std::cout << "spill directory " << canonical << " (" << filesystem_name(canonical) << ")\n";
    printf("%10s %10s %10s  %-24s %s\n", "SIZE", "RESERVED", "RESIDENT", "MAPPED BY", "FILE");
    fflush(stdout);
    uint64_t total_size = 0, total_reserved = 0, total_resident = 0;
    int mapped = 0;
    bool some_unmeasured = false;
    for (const Row &r : rows) {
        std::string resident = r.residency.known ? human_size(r.residency.resident) : "?";
        some_unmeasured |= !r.residency.known;
        std::string mappers = r.mappers.empty() ? "-" : scan.describe(r.mappers);
        printf("%10s %10s %10s  %-24s %s\n", human_size(r.size).c_str(), human_size(r.reserved).c_str(),
               resident.c_str(), mappers.c_str(), r.label.c_str());
        total_size += r.size;
        total_reserved += r.reserved;
        total_resident += r.residency.known ? r.residency.resident : 0;
        mapped += !r.mappers.empty();
    }
    printf("total: %zu file%s, %s size, %s reserved, %s resident, %d mapped\n", rows.size(),
           rows.size() == 1 ? "" : "s", human_size(total_size).c_str(), human_size(total_reserved).c_str(),
           human_size(total_resident).c_str(), mapped);
    fflush(stdout);
    if (some_unmeasured) warn("stat", "'?' marks a file whose residency could not be measured");
    if (scan.uninspected)
        warn("stat", std::to_string(scan.uninspected) +
                         " process(es) could not be inspected (permission denied); run as root to see every mapper");
    return kExitOk;
}

} // namespace spillway::cli
