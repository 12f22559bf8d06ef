// block_zone.h — blocks of one fixed size (CPython's object arenas, 1 MiB
// each) carved from chunk regions of the large path, so that an
// interpreter's small objects live in reclaimable page cache instead of
// anonymous memory the kernel cannot reclaim without swap.
//
// Why: CPython maps its object arenas with mmap itself, past malloc, so a
// malloc shim never saw them. A job that builds a large Python list (a
// DataLoader's shuffled indices: 24M ints, 768 MiB of arenas) then holds
// that much anonymous memory beside its buffers; kernel swap pages the cold
// ones out, the shim could not (docs/benchmarks.md, the epochs job). In a
// disk chunk the kernel writes a cold page back and evicts it, page by page,
// as swap would, and keeps the hot ones.
//
// Invariants:
//  * Every chunk is a live region of kFlagObjectBlocks (policy.h: disk
//    under "auto" or "disk", anonymous memory without a spill directory),
//    and every block handed out lies wholly inside one chunk.
//  * A block's bytes are undefined when taken (CPython needs no zeros: its
//    arenas came from malloc once). Where this process may write its
//    chunk's file (its own, shared, no fork snapshot holding it), a block
//    is written with zeros before it is handed out, so its pages are cached
//    in large folios before the first store instead of faulted in one by
//    one under the chunk's random advice. A freed block's pages are dropped from
//    the process's view (MADV_DONTNEED) and never punched out of the file:
//    the chunk's disk blocks stay reserved, so a store into a reused block
//    cannot raise SIGBUS on a full disk. Where the filesystem keeps them
//    through FALLOC_FL_ZERO_RANGE (ext4) and no fork snapshot holds the
//    chunk, the freed block's range becomes unwritten extents: its dirty
//    pages leave the page cache unwritten.
//  * While a fork's children live, a block is taken only in a chunk no
//    fork snapshot holds (large/fork_snapshot.h), or a new one: in a frozen
//    chunk the parent's writes would be copies, anonymous memory. For the
//    same reason a fork child never takes a block in a chunk it inherited
//    (mapped private in it); it only gives those blocks back.
//  * A chunk whose every block is free is freed, unless it is the only
//    empty one blocks can be taken in (kept so that an interpreter freeing
//    and taking one arena at a boundary does not make and free a region
//    each time).
//  * One mutex guards the table; no large-path call is made while it is held.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// The chunk a zone of blocks of `block` bytes carves them from: 32 MiB, or
// 64 blocks when they are smaller than 512 KiB (one 64-bit map per chunk).
size_t block_zone_chunk_bytes(size_t block);

// A block of `block` bytes (a multiple of the page size, at most 32 MiB),
// or nullptr: the size differs from the zone's first block's (the zone
// serves one size), or no chunk could be had (the caller then uses its own
// allocator: the zone's free tells its blocks from others).
void *block_zone_take(size_t block);

// Gives a block back: true when p is one of the zone's (it is then free),
// false when it is not (the caller frees it its own way).
bool block_zone_give(void *p, size_t block);

// Figures for stats and tests: chunks held, blocks in use, the most blocks
// in use at once.
struct BlockZoneFigures {
    size_t chunks = 0;
    size_t blocks_in_use = 0;
    size_t peak_blocks = 0;
    size_t block_bytes = 0;
};
BlockZoneFigures block_zone_figures();

// A fork child: the zone's lock anew (fork_safety.h: held briefly, only by
// the interpreter's allocating thread, which holds the GIL a fork waits for).
void block_zone_after_fork_child();

// Tests: frees every empty chunk and forgets the block size once no block
// is in use (a zone serves one size per process).
void block_zone_reset_for_tests();

} // namespace spillway
