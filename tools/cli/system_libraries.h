// system_libraries.h — the distribution's libraries the shim loads, checked
// by `spillway run` before the job starts.
//
// Invariant: kSystemLibraries names every shared library the front or the
// engine needs (NEEDED) or dlopens that does not come with libc or
// libstdc++, with the Debian package that ships it
// (tests/packaging/system_libraries.sh compares it with readelf). A missing
// required one is ONE line naming that package, never the loader's
// "cannot be preloaded ... ignored" and a job that runs unprotected; a
// missing optional one is one warning saying what is lost.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace spillway::cli {

struct SystemLibrary {
    const char *soname;
    const char *debian_package;
    // Without it the shim cannot be preloaded at all; otherwise `without`
    // says what the job loses.
    bool required;
    const char *without;
};

inline constexpr SystemLibrary kSystemLibraries[] = {
    {"libmimalloc.so.2", "libmimalloc2.0", true, ""},
    // dlopened at the first call-site capture (shim/engine/sites/unwind_lazy.h).
    {"libunwind.so.8", "libunwind8", false, "large allocations are placed without call sites"},
};

struct LibraryProblem {
    const SystemLibrary *library;
    std::string reason; // "not found", or the loader's words
};

// Loads each library by soname in a short-lived child process (the
// loader's own search: LD_LIBRARY_PATH, ld.so.cache, the default
// directories; nothing is loaded into this process, whose allocator must
// stay glibc's). Returns the ones that cannot be loaded, in order.
std::vector<LibraryProblem> missing_system_libraries(std::span<const SystemLibrary> libraries = kSystemLibraries);

// "libmimalloc.so.2 not found: install Debian's libmimalloc2.0 (apt-get
// install libmimalloc2.0)"; for an optional one the loss comes first.
std::string describe(const LibraryProblem &problem);

} // namespace spillway::cli
