// library_locator.h — where libspillway.so is, for `spillway run`.
//
// Invariant: the search order is fixed and reported: $SPILLWAY_LIBRARY (an
// explicit choice; if it names a missing file that is an error, never a
// silent fall-through), then the build tree next to this executable, then
// the installed libdir relative to this executable (so a `meson install
// --destdir` tree or a moved prefix works), then the installed libdir as
// configured at build time. A tool built for a wheel (SPILLWAY_BUNDLED_LIBDIR
// defined, relative to the executable) looks after $SPILLWAY_LIBRARY only in
// its own package, so an installed wheel never picks up a build tree or
// another installation.
#pragma once

#include <string>
#include <vector>

namespace spillway::cli {

struct LibrarySearch {
    std::string found;              // absolute path, empty when not found
    std::vector<std::string> tried; // in order, for the error message
    std::string error;              // set when $SPILLWAY_LIBRARY is wrong
};

LibrarySearch locate_library();

// The directory holding the running executable (from /proc/self/exe).
std::string executable_dir();

} // namespace spillway::cli
