// library_locator.cpp — see library_locator.h.
#include "library_locator.h"

#include <climits>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

// Set by tools/cli/meson.build from the install options.
#ifndef SPILLWAY_INSTALL_PREFIX
#define SPILLWAY_INSTALL_PREFIX "/usr/local"
#endif
#ifndef SPILLWAY_INSTALL_BINDIR
#define SPILLWAY_INSTALL_BINDIR "bin"
#endif
#ifndef SPILLWAY_INSTALL_LIBDIR
#define SPILLWAY_INSTALL_LIBDIR "lib"
#endif

namespace spillway::cli {

// The development symlink first, then the runtime soname (a distribution's
// runtime package ships only the latter).
static constexpr const char *kLibraryNames[] = {"libspillway.so", "libspillway.so.0"};

static bool is_regular_file(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Canonical directory, but the file name as found: LD_PRELOAD then names
// libspillway.so (what the user looks for in ps/proc), not libspillway.so.0.
static std::string absolute(const std::string &path) {
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    char buf[PATH_MAX];
    if (!realpath(dir.c_str(), buf)) return path;
    return std::string(buf) + (buf[1] ? "/" : "") + name;
}

std::string executable_dir() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    buf[n] = 0;
    std::string path(buf);
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

#ifndef SPILLWAY_BUNDLED_LIBDIR
static bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// <root>/<bindir>/spillway -> <root>/<libdir>, when bindir and libdir are
// both under the prefix. Empty when the executable is not in such a tree.
static std::string relocated_libdir(const std::string &exe_dir) {
    std::string prefix = SPILLWAY_INSTALL_PREFIX, bindir = SPILLWAY_INSTALL_BINDIR,
                libdir = SPILLWAY_INSTALL_LIBDIR;
    auto under_prefix = [&](std::string &dir) {
        if (dir.empty() || dir[0] != '/') return true;
        if (dir.compare(0, prefix.size() + 1, prefix + "/") != 0) return false;
        dir = dir.substr(prefix.size() + 1);
        return true;
    };
    if (!under_prefix(bindir) || !under_prefix(libdir)) return "";
    if (!ends_with(exe_dir, "/" + bindir)) return "";
    return exe_dir.substr(0, exe_dir.size() - bindir.size() - 1) + "/" + libdir;
}
#endif

LibrarySearch locate_library() {
    LibrarySearch search;
    if (const char *explicit_path = getenv("SPILLWAY_LIBRARY"); explicit_path && *explicit_path) {
        search.tried.push_back(explicit_path);
        if (is_regular_file(explicit_path)) search.found = absolute(explicit_path);
        else search.error = std::string("SPILLWAY_LIBRARY=") + explicit_path +
                            " is not a file; point it at libspillway.so or unset it";
        return search;
    }
    std::string exe_dir = executable_dir();
#ifdef SPILLWAY_BUNDLED_LIBDIR
    std::vector<std::string> dirs = {exe_dir + "/" SPILLWAY_BUNDLED_LIBDIR};
#else
    std::vector<std::string> dirs = {exe_dir + "/../../shim"}; // build tree: tools/cli -> shim
    if (std::string relocated = relocated_libdir(exe_dir); !relocated.empty()) dirs.push_back(relocated);
    std::string libdir = SPILLWAY_INSTALL_LIBDIR;
    dirs.push_back(libdir[0] == '/' ? libdir : std::string(SPILLWAY_INSTALL_PREFIX) + "/" + libdir);
#endif
    for (const std::string &dir : dirs) {
        for (const char *name : kLibraryNames) {
            std::string candidate = dir + "/" + name;
            search.tried.push_back(candidate);
            if (is_regular_file(candidate)) {
                search.found = absolute(candidate);
                return search;
            }
        }
    }
    return search;
}

} // namespace spillway::cli
