// child_config.h — the config file the command under `spillway run` reads.
//
// The shim writes its stats only to `[stats] file` and has no environment
// variable for it, so when the user's config names no stats file, run hands
// the child a copy of that config with one added: the user's text
// unchanged, line for line, with a [stats] table appended (so line numbers
// in the shim's messages still match the user's file), or, when the text
// cannot simply be extended (it already has an empty [stats] table), the
// effective settings rendered by describe_settings.
//
// Invariant: the child's config always loads to the same settings as the
// user's, except for stats.file; compose_child_config verifies that with
// the shim's parser before returning it.
#pragma once

#include "config.h"

#include <string>

namespace spillway::cli {

struct ChildConfig {
    std::string config_path;   // SPILLWAY_CONFIG for the child; empty: leave unset
    std::string stats_pattern; // where the shim appends its JSON lines ("%p" = pid)
    std::string temp_dir;      // ours to remove afterwards; empty when none was made
    bool stats_are_ours = false;
    std::string error;         // one line, when the copy could not be made
    std::string text;          // what config_path holds (the marker of settings_check.h names it)
};

// user_config: the file the user named (empty for none); user_text: its
// text, as judged (the file is not read again: it may have changed since).
ChildConfig compose_child_config(const Settings &s, const std::string &user_config,
                                 const std::string &user_text);

// Removes the temporary directory and what the shim wrote into it.
void remove_child_config(const ChildConfig &c);

} // namespace spillway::cli
