// settings_source.h — the settings a subcommand acts on, read exactly as the
// shim reads them (load_settings from shim_core), with command-line options
// standing in for single environment variables.
//
// Invariant: there is one reader of configs in the project, the shim's; the
// tool never re-implements parsing or defaults, so `check` and `run` can
// never accept a config the shim would refuse (or the reverse).
#pragma once

#include "config.h"

#include <map>
#include <optional>
#include <string>

namespace spillway::cli {

struct EnvOverlay {
    std::map<std::string, std::string> values; // e.g. SPILLWAY_DIR from --dir
    bool ignore_process_env = false;           // only `values` count (check --ignore-env)
    const char *lookup(const char *name) const;
};

// load_settings with the overlay; nullopt on success, else the shim's message.
// config_text: the config file's text as parsed (what `run` hashes).
std::optional<std::string> load_effective_settings(Settings &out, const EnvOverlay &overlay,
                                                   std::string *config_text = nullptr);

// The SPILLWAY_* variables of the process environment that override a
// setting ("SPILLWAY_DIR=/x"), for saying where a value came from.
std::string active_env_overrides(const EnvOverlay &overlay);

} // namespace spillway::cli
