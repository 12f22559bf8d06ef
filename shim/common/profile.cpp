// profile.cpp — see profile.h.
#include "profile.h"

#include "log.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

namespace spillway {

static std::vector<ProfileEntry> *g_loaded = nullptr;

bool profile_read_file(const std::string &path, std::string &out) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, (size_t)n);
    close(fd);
    return n == 0;
}

bool profile_parse(const std::string &text, const std::string &source, std::vector<ProfileEntry> &out,
                   std::string &error) {
    try {
        toml::table root = toml::parse(text, source);
        const toml::array *sites = root["site"].as_array();
        if (!sites) return true;
        for (const toml::node &n : *sites) {
            const toml::table *t = n.as_table();
            if (!t) continue;
            ProfileEntry e;
            std::string id = t->get("id") ? t->get("id")->value_or<std::string>("") : "";
            e.identity = strtoull(id.c_str(), nullptr, 16);
            std::string access = (*t)["access"].value_or<std::string>("unknown");
            e.access = access == "random" ? Access::random
                       : access == "sequential" ? Access::sequential : Access::unknown;
            e.decision = (*t)["decision"].value_or<std::string>("");
            e.evidence = (*t)["evidence"].value_or<std::string>("");
            e.short_lived = (*t)["lifetime"].value_or<std::string>("long") == "short";
            e.lifetime_evidence = (*t)["lifetime_evidence"].value_or<std::string>("");
            e.runs = (uint64_t)(*t)["runs"].value_or<int64_t>(1);
            if (const toml::array *frames = (*t)["frames"].as_array())
                for (const toml::node &f : *frames) e.frames.push_back(f.value_or<std::string>(""));
            if (e.identity) out.push_back(std::move(e));
        }
        return true;
    } catch (const toml::parse_error &err) {
        std::ostringstream line;
        line << source << ":" << err.source().begin.line << ": profile is not valid TOML ("
             << err.description() << "); delete it to start learning afresh";
        error = line.str();
        return false;
    }
}

std::string profile_render(const std::vector<ProfileEntry> &entries) {
    std::ostringstream o;
    o << "# spillway call-site profile: what earlier runs of this job learned.\n"
         "# Read at start-up, merged at exit. Safe to edit or delete.\n";
    for (const ProfileEntry &e : entries) {
        char id[20];
        snprintf(id, sizeof id, "%016llx", (unsigned long long)e.identity);
        o << "\n[[site]]\nid = \"" << id << "\"\naccess = \"" << access_name(e.access) << "\"\n";
        o << "decision = " << toml::value<std::string>(e.decision) << "\n";
        o << "evidence = " << toml::value<std::string>(e.evidence) << "\n";
        o << "lifetime = \"" << (e.short_lived ? "short" : "long") << "\"\n";
        if (!e.lifetime_evidence.empty())
            o << "lifetime_evidence = " << toml::value<std::string>(e.lifetime_evidence) << "\n";
        o << "runs = " << e.runs << "\nframes = [\n";
        for (const std::string &f : e.frames) o << "  " << toml::value<std::string>(f) << ",\n";
        o << "]\n";
    }
    return o.str();
}

std::string profile_decision(const ProfileEntry &e) {
    return e.access == Access::random ? "memory" : e.short_lived ? "anon" : "disk";
}

std::vector<ProfileEntry> profile_merge(const std::vector<ProfileEntry> &older,
                                        const std::vector<ProfileEntry> &newer) {
    std::vector<ProfileEntry> out = older;
    for (const ProfileEntry &n : newer) {
        bool found = false;
        for (ProfileEntry &o : out) {
            if (o.identity != n.identity) continue;
            found = true;
            uint64_t runs = o.runs + 1;
            // Random is sticky: one run that saw scattered access is enough
            // to keep the site in memory; sequential never overrides it. A
            // run that learned no access (an entry for its lifetime alone)
            // keeps the older verdict and its evidence.
            if (n.access != Access::unknown && !(o.access == Access::random && n.access != Access::random)) {
                o.access = n.access;
                o.evidence = n.evidence;
            }
            if (o.frames.empty() || !n.frames.empty()) o.frames = n.frames;
            // A lifetime is what the latest run saw: a temporary that now
            // lives on must leave memory at the next run.
            o.short_lived = n.short_lived;
            o.lifetime_evidence = n.lifetime_evidence;
            o.decision = profile_decision(o);
            o.runs = runs;
        }
        if (!found) out.push_back(n);
    }
    return out;
}

void profile_load(const Settings &s) {
    g_loaded = new std::vector<ProfileEntry>();
    if (s.profile_file.empty()) return;
    std::string text, error;
    if (!profile_read_file(s.profile_file, text)) return; // first run: nothing learned yet
    if (!profile_parse(text, s.profile_file, *g_loaded, error)) {
        SPW_LOG(warn, "%s", error.c_str());
        g_loaded->clear();
    }
}

// The loaded entry for identity, or nullptr.
static const ProfileEntry *loaded_entry(uint64_t identity) {
    if (!g_loaded) return nullptr;
    for (const ProfileEntry &e : *g_loaded)
        if (e.identity == identity) return &e;
    return nullptr;
}

Access profile_lookup(uint64_t identity) {
    const ProfileEntry *e = loaded_entry(identity);
    return e ? e->access : Access::unknown;
}

bool profile_short_lived(uint64_t identity) {
    const ProfileEntry *e = loaded_entry(identity);
    return e && e->short_lived;
}

} // namespace spillway
