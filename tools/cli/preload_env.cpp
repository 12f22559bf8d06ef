// preload_env.cpp — see preload_env.h.
#include "preload_env.h"

#include <vector>

namespace spillway::cli {

static bool is_spillway_entry(const std::string &entry) {
    size_t slash = entry.find_last_of('/');
    std::string base = slash == std::string::npos ? entry : entry.substr(slash + 1);
    return base.rfind("libspillway.so", 0) == 0;
}

std::string compose_ld_preload(const std::string &library, const char *existing) {
    std::string out = library;
    if (!existing) return out;
    // ld.so splits LD_PRELOAD on spaces and colons alike.
    std::string entry;
    auto flush = [&] {
        if (!entry.empty() && !is_spillway_entry(entry)) out += ":" + entry;
        entry.clear();
    };
    for (const char *c = existing; *c; c++) {
        if (*c == ':' || *c == ' ') flush();
        else entry += *c;
    }
    flush();
    return out;
}

} // namespace spillway::cli
