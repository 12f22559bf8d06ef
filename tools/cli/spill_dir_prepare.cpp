// spill_dir_prepare.cpp — see spill_dir_prepare.h.
#include "spill_dir_prepare.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway::cli {

bool is_spillway_file_name(const std::string &name) {
    for (const char *prefix : {kExportPrefix, kShmPrefix, kTmpPrefix})
        if (name.rfind(prefix, 0) == 0) return true;
    return false;
}

PreparedDir prepare_spill_dir(const Settings &s, bool remove_stale) {
    PreparedDir out;
    out.dir = open_spill_dir(s.spill_dir, s.allow_tmpfs);
    int dfd = out.dir.fd;
    out.dir.fd = -1;
    if (dfd < 0) return out;
    if (!out.dir.usable || !remove_stale) {
        close(dfd);
        return out;
    }
    int scan_fd = dup(dfd);
    DIR *scan = scan_fd >= 0 ? fdopendir(scan_fd) : nullptr;
    if (!scan) {
        if (scan_fd >= 0) close(scan_fd);
        out.kept.push_back(out.dir.path + ": cannot list (" + std::string(strerror(errno)) + ")");
        close(dfd);
        return out;
    }
    while (struct dirent *e = readdir(scan)) {
        std::string name = e->d_name;
        if (!is_spillway_file_name(name)) continue;
        struct stat st;
        if (fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue; // not ours to judge
        if (unlinkat(dfd, name.c_str(), 0) == 0) out.removed++;
        else out.kept.push_back(name + ": " + strerror(errno));
    }
    closedir(scan);
    close(dfd);
    return out;
}

} // namespace spillway::cli
