// profile_save.cpp — writes what this run learned about call sites into
// the profile at exit (see profile.h). Kept apart from profile.cpp so that
// reading a profile (the CLI does) needs no call-site machinery.
#include "profile.h"

#include "sites/callsite.h"
#include "log.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace spillway {

void profile_save(const Settings &s) {
    if (s.profile_file.empty() || !s.learn) return;
    std::vector<ProfileEntry> learned;
    for (CallSite *site = callsite_list(); site; site = site->all_next) {
        Access a = (Access)site->access.load();
        if (a == Access::unknown || site->from_profile) continue;
        ProfileEntry e;
        e.identity = site->identity;
        e.access = a;
        e.decision = a == Access::random ? "memory" : "disk";
        e.evidence = site->evidence;
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
        SPW_LOG(warn, "cannot write profile %s (%s); what this run learned is lost",
                tmp.c_str(), strerror(errno));
        return;
    }
    bool ok = write(fd, out.data(), out.size()) == (ssize_t)out.size();
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp.c_str(), s.profile_file.c_str()) != 0) {
        SPW_LOG(warn, "cannot write profile %s (%s)", s.profile_file.c_str(), strerror(errno));
        unlink(tmp.c_str());
    }
}

} // namespace spillway
