// spill_dir_prepare.cpp — see spill_dir_prepare.h.
#include "spill_dir_prepare.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway::cli {

PreparedDir prepare_spill_dir(const Settings &s, bool remove_stale) {
    PreparedDir out;
    out.dir = open_spill_dir(s.spill_dir, s.allow_tmpfs);
    int dfd = out.dir.fd;
    out.dir.fd = -1;
    if (dfd < 0) return out;
    if (out.dir.usable && remove_stale) {
        StaleRemoval r = remove_stale_files(dfd);
        out.removed = r.removed;
        out.kept = std::move(r.kept);
    }
    close(dfd);
    return out;
}

} // namespace spillway::cli
