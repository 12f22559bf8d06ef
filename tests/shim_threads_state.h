// shim_threads_state.h — what a leak check compares in a process under the
// shim: its descriptors, and whether the shim's detector thread has made
// its first tick (it opens the descriptors it keeps then, whenever its
// thread first runs: a baseline taken before would blame the check's round
// for them). Used by programs/thread_churn and hardening/churn.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <map>
#include <string>
#include <unistd.h>

// Descriptor -> what it names ("/proc/<pid>/pagemap", "/memfd:spillway (deleted)").
inline std::map<int, std::string> fd_table() {
    std::map<int, std::string> out;
    DIR *d = opendir("/proc/self/fd");
    int self = d ? dirfd(d) : -1;
    while (struct dirent *e = d ? readdir(d) : nullptr) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == self) continue;
        char link[320], target[512] = {0};
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        out[atoi(e->d_name)] = n > 0 ? std::string(target, (size_t)n) : "?";
    }
    if (d) closedir(d);
    return out;
}

// The detector's kept descriptors (pagemap, the live stats memfd) are open.
inline bool detector_ticked(const std::map<int, std::string> &fds) {
    bool pagemap = false, live = false;
    for (auto &[fd, t] : fds) {
        pagemap |= t.size() > 8 && t.compare(t.size() - 8, 8, "/pagemap") == 0;
        live |= t == "/memfd:spillway-live (deleted)";
    }
    return pagemap && live;
}
