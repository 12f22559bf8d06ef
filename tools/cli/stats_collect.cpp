// stats_collect.cpp — see stats_collect.h.
#include "stats_collect.h"

#include <cctype>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>

namespace spillway::cli {

StatsCollector::StatsCollector(std::string pattern) : pattern_(std::move(pattern)) {}

static long long file_size(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

// Whether name is prefix + decimal pid + suffix.
static bool matches_pid_pattern(const std::string &name, const std::string &prefix, const std::string &suffix) {
    if (name.size() <= prefix.size() + suffix.size()) return false;
    if (name.compare(0, prefix.size(), prefix) != 0) return false;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
    for (size_t i = prefix.size(); i < name.size() - suffix.size(); i++)
        if (!isdigit((unsigned char)name[i])) return false;
    return true;
}

std::map<std::string, long long> StatsCollector::matching_files() const {
    std::map<std::string, long long> out;
    size_t pid_at = pattern_.find("%p");
    if (pid_at == std::string::npos) {
        if (long long size = file_size(pattern_); size >= 0) out[pattern_] = size;
        return out;
    }
    // "%p" may appear only in the file name (a directory per pid is not a pattern we support).
    size_t slash = pattern_.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : pattern_.substr(0, slash == 0 ? 1 : slash);
    std::string base = slash == std::string::npos ? pattern_ : pattern_.substr(slash + 1);
    size_t at = base.find("%p");
    if (at == std::string::npos) return out;
    std::string prefix = base.substr(0, at), suffix = base.substr(at + 2);
    DIR *d = opendir(dir.c_str());
    if (!d) return out;
    while (struct dirent *e = readdir(d)) {
        if (!matches_pid_pattern(e->d_name, prefix, suffix)) continue;
        std::string path = (dir == "/" ? "" : dir) + "/" + e->d_name;
        if (long long size = file_size(path); size >= 0) out[path] = size;
    }
    closedir(d);
    return out;
}

void StatsCollector::mark_start() { before_ = matching_files(); }

std::vector<std::string> StatsCollector::new_lines() const {
    std::vector<std::string> lines;
    for (const auto &[path, size] : matching_files()) {
        auto old = before_.find(path);
        long long from = old == before_.end() ? 0 : old->second;
        if (size <= from) continue;
        std::ifstream in(path, std::ios::binary);
        in.seekg(from);
        std::string line;
        while (std::getline(in, line))
            if (!line.empty()) lines.push_back(line);
    }
    return lines;
}

} // namespace spillway::cli
