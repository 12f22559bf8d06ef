// placement.h — where one region's bytes live, as a value: the kind of
// backing, the file that holds them (none for anonymous memory) and the
// offset in that file.
//
// Invariants: a backing (backing.h) creates, grows and releases placements
// without knowing which region or why; the large path (large.h) stores the
// placement in its Region (region.h) under the large lock. A SpillFile is
// shared by every placement in a pool file; a dedicated one belongs to one
// region at a time.
#pragma once

#include <cstdint>

namespace spillway {

enum class Backing : uint8_t { none = 0, disk = 1, memory = 2, anon = 3 };
const char *backing_name(Backing b);

struct SpillFile {
    int fd = -1;
    Backing kind = Backing::disk;
    bool pool = false;
    bool foreign = false;            // inherited across fork: never extended, punched or closed here
    char exported[256] = {0};        // path once exported
    SpillFile *queue_next = nullptr; // the reaper's queue of files to close (reaper.h)
};

struct Placement {
    Backing backing = Backing::none;
    SpillFile *file = nullptr; // disk and memory
    uint64_t file_off = 0;
};

} // namespace spillway
