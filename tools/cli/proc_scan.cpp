// proc_scan.cpp — see proc_scan.h.
#include "proc_scan.h"

#include "maps_device.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace spillway::cli {

FileId file_id_of(int fd, const struct stat &st) {
    return FileId{maps_device(fd, "", AT_EMPTY_PATH, st.st_dev), st.st_ino};
}

static std::string comm_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name.empty() ? "?" : name;
}

std::string ProcessScan::describe(const std::set<pid_t> &pids) const {
    std::string out;
    for (pid_t pid : pids) {
        if (!out.empty()) out += ", ";
        auto it = names.find(pid);
        out += std::to_string(pid) + " (" + (it == names.end() ? "?" : it->second) + ")";
    }
    return out;
}

// "7f0000000000-7f0000100000 rw-s 00000000 fd:01 1234   /path (deleted)"
static bool parse_maps_line(const char *line, std::string &range, FileId &id, std::string &path) {
    char range_buf[64], perms[8], dev_buf[16];
    unsigned long long offset, inode;
    int consumed = 0;
    if (sscanf(line, "%63s %7s %llx %15s %llu %n", range_buf, perms, &offset, dev_buf, &inode, &consumed) < 5)
        return false;
    if (inode == 0) return false; // anonymous memory
    unsigned major_no, minor_no;
    if (sscanf(dev_buf, "%x:%x", &major_no, &minor_no) != 2) return false;
    range = range_buf;
    id = FileId{makedev(major_no, minor_no), (ino_t)inode};
    path = line + consumed;
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    return true;
}

static bool scan_maps(pid_t pid, ProcessScan &scan) {
    std::string base = "/proc/" + std::to_string(pid);
    FILE *maps = fopen((base + "/maps").c_str(), "re");
    if (!maps) return false;
    char line[4096 + 256];
    bool any = false;
    while (fgets(line, sizeof line, maps)) {
        any = true;
        std::string range, path;
        FileId id;
        if (!parse_maps_line(line, range, id, path)) continue;
        scan.mapped_by[id].insert(pid);
        scan.names.emplace(pid, comm_of(pid));
        if (!scan.held.count(id)) scan.held[id] = HeldFile{pid, base + "/map_files/" + range, path};
    }
    fclose(maps);
    // An unreadable maps file of another user opens but reads empty.
    return any || access((base + "/maps").c_str(), R_OK) == 0;
}

static void scan_fds(pid_t pid, ProcessScan &scan) {
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR *d = opendir(dir.c_str());
    if (!d) return;
    while (struct dirent *e = readdir(d)) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        std::string link = dir + "/" + e->d_name;
        char target[4096];
        ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n <= 0 || target[0] != '/') continue; // sockets, pipes, anon inodes
        target[n] = 0;
        struct stat st;
        if (stat(link.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        FileId id{maps_device(AT_FDCWD, link.c_str(), 0, st.st_dev), st.st_ino};
        // An fd is the better way to reopen than map_files (which needs CAP_SYS_ADMIN).
        scan.held[id] = HeldFile{pid, link, target};
        scan.names.emplace(pid, comm_of(pid));
    }
    closedir(d);
}

ProcessScan scan_processes(bool with_fds) {
    ProcessScan scan;
    pid_t self = getpid();
    DIR *proc = opendir("/proc");
    if (!proc) return scan;
    while (struct dirent *e = readdir(proc)) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid == self) continue;
        if (!scan_maps(pid, scan)) {
            if (access(("/proc/" + std::string(e->d_name)).c_str(), F_OK) == 0) scan.uninspected++;
            continue;
        }
        if (with_fds) scan_fds(pid, scan);
    }
    closedir(proc);
    return scan;
}

} // namespace spillway::cli
