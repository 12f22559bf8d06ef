// spill_dir_prepare.h — `spillway run` clears the spill directory ONCE for
// the whole process tree, before anything in it can spill or export.
//
// Invariants: the shim's own rule decides what is stale
// (spillway::remove_stale_files: regular files of this user with a
// spillway prefix, never an export whose process is alive); nothing else in
// the directory is touched, symlinks are never followed. The caller then sets SPILLWAY_PREPARED in the child's
// environment, so no process of the tree clears it again (which would
// delete a sibling's fresh export).
#pragma once

#include "config.h"
#include "spilldir.h"

#include <string>
#include <vector>

namespace spillway::cli {

struct PreparedDir {
    SpillDir dir;                   // as open_spill_dir judged it (fd closed)
    int removed = 0;
    std::vector<std::string> kept;  // "name: why", files we could not remove
};

// Creates the directory (0700) as the shim would, then, when remove_stale,
// removes stale files (not when an enclosing run already prepared it).
PreparedDir prepare_spill_dir(const Settings &s, bool remove_stale = true);

} // namespace spillway::cli
