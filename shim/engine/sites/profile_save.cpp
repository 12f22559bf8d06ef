// profile_save.cpp — writes what this run learned about call sites into
// the profile at exit (see profile.h). Kept apart from profile.cpp so that
// reading a profile (the CLI does) needs no call-site machinery.
#include "profile.h"

#include "sites/callsite.h"
#include "log.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

void profile_save(const Settings &s) {
    if (s.profile_file.empty() || !s.learn) return;
    std::vector<ProfileEntry> learned;
    for (CallSite *site = callsite_list(); site; site = site->all_next) {
        Access a = (Access)site->access.load();
        const uint64_t allocs = site->allocs.load(), freed = site->freed.load();
        const uint64_t longest = site->longest_life_ns.load();
        // Every allocation freed, each within kShortLifeNs: a temporary's
        // site. One still live at exit lived on.
        const bool short_lived = allocs && freed >= allocs && longest < kShortLifeNs;
        const bool learned_access = a != Access::unknown && !site->from_profile.load();
        // Saved for its access (learned this run), or for its lifetime: a
        // short one, or a long one where the profile said short.
        if (!learned_access && !short_lived && !(site->short_lived_in_profile && allocs)) continue;
        ProfileEntry e;
        e.identity = site->identity;
        // An access from the profile is the profile's: not said again (its
        // evidence would read "from profile"), the merge keeps it.
        if (learned_access) {
            e.access = a;
            e.evidence = site->evidence;
        }
        e.short_lived = short_lived;
        e.decision = profile_decision(e);
        char life[96];
        snprintf(life, sizeof life, "%llu of %llu freed, after at most %.0f ms",
                 (unsigned long long)freed, (unsigned long long)allocs, longest / 1e6);
        e.lifetime_evidence = life;
        std::string text = callsite_describe(site, site->py.depth + site->depth);
        for (size_t at = 0; at < text.size();) {
            size_t sep = text.find(" <- ", at);
            e.frames.push_back(text.substr(at, sep == std::string::npos ? std::string::npos : sep - at));
            if (sep == std::string::npos) break;
            at = sep + 4;
        }
        learned.push_back(std::move(e));
    }
    if (learned.empty()) return;
    std::vector<ProfileEntry> current;
    std::string text, error;
    if (profile_read_file(s.profile_file, text)) profile_parse(text, s.profile_file, current, error);
    std::string out = profile_render(profile_merge(current, learned));
    std::string tmp = s.profile_file + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        SPW_LOG(warn, "cannot write profile %s (%s, creating %s next to it); what this run learned "
                      "is lost: make that directory writable, or set profile.file to a writable place",
                s.profile_file.c_str(), strerror(errno), tmp.c_str());
        return;
    }
    ssize_t wrote = write(fd, out.data(), out.size());
    int err = wrote < 0 ? errno : wrote != (ssize_t)out.size() ? ENOSPC : 0; // short: the disk filled
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp.c_str(), s.profile_file.c_str()) != 0) err = errno;
    if (err) {
        SPW_LOG(warn, "cannot write profile %s (%s); what this run learned is lost and the profile "
                      "keeps what earlier runs learned: free space on its disk, or set profile.file "
                      "to a writable place", s.profile_file.c_str(), strerror(err));
        unlink(tmp.c_str());
    }
}

} // namespace spillway
