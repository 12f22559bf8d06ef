// backing.h — where a region's bytes live: a reserved spill file, a memfd,
// or anonymous memory, mapped at an address the arena chose.
//
// Invariants:
//  * Disk bytes are always reserved with fallocate(2) before they are
//    mapped; a range that could not be reserved is never mapped (a write to
//    an unreserved page on a full filesystem is SIGBUS, not an error).
//  * Small regions share one pool file per backing (file offset == arena
//    offset), so ten thousand regions cost one descriptor; regions at or
//    above dedicated_min get a file of their own (exportable by linkat).
//  * A free range of a pool file is a hole, so a reused range reads as zeros
//    (calloc touches nothing).
//  * A file marked foreign (inherited across fork) is never extended,
//    punched, truncated or closed by this process's frees.
#pragma once

#include "config.h"
#include "registry/placement.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace spillway {

// Why a placement fell back; counted in the stats, named in the warning.
enum class Fallback : uint8_t {
    no_space, quota, unsupported, io_error, too_big, no_spill_dir, too_many_files,
    memfd_failed, map_failed, arena_full, other, count_
};
const char *fallback_name(Fallback f);
Fallback fallback_from_errno(int err);
// What the user can do about it, as the end of a warning line
// ("free disk space there or move spill.dir to a disk with room").
const char *fallback_remedy(Fallback f);

// Opens the spill directory and prepares the pools (files are created lazily).
void backing_init(const Settings &s);
struct SpillDir;
const SpillDir &spill_dir();
bool disk_usable();
const std::string &disk_unusable_reason();
// The spill directory, opened at its first use and again by its path when
// it was removed since; -1 while it cannot be opened (warned once a reason).
int spill_dir_fd();

// A new, empty spill file made to write in place before it is reserved
// (keep_writes_in_place, spilldir.h: on btrfs the reservation holds only
// then); one warning per reason when the filesystem refuses.
void make_spill_file_write_in_place(int fd);
const std::string &spill_dir_path();

// Maps [start, start+len) of the arena RW with the requested backing and
// returns where the bytes live in *out. Returns 0, or an errno; on error
// nothing is mapped and nothing is leaked.
int back_disk(uintptr_t start, size_t len, Placement *out);
// The same in a spill file of its own, whatever its size (so that naming it
// later, for another process, moves nothing).
int back_disk_own_file(uintptr_t start, size_t len, Placement *out);
int back_memory(uintptr_t start, size_t len, Placement *out);
int back_anon(uintptr_t start, size_t len, Placement *out);

// Extends placement p, mapped at [start, start+old_len), to new_len in place
// (the arena space behind it is already the caller's); the new tail gets
// advice (0: none). EPERM for a foreign file or a private (fork child)
// mapping. 0 or errno.
int grow_backing(const Placement &p, uintptr_t start, size_t old_len, size_t new_len, int advice,
                 bool is_private);

// After p's range of len bytes was unmapped: punches its pool range or
// closes its file. False when a pool range could not be punched (its arena
// space must then never be reused, since a reuse would not read as zeros).
bool release_backing(const Placement &p, size_t len);
// A dedicated file a region has just left (rehome.h): closed by the reaper
// thread, because the last close of a large file can take seconds (ext4
// discarding its blocks) and the mover holds locks that pins wait on.
void release_left_file(SpillFile *f);

// Creates a dedicated reserved file of len bytes (for spill and export).
int new_dedicated_disk_file(size_t len, SpillFile **out);
void close_spill_file(SpillFile *f);
// Creates a dedicated memfd of len bytes (a promotion's new home). 0 or errno.
int new_dedicated_memfd(size_t len, SpillFile **out);

// Advice follows the access detector (sampler.h): MADV_SEQUENTIAL while a
// region is streamed, MADV_RANDOM otherwise, so a fault on an evicted page
// outside a stream reads that page (4 KiB), never the kernel's read-around
// (read_ahead_kb, 8 MiB on the spill disk here). A region is born streaming
// when it is at least kStreamAdviceFrom (it is about to be filled, and
// forward read-ahead over its never-written blocks gives the writer large
// zeroed folios: a 512 MiB fill took 1.6 s so and 11 s under MADV_RANDOM);
// smaller ones and random-access sites start MADV_RANDOM (a first write
// fault must not zero-fill page cache into pool neighbours).
constexpr size_t kStreamAdviceFrom = size_t(8) << 20;
int initial_advice(size_t map_len, bool random_access);

// Fork child: forget the pools (marked foreign; the large path marks the
// files of inherited regions, large_privatise_inherited).
void backing_after_fork_child();

} // namespace spillway
