// system_libraries.cpp — see system_libraries.h.
#include "system_libraries.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace spillway::cli {

namespace {

// The loader's error for a library no directory holds ("libx.so.1: cannot
// open shared object file: No such file or directory").
bool is_not_found(const std::string &error) {
    return error.find("No such file or directory") != std::string::npos;
}

// dlopen in a child: a library's constructor (mimalloc's reads MIMALLOC_*
// and may print) runs there, with its output discarded, and the process
// ends with _exit, so nothing of it reaches this one. The child writes
// dlerror() to the pipe when loading fails. Empty string: it loaded.
std::string try_load(const char *soname) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return ""; // cannot check: assume present
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return "";
    }
    if (pid == 0) {
        close(fds[0]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        if (dlopen(soname, RTLD_LAZY | RTLD_LOCAL)) _exit(0);
        const char *error = dlerror();
        if (error) {
            size_t length = strlen(error);
            while (length > 0) {
                ssize_t written = write(fds[1], error, length);
                if (written <= 0) break;
                error += written;
                length -= static_cast<size_t>(written);
            }
        }
        _exit(1);
    }
    close(fds[1]);
    std::string error;
    char buf[512];
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) error.append(buf, static_cast<size_t>(n));
        else if (n < 0 && errno == EINTR) continue;
        else break;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    bool loaded = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (loaded) return "";
    return error.empty() ? std::string("cannot be loaded") : error;
}

} // namespace

std::vector<LibraryProblem> missing_system_libraries(std::span<const SystemLibrary> libraries) {
    std::vector<LibraryProblem> problems;
    for (const SystemLibrary &library : libraries) {
        std::string error = try_load(library.soname);
        if (error.empty()) continue;
        problems.push_back({&library, is_not_found(error) ? "not found" : "cannot be loaded (" + error + ")"});
    }
    return problems;
}

std::string describe(const LibraryProblem &problem) {
    const SystemLibrary &library = *problem.library;
    std::string install = std::string("install Debian's ") + library.debian_package + " (apt-get install " +
                          library.debian_package + ")";
    std::string line = std::string(library.soname) + " " + problem.reason;
    if (!library.required) line += ": " + std::string(library.without);
    return line + ": " + install;
}

} // namespace spillway::cli
