// backing_truth.h — where a region's bytes really live, read from
// /proc/self/maps over the region's whole range, against what the shim
// reports for it (spillway_backing). The kernel's map is the truth: a region
// the shim calls "memory" must be one memfd mapping from its first byte to
// its last, "disk" a file that is neither a memfd nor in /dev/shm, "anon"
// anonymous memory; shared, unless it is a fork child's private copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace control_test {

// One /proc/self/maps line, clipped to the range asked for.
struct MapSpan {
    uintptr_t lo = 0, hi = 0;
    std::string perms; // "rw-s"
    unsigned long long inode = 0;
    std::string path;  // "" for anonymous memory
};
// The mappings over [start, start+len), in address order.
std::vector<MapSpan> mappings_over(uintptr_t start, size_t len);

// "" when every byte of the region holding p lives where the shim says it
// does (spillway_backing, asked first), else one line saying what differs.
// fork_child: the region is a fork child's inherited copy (private).
std::string backing_lie(const void *p, bool fork_child = false);

} // namespace control_test
