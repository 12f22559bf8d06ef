// stats_collect.cpp — see stats_collect.h.
#include "stats_collect.h"

#include "json.h"
#include "run_tag.h"
#include "stats_format.h"

#include <cctype>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>

namespace spillway::cli {

StatsCollector::StatsCollector(std::string pattern, std::string run_tag)
    : pattern_(std::move(pattern)), run_tag_(std::move(run_tag)) {}

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

CollectedStats lines_of_run(const std::vector<std::string> &appended, const std::string &run_tag) {
    CollectedStats out;
    std::vector<std::string> untagged;
    for (const std::string &line : appended) {
        auto v = parse_object(line);
        const Json *tag = v ? member(*v, stats_key::run) : nullptr;
        // A line cut short or damaged says nothing of whose it is: it
        // counts as untagged, kept only when falling back.
        if (!tag || !tag->is_string()) untagged.push_back(line);
        else if (tag_is_of_run(tag->get<std::string>(), run_tag)) out.lines.push_back(line);
    }
    if (out.lines.empty() && !untagged.empty()) {
        out.lines = std::move(untagged);
        out.fell_back = true;
    }
    out.left_out = appended.size() - out.lines.size();
    return out;
}

CollectedStats StatsCollector::new_lines() const {
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
    if (run_tag_.empty()) return CollectedStats{std::move(lines)};
    return lines_of_run(lines, run_tag_);
}

} // namespace spillway::cli
