// spill_dir_prepare.h — `spillway run` clears the spill directory ONCE for
// the whole process tree, before anything in it can spill or export.
//
// Invariants: only regular files owned by this user whose names carry one
// of the shim's prefixes (spillway-export-, spillway-shm-, .spillway-tmp-)
// are removed; nothing else in the directory is touched, symlinks are never
// followed. The caller then sets SPILLWAY_PREPARED in the child's
// environment, so no process of the tree clears it again (which would
// delete a sibling's fresh export).
#pragma once

#include "config.h"
#include "spilldir.h"

#include <string>
#include <vector>

namespace spillway::cli {

// The marker control.cpp's spillway_prepare_dir looks for.
constexpr const char *kPreparedMarker = "SPILLWAY_PREPARED";
// Name prefix of a named spill file whose unlink a crash interrupted
// (spilldir.cpp creates it when the filesystem lacks O_TMPFILE).
constexpr const char *kTmpPrefix = ".spillway-tmp-";

struct PreparedDir {
    SpillDir dir;                   // as open_spill_dir judged it (fd closed)
    int removed = 0;
    std::vector<std::string> kept;  // "name: why", files we could not remove
};

// Creates the directory (0700) as the shim would, then, when remove_stale,
// removes stale files (not when an enclosing run already prepared it).
PreparedDir prepare_spill_dir(const Settings &s, bool remove_stale = true);

// Whether name is one the shim creates in a spill directory.
bool is_spillway_file_name(const std::string &name);

} // namespace spillway::cli
