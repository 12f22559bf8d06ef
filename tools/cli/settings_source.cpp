// settings_source.cpp — see settings_source.h.
#include "settings_source.h"

#include <cstdlib>

namespace spillway::cli {

const char *EnvOverlay::lookup(const char *name) const {
    auto it = values.find(name);
    if (it != values.end()) return it->second.c_str();
    return ignore_process_env ? nullptr : getenv(name);
}

std::optional<std::string> load_effective_settings(Settings &out, const EnvOverlay &overlay,
                                                   std::string *config_text) {
    LoadOptions opts;
    opts.text_out = config_text;
    return load_settings(out, [&](const char *name) { return overlay.lookup(name); }, opts);
}

std::string active_env_overrides(const EnvOverlay &overlay) {
    std::string out;
    for (const char *name : {"SPILLWAY_DIR", "SPILLWAY_THRESHOLD", "SPILLWAY_POLICY", "SPILLWAY_LOG"}) {
        const char *v = overlay.lookup(name);
        if (!v || !*v) continue;
        if (!out.empty()) out += " ";
        out += std::string(name) + "=" + v;
    }
    return out;
}

} // namespace spillway::cli
