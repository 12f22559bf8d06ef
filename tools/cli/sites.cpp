// sites.cpp — `spillway sites [PROFILE]`: what earlier runs learned about
// call sites, as a table.
//
// Invariant: the profile is read with the shim's own profile_parse, so the
// table shows exactly what the shim will act on at its next start (an
// entry the shim would skip is not shown either).
#include "cli.h"
#include "commands.h"
#include "profile.h"
#include "settings_source.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace spillway::cli {

static const char kSitesHelp[] =
    "usage: spillway sites [--frames N] [PROFILE]\n\n"
    "Prints a learned call-site profile (default: profile.file of $SPILLWAY_CONFIG) as a\n"
    "table: the site's identity, the access pattern learned (random sites are kept in\n"
    "memory, sequential ones go to disk), the decision, how many runs saw it, the\n"
    "innermost frames, and the evidence.\n\n"
    "Frames: \"python FILE:FUNCTION:LINE\" (Python frames, innermost first; a rule's\n"
    "python key takes the text after \"python \"), then \"module+0xOFFSET NAME\" (native;\n"
    "module+offset is the identity, NAME ending in \"?\" is a guess: the nearest\n"
    "exported function below an address no symbol covers).\n\n"
    "options:\n"
    "  --frames N   frames shown per site (default 3; 0 for all)\n"
    "  -h, --help   this text\n\n"
    "exit status: 0 printed; 1 the profile is missing or unreadable; 2 usage error.\n";

namespace {

std::string frames_text(const ProfileEntry &e, size_t max_frames) {
    std::string out;
    for (size_t i = 0; i < e.frames.size() && (max_frames == 0 || i < max_frames); i++)
        out += (i ? " <- " : "") + e.frames[i];
    if (max_frames && e.frames.size() > max_frames)
        out += " <- ... (" + std::to_string(e.frames.size() - max_frames) + " more)";
    return out.empty() ? "(no frames recorded)" : out;
}

std::string profile_path(const Args &positional, std::string &error) {
    if (!positional.empty()) return positional[0];
    Settings s;
    if (auto err = load_effective_settings(s, EnvOverlay{})) {
        error = "cannot read the config to find the profile (" + *err + "); name it: spillway sites PROFILE";
        return "";
    }
    if (s.profile_file.empty())
        error = "no PROFILE given and profile.file is not set in the config; name it: spillway sites PROFILE";
    return s.profile_file;
}

} // namespace

int sites_command(const Args &args) {
    Options o("sites", args);
    size_t max_frames = 3;
    while (o.at_option()) {
        if (o.flag("--help", "-h")) {
            std::cout << kSitesHelp;
            return kExitOk;
        }
        if (auto v = o.value("--frames")) {
            if (!o.error().empty()) return usage_error("sites", o.error());
            char *end = nullptr;
            unsigned long n = strtoul(v->c_str(), &end, 10);
            if (v->empty() || *end) return usage_error("sites", "--frames expects a number, got \"" + *v + "\"");
            max_frames = n;
            continue;
        }
        return usage_error("sites", "unknown option " + o.peek());
    }
    Args positional = o.rest();
    if (positional.size() > 1) return usage_error("sites", "expected at most one PROFILE");
    std::string error;
    std::string path = profile_path(positional, error);
    if (path.empty()) return fail("sites", error);

    std::ifstream in(path, std::ios::binary);
    if (!in)
        return fail("sites", path + ": " + strerror(errno) +
                                 (errno == ENOENT ? " (a profile is written at exit when profile.file is set "
                                                    "and profile.learn is true)"
                                                  : ""));
    std::stringstream text;
    text << in.rdbuf();
    std::vector<ProfileEntry> entries;
    if (!profile_parse(text.str(), path, entries, error)) return fail("sites", error);
    if (entries.empty()) {
        std::cout << path << ": no call sites learned yet\n";
        return kExitOk;
    }
    printf("%-16s  %-10s  %-8s  %4s  %s\n", "SITE", "ACCESS", "DECISION", "RUNS", "FRAMES (innermost first)");
    for (const ProfileEntry &e : entries) {
        char id[20];
        snprintf(id, sizeof id, "%016llx", (unsigned long long)e.identity);
        printf("%-16s  %-10s  %-8s  %4llu  %s\n", id, access_name(e.access),
               e.decision.empty() ? "-" : e.decision.c_str(), (unsigned long long)e.runs,
               frames_text(e, max_frames).c_str());
        if (!e.evidence.empty()) printf("%-16s  evidence: %s\n", "", e.evidence.c_str());
        if (e.short_lived || !e.lifetime_evidence.empty())
            printf("%-16s  lifetime: %s%s%s%s\n", "", e.short_lived ? "short" : "long",
                   e.lifetime_evidence.empty() ? "" : " (", e.lifetime_evidence.c_str(),
                   e.lifetime_evidence.empty() ? "" : ")");
    }
    printf("%zu site%s in %s\n", entries.size(), entries.size() == 1 ? "" : "s", path.c_str());
    return kExitOk;
}

} // namespace spillway::cli
