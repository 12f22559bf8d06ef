// block_zone.cpp — see block_zone.h.
#include "large/block_zone.h"

#include "fd_policy.h"
#include "large/fork_snapshot.h"
#include "large/large.h"
#include "large/policy.h"
#include "log.h"
#include "os/zero_range.h"
#include "registry/arena.h"
#include "registry/region.h"
#include "stats/stats.h"

#include <cerrno>
#include <fcntl.h>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

namespace spillway {

namespace {

constexpr size_t kChunkMax = size_t(32) << 20;
constexpr size_t kBlocksMax = 64;        // one 64-bit map per chunk
constexpr size_t kChunkSlots = 8192;     // 256 GiB of 32 MiB chunks: more than any limit here

struct Chunk {
    uintptr_t base = 0;
    uint64_t used = 0;      // bit i: block i is handed out
    bool inherited = false; // a fork child's view of its parent's chunk: no block is taken there
};

// The table: chunks in the order they were made (a new block goes in the
// first chunk with room, so the oldest fill first and the newest drain).
Chunk g_chunks[kChunkSlots];
size_t g_count = 0;
size_t g_block = 0; // the zone's one block size; 0 until the first take
size_t g_in_use = 0;
size_t g_peak = 0;
alignas(std::mutex) unsigned char g_lock_bytes[sizeof(std::mutex)];
std::mutex *g_lock = new (g_lock_bytes) std::mutex;

size_t blocks_per_chunk() { return block_zone_chunk_bytes(g_block) / g_block; }
uint64_t full_map() {
    size_t n = blocks_per_chunk();
    return n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
}

// A free block in a chunk with room (only in the chunk at `only` when not
// 0), marked used; 0 if none. Never in an inherited chunk (block_zone.h).
uintptr_t take_locked(uintptr_t only = 0) {
    uint64_t full = full_map();
    for (size_t i = 0; i < g_count; i++) {
        Chunk &c = g_chunks[i];
        if (c.used == full || c.inherited || (only && c.base != only)) continue;
        unsigned bit = (unsigned)__builtin_ctzll(~c.used);
        c.used |= uint64_t(1) << bit;
        if (++g_in_use > g_peak) g_peak = g_in_use;
        stats_on_arena(true);
        return c.base + bit * g_block;
    }
    return 0;
}

} // namespace

size_t block_zone_chunk_bytes(size_t block) {
    if (block == 0 || block > kChunkMax) return 0;
    size_t by_count = block * kBlocksMax;
    return by_count < kChunkMax ? by_count : kChunkMax - kChunkMax % block;
}

namespace {

// While a fork's children live, the parent's view of a chunk made before
// the fork is a snapshot (large/fork_snapshot.h): a block taken there,
// free at the fork or not, is written as copies, anonymous memory the
// kernel cannot reclaim. Measured in the epochs job (1.5 GiB): each
// epoch's 740 MiB list filled the blocks the last one freed, in chunks the
// epoch's fork had frozen, and the parent's anonymous memory reached
// 1,294 MiB (its table's copies beside them), leaving 115 MiB of page cache
// to the workers' dataset. So a block is taken in a chunk no snapshot
// holds, or in a new chunk: page cache, reclaimable. The frozen chunks'
// free blocks wait for the children to end (the zone's disk use grows by
// what the parent allocates meanwhile, not its memory).
uintptr_t take_unfrozen() {
    constexpr size_t kScan = 64;
    uintptr_t bases[kScan];
    size_t n = 0;
    {
        std::lock_guard<std::mutex> guard(*g_lock);
        if (!snapshot_regions_live()) return take_locked();
        // Newest first: chunks made since the last fork are the unfrozen
        // ones, so one or two questions find a block.
        uint64_t full = full_map();
        for (size_t i = g_count; i > 0 && n < kScan; i--)
            if (g_chunks[i - 1].used != full && !g_chunks[i - 1].inherited) bases[n++] = g_chunks[i - 1].base;
    }
    // Asked outside the zone's lock: no large-path call is made under it.
    for (size_t i = 0; i < n; i++) {
        if (snapshot_frozen((void *)bases[i])) continue;
        std::lock_guard<std::mutex> guard(*g_lock);
        if (uintptr_t p = take_locked(bases[i])) return p;
    }
    return 0;
}

// A fork child's inherited chunks left empty (no block is taken there):
// they go when the child needs a new chunk.
void free_inherited_empty() {
    for (;;) {
        uintptr_t empty = 0;
        {
            std::lock_guard<std::mutex> guard(*g_lock);
            for (size_t i = 0; i < g_count && !empty; i++)
                if (g_chunks[i].inherited && g_chunks[i].used == 0) {
                    empty = g_chunks[i].base;
                    g_chunks[i] = g_chunks[--g_count];
                }
        }
        if (!empty) return;
        large_free((void *)empty);
    }
}

// The file range of the block at p, as a dup of its file's descriptor
// (the caller closes it) and an offset, when this process may change the
// file's bytes there: a chunk of its own (not one a fork child inherited,
// mapped private, nor a file another process maps through an export),
// mapped shared, that no fork snapshot holds (a child may still read the
// bytes of a block it had in use at its fork). -1 otherwise. Called while
// the block is marked in use, so its chunk cannot be freed, nor its file
// range reused, meanwhile.
int own_file_range(void *p, uint64_t *off) {
    std::lock_guard<std::mutex> guard(large_lock());
    const Region *r = arena::region_at(p);
    if (!r || r->backing != Backing::disk || !r->file || r->file->foreign || r->file->exported[0] ||
        r->is_private || r->freed.load() || r->snapshot_gen != 0)
        return -1;
    *off = r->file_off + ((uintptr_t)p - r->start);
    return move_high(fcntl(r->file->fd, F_DUPFD_CLOEXEC, 0));
}

// A block about to be handed out gets its file range written with zeros
// first (the block's bytes are undefined: any will do). Why: its chunk is
// mapped MADV_RANDOM (a small region: backing.cpp), so each first store
// into a page not cached is a fault that reads one 4 KiB page (zeros for
// an unwritten extent, the old bytes for an evicted one) and then asks the
// filesystem for that page alone (page_mkwrite). One write of the whole
// block makes its pages cached, dirty and in large folios, and the stores
// then map them: a 256 MiB fill of a fresh file under MADV_RANDOM took
// 5.6-6.1 us a page by faults, 0.7 us with a 1 MiB pwrite ahead of each
// MiB (tests/bench/fresh_fill.c). The pages are charged to
// the job as the stores would charge them, a block at a time.
void prefill_bytes(void *p, size_t len) {
    static const char zeros[64 << 10] = {};
    uint64_t off = 0;
    int fd = own_file_range(p, &off);
    if (fd < 0) return;
    iovec iov[16];
    for (iovec &v : iov) v = {const_cast<char *>(zeros), sizeof zeros};
    for (size_t done = 0; done < len;) {
        size_t want = len - done;
        int n = 0;
        for (; n < 16 && want; n++) {
            iov[n].iov_len = want < sizeof zeros ? want : sizeof zeros;
            want -= iov[n].iov_len;
        }
        ssize_t wrote = pwritev(fd, iov, n, (off_t)(off + done));
        if (wrote <= 0) break; // the stores will fault the pages in, as without it
        done += (size_t)wrote;
        for (iovec &v : iov) v.iov_len = sizeof zeros;
    }
    close(fd);
}

} // namespace

void *block_zone_take(size_t block) {
    if (block == 0 || block % 4096 || block > kChunkMax) return nullptr;
    {
        std::lock_guard<std::mutex> guard(*g_lock);
        if (g_block == 0) g_block = block;
        if (block != g_block) return nullptr;
    }
    if (uintptr_t p = take_unfrozen()) {
        prefill_bytes((void *)p, block);
        return (void *)p;
    }
    {
        std::lock_guard<std::mutex> guard(*g_lock);
        if (g_count == kChunkSlots) return nullptr;
    }
    free_inherited_empty();
    // No room: a new chunk, made outside the lock (the large path takes its
    // own locks, maps and reserves disk blocks). Never mimalloc's block in
    // its stead (large_allocate's fallback): a chunk must be a region.
    size_t chunk = block_zone_chunk_bytes(block);
    int saved = errno;
    bool use_small = false;
    void *base = large_alloc(chunk, 0, kFlagObjectBlocks | kFlagMayBeDirty, &use_small);
    errno = saved;
    if (!base) return nullptr;
    uintptr_t p;
    bool kept;
    {
        std::lock_guard<std::mutex> guard(*g_lock);
        kept = g_count < kChunkSlots; // other takers may have filled the table meanwhile
        if (kept) {
            g_chunks[g_count++] = Chunk{(uintptr_t)base, 0, false}; // whole: a freed chunk's slot keeps its bits
            stats_on_arena_chunk();
        }
        p = take_locked(kept ? (uintptr_t)base : 0); // the new chunk: no snapshot holds it
    }
    if (!kept) large_free(base);
    if (p) prefill_bytes((void *)p, block);
    return (void *)p;
}

namespace {

// The chunk holding a, or g_count. Zone lock held.
size_t chunk_index(uintptr_t a) {
    size_t chunk = block_zone_chunk_bytes(g_block);
    size_t i = 0;
    while (i < g_count && !(a >= g_chunks[i].base && a < g_chunks[i].base + chunk)) i++;
    return i;
}

[[noreturn]] void not_a_block(uintptr_t a) {
    SPW_LOG(error, "a Python object arena at %p was freed twice or is not one the shim handed "
                   "out; aborting: run the program without spillway under AddressSanitizer "
                   "or valgrind to find the bug", (void *)a);
    abort();
}

// The bit of the block at a in chunk c; aborts when a is no block handed out.
uint64_t used_bit(const Chunk &c, uintptr_t a) {
    size_t off = a - c.base;
    uint64_t bit = uint64_t(1) << (off / g_block);
    if (off % g_block || !(c.used & bit)) not_a_block(a);
    return bit;
}

// A freed block's bytes are garbage, but its dirty pages (CPython writes
// every object it frees: the pool's free list) would be written back all
// the same, and a store into the block once reused would read each evicted
// page back from disk first. FALLOC_FL_ZERO_RANGE (os/zero_range.h) drops
// them unwritten and makes the range unwritten extents, still reserved, so
// the next store maps a zero page without a read. Only where the
// filesystem keeps the blocks (ext4): elsewhere the range could become a
// hole, and a store into a hole on a full disk raises SIGBUS.
void forget_bytes(void *p, size_t len) {
    uint64_t off = 0;
    int fd = own_file_range(p, &off); // a filesystem call under the large lock: never (large.h)
    if (fd < 0) return;
    if (zero_range_keeps_reservation(fd)) zero_range(fd, off, len);
    close(fd);
}

} // namespace

bool block_zone_give(void *p, size_t block) {
    uintptr_t a = (uintptr_t)p;
    uintptr_t to_free = 0;
    {
        std::lock_guard<std::mutex> guard(*g_lock);
        if (g_block == 0 || block != g_block) return false;
        size_t i = chunk_index(a);
        if (i == g_count) return false;
        used_bit(g_chunks[i], a);
    }
    forget_bytes(p, block);
    {
        std::lock_guard<std::mutex> guard(*g_lock);
        size_t i = chunk_index(a); // the table may have moved meanwhile
        if (i == g_count) not_a_block(a); // its chunk went meanwhile: freed twice, concurrently
        Chunk &c = g_chunks[i];
        uint64_t bit = used_bit(c, a);
        c.used &= ~bit;
        g_in_use--;
        stats_on_arena(false);
        if (c.used == 0 && !c.inherited) {
            // Keep one empty chunk blocks can be taken in; free this one if
            // another is empty already. (An inherited one waits for
            // free_inherited_empty: freed here, a second free of its last
            // block would go unnoticed.)
            bool free_it = false;
            for (size_t j = 0; j < g_count && !free_it; j++)
                free_it = j != i && g_chunks[j].used == 0 && !g_chunks[j].inherited;
            if (free_it) {
                to_free = c.base;
                g_chunks[i] = g_chunks[--g_count];
            }
        }
    }
    if (to_free) {
        large_free((void *)to_free);
        return true;
    }
    // The block's pages leave the process's view: a disk chunk's dirty
    // pages forget_bytes could not drop are then cache the kernel may write
    // back and evict (the reservation stays), an anonymous chunk's are freed, and
    // a fork snapshot's private copies go (the file's bytes show through:
    // the block is free, what it reads as does not matter).
    madvise(p, block, MADV_DONTNEED);
    return true;
}

BlockZoneFigures block_zone_figures() {
    std::lock_guard<std::mutex> guard(*g_lock);
    BlockZoneFigures f;
    f.chunks = g_count;
    f.blocks_in_use = g_in_use;
    f.peak_blocks = g_peak;
    f.block_bytes = g_block;
    return f;
}

void block_zone_reset_for_tests() {
    for (;;) {
        uintptr_t empty = 0;
        {
            std::lock_guard<std::mutex> guard(*g_lock);
            for (size_t i = 0; i < g_count; i++)
                if (g_chunks[i].used == 0) {
                    empty = g_chunks[i].base;
                    g_chunks[i] = g_chunks[--g_count];
                    break;
                }
            if (!empty) {
                if (g_in_use == 0) g_block = 0;
                g_peak = g_in_use;
                return;
            }
        }
        large_free((void *)empty);
    }
}

// A fork child's view of every chunk is a private mapping of its parent's
// file (large_privatise_inherited): a block taken there would be written as
// copies, anonymous memory (and each page read from the file first). So the
// child takes its blocks in chunks of its own, page cache it can give back,
// as the parent does beside its snapshots (take_unfrozen); the inherited
// chunks' blocks are only given back, and an empty inherited chunk goes
// when the child next needs a new chunk (free_inherited_empty).
void block_zone_after_fork_child() {
    new (g_lock_bytes) std::mutex;
    for (size_t i = 0; i < g_count; i++) g_chunks[i].inherited = true;
}

} // namespace spillway
