// spill_dir_checks.h — whether the configured spill directory will work,
// judged the way the shim judges it at start-up.
//
// Invariants: inspect_spill_dir never creates or changes anything (check is
// read-only); spill_dir_is_fatal mirrors startup.cpp: an unusable directory
// stops the job (exit 78) unless it is unusable only because it is tmpfs
// (then the shim warns and falls back) or the policy never uses disk.
#pragma once

#include "config.h"
#include "spilldir.h"

#include <string>

namespace spillway::cli {

// Like open_spill_dir, but a missing directory is judged by its nearest
// existing ancestor instead of being created. `note` explains a missing one.
SpillDir inspect_spill_dir(const Settings &s, std::string &note);

bool spill_dir_is_fatal(const Settings &s, const SpillDir &d);

// The filesystem type of path as a word ("ext4", "tmpfs", "xfs", ...).
std::string filesystem_name(const std::string &path);

} // namespace spillway::cli
